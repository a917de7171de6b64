import { expect, test } from "@playwright/test";
import type { WidgetSession } from "../lib/widget/api-types";
import { freshOrderFor, HandoffPage, QueuePage, signedInAs } from "./fixtures/console";
import { pendingHandoffs, SHOP, Storefront } from "./fixtures/widget";

// Both users at once, as a new user would play them in two windows: Dana asks for the refund of a damaged $250
// backpack (the A-1002 case) through the widget embedded in the shop; Raj decides it in the console; Dana sees the
// outcome without asking. Each test gives Dana her own copy of that order: the demo's A-1002 is refunded by
// widget-approval, which may run at the same time, and a refund waiting on an order counts against what is still
// refundable on it.

let order: string;

async function danaAsksForTheRefund(page: import("@playwright/test").Page) {
  const shop = new Storefront(page);
  const started = page.waitForResponse(
    (r) => r.url().includes(`/api/widget/${SHOP}/conversation`) && r.request().method() === "POST" && r.ok(),
  );
  await shop.goto("dana");
  await shop.open();
  const session = (await (await started).json()) as WidgetSession;
  await shop.send(`Hi, I'm dana@example.com. My order ${order} arrived damaged, please refund it.`);
  await expect(shop.status).toContainText(`Your $250.00 refund for ${order} is with our team`, { timeout: 30_000 });
  await expect(shop.log).not.toContainText(/I've refunded|has been refunded/i);
  const [approval] = pendingHandoffs(session.view.conversationId).filter((h) => h.kind === "APPROVAL");
  expect(approval, "the widget's request is parked as an approval").toBeTruthy();
  return { shop, handoffId: approval!.id };
}

async function raj(browser: import("@playwright/test").Browser, baseURL: string, handoffId: string) {
  const reviewer = await signedInAs(browser, "raj", baseURL);
  const queue = new QueuePage(reviewer.page);
  await queue.goto();
  await queue.item(handoffId).click(); // found in the queue, as a reviewer would
  const handoff = new HandoffPage(reviewer.page);
  await expect(handoff.title).toContainText(`Refund $250.00 on ${order}`);
  await handoff.claimAndWait();
  return { ...reviewer, handoff };
}

test.beforeEach(async () => {
  order = await freshOrderFor("dana@example.com", 25_000);
});

test("approve: the customer's widget shows the refund once the reviewer approves it", async ({ page, browser, baseURL }) => {
  test.setTimeout(150_000);
  const { shop, handoffId } = await danaAsksForTheRefund(page);
  const reviewer = await raj(browser, baseURL!, handoffId);
  await reviewer.handoff.approve.click();
  await expect(reviewer.handoff.result).toContainText("refunded $250.00");
  await reviewer.close();

  const outcome = shop
    .messagesFrom("agent")
    .filter({ hasText: /approved/i })
    .last();
  await expect(outcome).toContainText("$250.00", { timeout: 30_000 });
  await expect(shop.status).not.toContainText("with our team");
});

test("deny: the customer is told the reviewer's reason, and nothing is refunded", async ({ page, browser, baseURL }) => {
  test.setTimeout(150_000);
  const { shop, handoffId } = await danaAsksForTheRefund(page);
  const reviewer = await raj(browser, baseURL!, handoffId);
  await reviewer.handoff.denyReason.fill("The damage is not covered for this item.");
  await reviewer.handoff.deny.click();
  await expect(reviewer.handoff.result).toContainText("Denied.");
  await reviewer.close();

  await expect(shop.messagesFrom("agent").last()).toContainText("The damage is not covered for this item.", { timeout: 30_000 });
  await expect(shop.log).not.toContainText(/I've refunded|has been refunded/i);
});

test("edit: the reviewer refunds $150 instead, and the customer is told what was actually done", async ({ page, browser, baseURL }) => {
  test.setTimeout(150_000);
  const { shop, handoffId } = await danaAsksForTheRefund(page);
  const reviewer = await raj(browser, baseURL!, handoffId);
  await reviewer.handoff.edit.click();
  await reviewer.handoff.editAmount.fill("150");
  await expect(reviewer.handoff.diff.locator('tr[data-change="changed"]')).toContainText("15000");
  await reviewer.handoff.approveWithEdits.click();
  await expect(reviewer.handoff.result).toContainText("refunded $150.00");
  await reviewer.close();

  const outcome = shop.messagesFrom("agent").last();
  await expect(outcome).toContainText("$150.00", { timeout: 30_000 });
  await expect(shop.status).not.toContainText("with our team");
});

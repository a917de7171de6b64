import path from "node:path";
import { expect, test } from "@playwright/test";
import type { WidgetSession } from "../lib/widget/api-types";
import { agentCli, pendingHandoffs, restoreRefundableOrder, SHOP, Storefront } from "./fixtures/widget";

const SCREENSHOTS = path.resolve("docs/screenshots");

test.beforeAll(async () => {
  await restoreRefundableOrder("A-1002");
});

// Dana, signed in by the shop, asks for a $250 refund: it waits honestly for a reviewer, and the decision
// reaches her chat by itself.
test("a signed-in customer sees the honest pending status, then the outcome without asking", async ({ page }) => {
  test.setTimeout(120_000);
  const shop = new Storefront(page);
  const started = page.waitForResponse(
    (r) => r.url().includes(`/api/widget/${SHOP}/conversation`) && r.request().method() === "POST" && r.ok(),
  );
  await shop.goto("dana");
  await expect(page.getByTestId("shop-signed-in")).toHaveText("Signed in as Dana Reyes");
  await shop.open();
  const session = (await (await started).json()) as WidgetSession;
  expect(session.customer?.name).toBe("Dana Reyes");
  expect(session.view.verified).toBe(true);
  await expect(shop.frame.getByTestId("widget-identity")).toHaveText("Signed in as Dana Reyes");

  await shop.send("Hi, I'm dana@example.com, order A-1002 arrived damaged, please refund it");

  // Honest: with our team, not done; and no "typing" while a person has it.
  await expect(shop.status).toContainText("Your $250.00 refund for A-1002 is with our team", { timeout: 30_000 });
  await expect(shop.frame.getByTestId("widget-typing")).toBeEmpty();
  await expect(shop.log).not.toContainText(/I've refunded|has been refunded/i);
  await page.screenshot({ path: path.join(SCREENSHOTS, "widget-pending.png") });

  const [approval] = pendingHandoffs(session.view.conversationId).filter((h) => h.kind === "APPROVAL");
  expect(approval, "an approval handoff for this conversation").toBeTruthy();
  const customerMessagesBefore = await shop.messagesFrom("customer").count();

  const decided = agentCli<{ outcome: string }>("decide", approval!.id, "--as", "raj@acme.test", "--decision", "approve");
  expect(decided.outcome).not.toBe("awaiting_second_approval");

  // The outcome appears by itself: nothing was sent.
  const outcome = shop
    .messagesFrom("agent")
    .filter({ hasText: /approved/i })
    .last();
  await expect(outcome).toBeVisible({ timeout: 30_000 });
  await expect(outcome).toContainText("$250.00");
  await expect(shop.status).not.toContainText("with our team");
  await expect(shop.messagesFrom("customer")).toHaveCount(customerMessagesBefore);
});

import { expect, test } from "@playwright/test";
import type { WidgetSession } from "../lib/widget/api-types";
import { pendingHandoffs, SHOP, Storefront, takeOverAndReply } from "./fixtures/widget";

async function openAnonymous(shop: Storefront): Promise<WidgetSession> {
  const started = shop.page.waitForResponse(
    (r) => r.url().includes(`/api/widget/${SHOP}/conversation`) && r.request().method() === "POST" && r.ok(),
  );
  await shop.goto();
  await shop.open();
  return (await (await started).json()) as WidgetSession;
}

test("“Talk to a person” escalates at once", async ({ page }) => {
  const shop = new Storefront(page);
  const { view } = await openAnonymous(shop);
  await shop.frame.getByRole("button", { name: "Talk to a person" }).click();
  await expect(shop.status).toContainText("has been asked to join");
  await expect(shop.talkToPerson).toHaveText("Person requested");
  await expect(shop.messagesFrom("system").last()).toContainText("asked a person from our team to join");
  const escalations = pendingHandoffs(view.conversationId).filter((h) => h.kind === "ESCALATION");
  expect(escalations).toHaveLength(1);
  // The customer can keep writing while they wait.
  await shop.send("My order number is A-1001.");
});

test("a person who takes over answers under their own name, live, and the agent stays quiet", async ({ page }) => {
  const shop = new Storefront(page);
  const { view } = await openAnonymous(shop);
  await shop.frame.getByRole("button", { name: "Talk to a person" }).click();
  await expect(shop.status).toContainText("has been asked to join");

  await takeOverAndReply(view.conversationId, "raj@acme.test", "Hi, I'm Raj from the Acme team. How can I help?");
  // Nothing sent by the customer: the takeover and the reply arrive by themselves.
  await expect(shop.status).toContainText("You're chatting with Raj from Acme Outfitters");
  const reply = shop.messagesFrom("person").last();
  await expect(reply).toContainText("Hi, I'm Raj from the Acme team");
  await expect(reply).toContainText("Raj");
  await expect(reply).toContainText("support team");
  await expect(shop.talkToPerson).toHaveText("With a person");

  // The customer answers the person; the agent must not reply any more.
  const agentRepliesBefore = await shop.messagesFrom("agent").count();
  await shop.send("where is my order A-1001?");
  await page.waitForTimeout(2500);
  await expect(shop.messagesFrom("agent")).toHaveCount(agentRepliesBefore);
  await expect(shop.frame.getByTestId("widget-typing")).toBeEmpty();
});

test("a reply that arrives while the chat is closed shows on the launcher", async ({ page }) => {
  const shop = new Storefront(page);
  const { view } = await openAnonymous(shop);
  await shop.frame.getByRole("button", { name: "Talk to a person" }).click();
  await expect(shop.status).toContainText("has been asked to join");
  await shop.frame.getByRole("button", { name: "Close chat" }).click();
  await expect(shop.launcher).toHaveAccessibleName("Open support chat");

  await takeOverAndReply(view.conversationId, "raj@acme.test", "Raj here — I've got your conversation.");
  // The takeover notice and Raj's reply: two new replies, announced on the launcher.
  await expect(shop.launcher).toHaveAccessibleName(/Open support chat \(\d+ new repl(y|ies)\)/);
  await shop.launcher.click();
  await expect(shop.messagesFrom("person").last()).toContainText("Raj here");
  await expect(shop.launcher).toHaveAccessibleName("Close support chat");
});

import { expect, test } from "@playwright/test";
import { Storefront } from "./fixtures/widget";

// An anonymous shopper on the demo storefront: the chat answers, and survives a reload.
test("an anonymous visitor gets an answer and keeps the conversation across a reload", async ({ page }) => {
  const shop = new Storefront(page);
  await shop.goto();
  await expect(shop.page.getByTestId("shop-signed-in")).toHaveText("Not signed in");
  await shop.open();
  await expect(shop.frame.getByTestId("widget-identity")).toHaveText("Support chat");

  // Send is disabled until there is something to send.
  await expect(shop.sendButton).toBeDisabled();
  await shop.send("where is my order");
  const reply = shop.messagesFrom("agent").first();
  await expect(reply).toBeVisible({ timeout: 20_000 });
  await expect(reply).not.toBeEmpty();
  const replyText = (await reply.locator("p").innerText()).trim();
  expect(replyText.length).toBeGreaterThan(10);
  await expect(shop.frame.getByTestId("widget-typing")).toBeEmpty();

  if (!process.env.ANTHROPIC_API_KEY) await expect(shop.frame.getByTestId("widget-footer")).toContainText("offline model");

  await page.reload();
  await shop.open();
  await expect(shop.messagesFrom("customer").first()).toHaveText(/where is my order/);
  await expect(shop.messagesFrom("agent").first().locator("p")).toHaveText(replyText);
  // Still the same conversation: the follow-up goes on in the same thread.
  await shop.send("thanks!");
  await expect(shop.messagesFrom("customer")).toHaveCount(2);
});

test("Shift+Enter adds a line; Enter sends", async ({ page }) => {
  const shop = new Storefront(page);
  await shop.goto();
  await shop.open();
  await shop.input.fill("first line");
  await shop.input.press("Shift+Enter");
  await shop.input.pressSequentially("second line");
  await expect(shop.input).toHaveValue("first line\nsecond line");
  await shop.input.press("Enter");
  await expect(shop.input).toHaveValue("");
  await expect(shop.messagesFrom("customer").first()).toHaveText(/first line\s+second line/);
});

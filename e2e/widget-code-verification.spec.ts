import { expect, test } from "@playwright/test";
import type { WidgetSession } from "../lib/widget/api-types";
import { MailboxPage, signedInAs } from "./fixtures/console";
import { SHOP, Storefront } from "./fixtures/widget";

// An anonymous visitor proves who they are with a one-time code instead of guessable details: the code goes to
// the account's email — here the console's demo mailbox, where a staff member of the shop reads it — and the
// visitor types it into the chat.

async function conversationRow(conversationId: string) {
  const { getPrisma, disconnectPrisma } = await import("../lib/db/client");
  const db = await getPrisma();
  try {
    return await db.conversation.findUniqueOrThrow({
      where: { id: conversationId },
      select: { verifiedCustomerId: true, verificationLevel: true, clientIp: true },
    });
  } finally {
    await disconnectPrisma();
  }
}

test("a visitor asks for a code, staff read it in the demo mailbox, the visitor types it and gets their order status", async ({
  page,
  browser,
  baseURL,
}) => {
  test.setTimeout(150_000);
  const shop = new Storefront(page);
  const started = page.waitForResponse(
    (r) => r.url().includes(`/api/widget/${SHOP}/conversation`) && r.request().method() === "POST" && r.ok(),
  );
  await shop.goto();
  await expect(page.getByTestId("shop-signed-in")).toHaveText("Not signed in");
  await shop.open();
  const session = (await (await started).json()) as WidgetSession;

  // A name and an order number are not enough: the agent asks for the account email.
  await shop.send("Hi, this is Dana Reyes. Where is my order A-1001?");
  await expect(shop.messagesFrom("agent").last()).toContainText("email address you used for order A-1001");
  await expect(shop.log).not.toContainText("1Z9A7E3W03");

  await shop.send("It's dana@example.com, but could you send me a code instead?");
  await expect(shop.messagesFrom("agent").last()).toContainText("a 6-digit code is on its way");

  // The shop's staff member opens the demo mailbox from the console header and reads the code.
  const staff = await signedInAs(browser, "rita", baseURL!);
  const mailbox = new MailboxPage(staff.page);
  await mailbox.openFromHeader();
  await expect(mailbox.mailsTo("dana@example.com").first().getByTestId("demo-mail-subject")).toHaveText(
    "Your Acme Outfitters verification code",
  );
  const code = await mailbox.latestCodeFor("dana@example.com");
  await staff.close();

  // Another shop's staff see nothing of it.
  const gus = await signedInAs(browser, "gus", baseURL!);
  const theirs = new MailboxPage(gus.page);
  await theirs.goto();
  await expect(gus.page.getByTestId("signed-in-shop")).toHaveText("Globex Corp");
  await expect(theirs.mailsTo("dana@example.com")).toHaveCount(0);
  await gus.close();

  // The visitor types the code and gets the order status, with tracking; the address stays masked.
  await shop.send(`my code is ${code}`);
  const answer = shop.messagesFrom("agent").filter({ hasText: "A-1001 was delivered" }).last();
  await expect(answer).toContainText("UPS tracking 1Z9A7E3W0300001001", { timeout: 30_000 });
  await expect(shop.log).not.toContainText(/Alder|97204/);

  const row = await conversationRow(session.view.conversationId);
  expect(row.verificationLevel).toBe("email_code");
  expect(row.verifiedCustomerId).not.toBeNull();
  expect(row.clientIp, "the widget route records the visitor's address for the per-IP limit").toMatch(/^(127\.0\.0\.1|0:0:0:0::\/64)$/);
});

test("the demo mailbox is for signed-in staff only", async ({ page }) => {
  await page.goto("/console/mailbox");
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fconsole%2Fmailbox/);
});

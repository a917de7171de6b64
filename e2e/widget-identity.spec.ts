import { expect, test } from "@playwright/test";
import { apiStart, GLOBEX_SECRET, identityFor, rawIdentity, Storefront } from "./fixtures/widget";

const now = () => Math.floor(Date.now() / 1000);

test("a valid shop-signed identity starts a verified conversation", async ({ request }) => {
  const res = await apiStart(request, await identityFor("dana@example.com", 600));
  expect(res.status()).toBe(200);
  const session = await res.json();
  expect(session.customer).toEqual({ name: "Dana Reyes" });
  expect(session.view.verified).toBe(true);
});

test("expired, wrongly signed, too long-lived or foreign identities are refused", async ({ request }) => {
  const cases: Array<[string, string]> = [
    ["expired", await rawIdentity({ sub: "dana@example.com", iat: now() - 7200, exp: now() - 3600, aud: "shop:acme" })],
    ["wrong signature", await identityFor("dana@example.com", 600, { secret: "not-the-acme-secret" })],
    ["another shop's secret", await identityFor("dana@example.com", 600, { secret: GLOBEX_SECRET, shop: "globex" })],
    ["for another shop", await identityFor("dana@example.com", 600, { shop: "globex" })],
    ["no exp", await rawIdentity({ sub: "dana@example.com", iat: now() })],
    ["lifetime over an hour", await rawIdentity({ sub: "dana@example.com", iat: now(), exp: now() + 2 * 3600 })],
    ["unknown customer", await identityFor("nobody@example.com", 600)],
    ["not a JWT", "hello"],
    [
      "alg none",
      `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${Buffer.from(JSON.stringify({ sub: "dana@example.com", iat: now(), exp: now() + 60 })).toString("base64url")}.`,
    ],
  ];
  for (const [name, token] of cases) {
    const res = await apiStart(request, token);
    expect(res.status(), name).toBe(401);
    const body = await res.json();
    expect(body.code, name).toBe("UNAUTHENTICATED");
    expect(body.message, name).toMatch(/couldn't confirm your sign-in/);
  }
});

test("a refused identity in the page falls back to an anonymous chat and says so", async ({ page }) => {
  const shop = new Storefront(page);
  await shop.goto();
  await shop.open();
  const expired = await rawIdentity({ sub: "dana@example.com", iat: now() - 7200, exp: now() - 3600 });
  await page.evaluate((t) => (window as unknown as { SupportWidget: { identify(t: string): void } }).SupportWidget.identify(t), expired);
  await expect(shop.frame.getByTestId("widget-notice")).toContainText("couldn't confirm your sign-in");
  await expect(shop.frame.getByTestId("widget-identity")).toHaveText("Support chat");
  await expect(shop.input).toBeEditable();
});

test("switching identity starts a fresh conversation for that identity", async ({ page }) => {
  const shop = new Storefront(page);
  await shop.goto("dana");
  await shop.open();
  await expect(shop.frame.getByTestId("widget-identity")).toHaveText("Signed in as Dana Reyes");
  await shop.send("where is A-1001?");
  await expect(shop.messagesFrom("agent").first()).toBeVisible({ timeout: 20_000 });

  // The shop signs Sam in (a full page load, as on a real site): Sam must not see Dana's chat.
  await page.getByRole("link", { name: "Sam Okafor" }).click();
  await expect(page.getByTestId("shop-signed-in")).toHaveText("Signed in as Sam Okafor");
  await shop.open();
  await expect(shop.frame.getByTestId("widget-identity")).toHaveText("Signed in as Sam Okafor");
  await expect(shop.messagesFrom("customer")).toHaveCount(0);
  await expect(shop.log).not.toContainText("A-1001");

  // Signing out (identify(null) / reset) leaves an anonymous, empty chat too.
  await page.evaluate(() => (window as unknown as { SupportWidget: { reset(): void } }).SupportWidget.reset());
  await expect(shop.frame.getByTestId("widget-identity")).toHaveText("Support chat");
  await expect(shop.messagesFrom("customer")).toHaveCount(0);
});

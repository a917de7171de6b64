import { expect, test, type Page } from "@playwright/test";
import { FRAME_TITLE, identityFor, setAllowedOrigins, SHOP } from "./fixtures/widget";

// A real shop lives on its own origin and loads embed.js from ours. Playwright serves a stand-in shop page on
// the other loopback name (localhost ↔ 127.0.0.1: a different origin), so the bridge runs truly cross-origin.
// Chromium's Local Network Access rules treat the stand-in page as public and ask before it loads a script
// from a loopback address; the visitor's "allow" is granted up front.
function shopOriginFor(appOrigin: string): string {
  const url = new URL(appOrigin);
  url.hostname = url.hostname === "localhost" ? "127.0.0.1" : "localhost";
  return url.origin;
}

async function openShopPage(page: Page, appOrigin: string, identity?: string) {
  const SHOP_ORIGIN = shopOriginFor(appOrigin);
  await page.context().grantPermissions(["local-network-access"]);
  const tag = `<script src="${appOrigin}/embed.js" data-shop="${SHOP}"${identity ? ` data-customer-token="${identity}"` : ""} async></script>`;
  await page.route(`${SHOP_ORIGIN}/demo-shop-on-its-own-domain`, (route) =>
    route.fulfill({
      contentType: "text/html",
      body: `<!doctype html><html><head><title>Shop</title></head><body><h1>A shop on its own domain</h1>${tag}</body></html>`,
    }),
  );
  await page.goto(`${SHOP_ORIGIN}/demo-shop-on-its-own-domain`);
  await page.getByRole("button", { name: /support chat/i }).click();
  return page.frameLocator(`iframe[title="${FRAME_TITLE}"]`);
}

test.describe("embedded on another origin", () => {
  let previous: string[] = [];
  test.beforeAll(async () => {
    previous = await setAllowedOrigins([]);
  });
  test.afterAll(async () => {
    await setAllowedOrigins(previous);
  });

  test("an origin the shop has not allowed gets no chat", async ({ page, baseURL }) => {
    await setAllowedOrigins([]);
    const frame = await openShopPage(page, new URL(baseURL!).origin);
    await expect(frame.getByRole("alert").filter({ hasText: "can't be shown on this website" })).toBeVisible();
    await expect(frame.getByRole("textbox")).toHaveCount(0);
  });

  test("an allowed origin gets a working chat, signed in over the cross-origin bridge", async ({ page, baseURL }) => {
    await setAllowedOrigins([shopOriginFor(new URL(baseURL!).origin)]);
    const frame = await openShopPage(page, new URL(baseURL!).origin, await identityFor("sam@example.com"));
    await expect(frame.getByTestId("widget-identity")).toHaveText("Signed in as Sam Okafor");
    const input = frame.getByRole("textbox", { name: "Your message" });
    await input.fill("where is A-2001?");
    await input.press("Enter");
    await expect(frame.locator('[data-from="agent"]').first()).toContainText("A-2001", { timeout: 20_000 });
    // The iframe's close request crosses back to the shop's page.
    await frame.getByRole("button", { name: "Close chat" }).click();
    await expect(page.locator(`iframe[title="${FRAME_TITLE}"]`)).toBeHidden();
  });
});

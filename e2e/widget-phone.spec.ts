import path from "node:path";
import { expect, test } from "@playwright/test";
import { Storefront } from "./fixtures/widget";

test.describe("at phone width", () => {
  test.use({ viewport: { width: 360, height: 640 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });

  test("the widget is full-screen and usable at 360×640", async ({ page }) => {
    const shop = new Storefront(page);
    await shop.goto();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await shop.launcher.tap();
    await expect(shop.input).toBeEditable();
    const box = await shop.iframe.boundingBox();
    expect(box).toEqual({ x: 0, y: 0, width: 360, height: 640 });
    await expect(shop.input).toBeInViewport();
    await expect(shop.talkToPerson).toBeInViewport();
    await expect(shop.frame.getByRole("button", { name: "Close chat" })).toBeInViewport();

    await shop.send("where is my order");
    await expect(shop.messagesFrom("agent").first()).toBeVisible({ timeout: 20_000 });
    await shop.input.fill("It was a gift, so I'd like to know today if possible.");
    const frame = page.frame({ url: /\/widget\?/ })!;
    expect(await frame.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.screenshot({ path: path.resolve("docs/screenshots/widget-phone.png") });

    // The close button hands the page back.
    await shop.frame.getByRole("button", { name: "Close chat" }).tap();
    await expect(shop.iframe).toBeHidden();
    await expect(shop.launcher).toBeInViewport();
  });
});

test("keyboard: open, type, send, and Escape closes back to the launcher", async ({ page }) => {
  const shop = new Storefront(page);
  await shop.goto();
  await shop.launcher.focus();
  await page.keyboard.press("Enter");
  await expect(shop.input).toBeFocused();
  await page.keyboard.type("where is my order");
  await page.keyboard.press("Enter");
  await expect(shop.messagesFrom("customer").first()).toHaveText(/where is my order/);
  await page.keyboard.press("Escape");
  await expect(shop.iframe).toBeHidden();
  await expect(shop.launcher).toBeFocused();
});

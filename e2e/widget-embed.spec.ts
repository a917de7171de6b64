import { expect, test } from "@playwright/test";
import { FRAME_TITLE, SHOP } from "./fixtures/widget";

// The page around the embed owns its DOM. A framework may drop the widget's root (React discards nodes it did not
// render when hydration starts over — on a reload the cached embed.js can run that early), and a shop may load the
// script before <body> exists. The chat bubble must survive both.

test("the widget comes back when the page drops its root, and still works", async ({ page }) => {
  await page.goto(`/shop/${SHOP}`);
  const launcher = page.getByRole("button", { name: /support chat/i });
  await expect(launcher).toBeVisible();
  // What React's hydration recovery does to a node it did not render; then what replacing the body's content does.
  await page.evaluate(() => document.querySelector(".sw-root")!.remove());
  await expect(launcher).toBeVisible();
  await page.evaluate(() =>
    document.body.replaceChildren(...Array.from(document.body.children).filter((c) => !c.classList.contains("sw-root"))),
  );
  await expect(launcher).toBeVisible();
  expect(await page.locator(".sw-root").count()).toBe(1);
  await launcher.click();
  const frame = page.frameLocator(`iframe[title="${FRAME_TITLE}"]`);
  await expect(frame.getByRole("textbox", { name: "Your message" })).toBeEditable();
});

test("a script in <head>, run before <body> exists, puts the widget in <body>", async ({ page, baseURL }) => {
  const url = `${baseURL}/a-shop-that-loads-the-embed-in-its-head`;
  await page.route(url, (route) =>
    route.fulfill({
      contentType: "text/html",
      body: `<!doctype html><html><head><title>Shop</title><script src="/embed.js" data-shop="${SHOP}"></script></head><body><h1>A shop</h1></body></html>`,
    }),
  );
  await page.goto(url);
  await expect(page.getByRole("heading", { name: "A shop" })).toBeVisible();
  await expect(page.getByRole("button", { name: /support chat/i })).toBeVisible();
  expect(await page.evaluate(() => document.querySelector(".sw-root")?.parentElement?.tagName)).toBe("BODY");
});

import { expect, test } from "@playwright/test";
import { FRAME_TITLE, identityFor, SHOP, Storefront } from "./fixtures/widget";

// The postMessage bridge checks origins both ways, and the identity token never travels in a URL.

test("a page that is not the allowed parent cannot frame the widget or hand it an identity", async ({ page, baseURL }) => {
  const shopOrigin = new URL(baseURL!).origin;
  const dana = await identityFor("dana@example.com");
  const starts: Array<Record<string, unknown>> = [];
  page.on("request", (r) => {
    if (r.url().includes(`/api/widget/${SHOP}/conversation`) && r.method() === "POST")
      starts.push(r.postDataJSON() as Record<string, unknown>);
  });
  // A foreign page (opaque origin) frames the widget and claims to be the shop.
  await page.setContent(
    `<!doctype html><title>not the shop</title><iframe title="${FRAME_TITLE}" style="width:380px;height:600px"></iframe>`,
  );
  await page.evaluate(
    ({ src }) => {
      const w = window as unknown as { received: unknown[] };
      w.received = [];
      window.addEventListener("message", (e) => w.received.push(e.data));
      document.querySelector("iframe")!.src = src;
    },
    { src: `${shopOrigin}/widget?shop=${SHOP}&parent=${encodeURIComponent(shopOrigin)}` },
  );
  // It tries, repeatedly, to hand the widget a signed-in identity.
  await page.evaluate((identity) => {
    const frame = document.querySelector("iframe")!;
    const timer = setInterval(
      () => frame.contentWindow?.postMessage({ source: "support-widget", type: "init", identity, open: true, focus: true }, "*"),
      100,
    );
    setTimeout(() => clearInterval(timer), 5000);
  }, dana);

  const frame = page.frameLocator(`iframe[title="${FRAME_TITLE}"]`);
  // The browser refuses to render the widget here at all (frame-ancestors names the real parent), so no chat
  // starts, no identity is taken, and nothing is ever posted to the foreign page. (The iframe's own origin
  // checks, the layer below, are unit-tested in lib/widget/origins.test.ts.)
  await page.waitForTimeout(3000);
  await expect(frame.getByRole("textbox", { name: "Your message" })).toHaveCount(0);
  expect(starts).toEqual([]);
  expect(await page.evaluate(() => (window as unknown as { received: unknown[] }).received)).toEqual([]);
});

test("the embed ignores messages that do not come from its own iframe", async ({ page }) => {
  const shop = new Storefront(page);
  await shop.goto();
  await shop.open();
  // A close request from the page itself (right origin, wrong source) and from a foreign frame (wrong origin).
  await page.evaluate(() => {
    window.postMessage({ source: "support-widget", type: "close" }, "*");
    window.postMessage({ source: "support-widget", type: "unread", count: 5 }, "*");
    const foreign = document.createElement("iframe");
    foreign.src = "data:text/html,<script>parent.postMessage({source:'support-widget',type:'close'},'*')</script>";
    document.body.appendChild(foreign);
  });
  await page.waitForTimeout(1000);
  await expect(shop.iframe).toBeVisible();
  await expect(shop.launcher).toHaveAttribute("aria-expanded", "true");
  await expect(shop.launcher).toHaveAccessibleName("Close support chat");

  // Control: the real iframe's close request is honoured.
  await shop.frame.getByRole("button", { name: "Close chat" }).click();
  await expect(shop.iframe).toBeHidden();
  await expect(shop.launcher).toHaveAttribute("aria-expanded", "false");
});

test("a parent origin the shop does not allow gets no widget", async ({ page }) => {
  await page.goto(`/widget?shop=${SHOP}&parent=${encodeURIComponent("https://evil.example")}`);
  await expect(page.getByRole("alert").filter({ hasText: "can't be shown on this website" })).toBeVisible();
  await expect(page.getByRole("textbox")).toHaveCount(0);
});

test("the widget refuses to run framed without a parent origin", async ({ page, baseURL }) => {
  await page.setContent(
    `<iframe title="${FRAME_TITLE}" src="${new URL(`/widget?shop=${SHOP}`, baseURL).href}" style="width:380px;height:600px"></iframe>`,
  );
  const frame = page.frameLocator(`iframe[title="${FRAME_TITLE}"]`);
  // Blocked twice over: the browser (frame-ancestors 'self') and the page itself (no parent to talk to).
  await page.waitForTimeout(2000);
  await expect(frame.getByRole("textbox")).toHaveCount(0);
});

test("the identity token is handed over by postMessage, never in a URL", async ({ page }) => {
  const urls: string[] = [];
  page.on("request", (r) => urls.push(r.url()));
  const shop = new Storefront(page);
  await shop.goto("dana");
  const token = await page.locator("script[data-shop]").getAttribute("data-customer-token");
  expect(token).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/);
  await shop.open();
  await expect(shop.frame.getByTestId("widget-identity")).toHaveText("Signed in as Dana Reyes");
  const src = await shop.iframe.getAttribute("src");
  expect(src).toContain(`shop=${SHOP}`);
  expect(src).toContain("parent=");
  expect(src).not.toContain(token!);
  expect(urls.filter((u) => u.includes(token!) || u.includes("identity"))).toEqual([]);
});

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, type Page, test } from "@playwright/test";
import { Storefront } from "./fixtures/widget";

// Replies stream into the widget as the model writes them — and a reply claiming an action that did not happen never
// reaches the screen, not even for a moment. Everything the conversation ever displayed is recorded in the page by a
// MutationObserver, so a draft that flashed by would be caught.

/** Records every text the widget's conversation displays, from now on, in the frame's window. */
async function recordEverythingShown(page: Page) {
  const frame = page.frames().find((f) => f.url().includes("/widget"));
  if (!frame) throw new Error("the widget frame is not there");
  await frame.evaluate(() => {
    const w = window as unknown as { __shown: string[]; __drafts: string[] };
    w.__shown = [];
    w.__drafts = [];
    const log = document.querySelector('[data-testid="widget-messages"]')!;
    new MutationObserver(() => {
      w.__shown.push((log as HTMLElement).innerText);
      const draft = log.querySelector('[data-draft="true"]');
      if (draft) w.__drafts.push((draft as HTMLElement).innerText);
    }).observe(log, { subtree: true, childList: true, characterData: true });
  });
  return {
    shown: () => frame.evaluate(() => (window as unknown as { __shown: string[] }).__shown),
    drafts: () => frame.evaluate(() => (window as unknown as { __drafts: string[] }).__drafts),
  };
}

test("the reply appears as it is written, then stays as the stored message", async ({ page }) => {
  test.setTimeout(120_000);
  const shop = new Storefront(page);
  // An anonymous visitor's question gets a reply of several sentences (the agent must verify them first): every
  // sentence but the last is released as it is written; the last arrives with the stored reply.
  // The session's answer carries the view and the live stream every change, the stored reply included: the widget
  // reads the conversation for nothing else (its 30-second safety poll aside, which an exchange this short does not
  // reach).
  const viewReads: string[] = [];
  page.on("request", (r) => {
    if (r.method() === "GET" && new URL(r.url()).pathname === "/api/widget/acme/conversation") viewReads.push(r.url());
  });
  await shop.goto();
  await shop.open();
  const seen = await recordEverythingShown(page);
  await shop.send("where is my order");
  const reply = shop.messagesFrom("agent").filter({ hasText: "verify" }).last();
  await expect(reply).toBeVisible({ timeout: 30_000 });
  await expect(shop.log.locator('[data-draft="true"]')).toHaveCount(0);
  await page.waitForTimeout(1000); // a read the draft's end would have asked for has been sent by now
  expect(viewReads, "views read besides the stream's").toEqual([]);
  const drafts = await seen.drafts();
  expect(drafts.length, "the reply was seen being written").toBeGreaterThan(0);
  // Each draft is a beginning of the reply the customer keeps.
  const final = (await reply.innerText()).replace(/^Assistant:?\s*/i, "");
  for (const d of drafts)
    expect(final.replace(/\s+/g, " ")).toContain(
      d
        .replace(/^Assistant \(writing\):?\s*/i, "")
        .replace(/\s+/g, " ")
        .slice(0, 40),
    );
});

test.describe("a model that claims a refund it did not make", () => {
  // A server of its own, with the offline model scripted to write the false claim first.
  const port = Number(process.env.E2E_PORT ?? 3100) + 37;
  const origin = `http://localhost:${port}`;
  let server: ChildProcess | undefined;

  test.beforeAll(async () => {
    test.setTimeout(240_000);
    const dir = mkdtempSync(path.join(tmpdir(), "stream-script-"));
    const script = path.join(dir, "script.json");
    const reply = (text: string) => ({ reply: { content: [{ type: "text", text }], stop_reason: "end_turn" } });
    writeFileSync(
      script,
      JSON.stringify([
        reply("Let me check that for you. I've refunded $460.00 on A-1004, it will be back on your card in 3 days. Anything else?"),
        reply("Thanks for waiting. Nothing has been refunded yet: a refund of that size needs a person's approval first."),
      ]),
    );
    server = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", "--reset-db"], {
      env: {
        ...process.env,
        PORT: String(port),
        SUPPORT_DB_NAME: "support_e2e_streaming",
        SUPPORT_OFFLINE_SCRIPT: script,
        SUPPORT_OFFLINE_STREAM_PACE_MS: "40",
        NEXTAUTH_URL: origin,
      },
      stdio: "ignore",
    });
    const deadline = Date.now() + 200_000;
    for (;;) {
      const ok = await fetch(`${origin}/api/health`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error("the scripted server did not start");
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  test.afterAll(async () => {
    server?.kill("SIGTERM");
  });

  test("the false 'I've refunded' never reaches the screen, even for a moment; the honest reply does", async ({ page }) => {
    test.setTimeout(120_000);
    const shop = new Storefront(page);
    await page.goto(`${origin}/shop/acme?as=dana`);
    await shop.open();
    const seen = await recordEverythingShown(page);
    await shop.send("Please refund my tent order A-1004 in full.");
    await expect(shop.messagesFrom("agent").filter({ hasText: "Nothing has been refunded yet" })).toBeVisible({ timeout: 60_000 });
    const everything = (await seen.shown()).join("\n");
    expect(everything).not.toMatch(/I've refunded|back on your card/);
    // It did stream: the safe first sentence was shown while the model was still writing.
    expect(await seen.drafts()).toContainEqual(expect.stringContaining("Let me check that for you."));
  });
});

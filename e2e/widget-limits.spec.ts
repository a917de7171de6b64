import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { expect, test } from "@playwright/test";
import pg from "pg";
import { Storefront } from "./fixtures/widget";

// A visitor who sends faster than the shop allows sees a polite notice in the widget, keeps what they typed, and
// nothing is lost: every message accepted before the limit is answered. A server of its own (port E2E_PORT+41, its own
// database) whose shop allows 3 messages per minute per conversation.
const port = Number(process.env.E2E_PORT ?? 3100) + 41;
const origin = `http://localhost:${port}`;
const DB_NAME = "support_e2e_widget_limits";
let server: ChildProcess | undefined;

/** Publishes a new policy version for acme with lower widget limits (as an admin would in Settings → Policy). */
async function lowerLimits(limits: Record<string, number>) {
  const out = execFileSync(process.execPath, ["--import", "tsx", "test/fixtures/print-database-url.ts"], {
    env: { ...process.env, SUPPORT_DB_NAME: DB_NAME },
    encoding: "utf8",
  });
  const { url } = JSON.parse(out.slice(out.indexOf("{")));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT t.id, t."policyVersion" AS version, pv.rules FROM "Tenant" t JOIN "PolicyVersion" pv ON pv."tenantId" = t.id AND pv.version = t."policyVersion" WHERE t.slug = 'acme'`,
    );
    const { id, version, rules } = rows[0];
    const next = { ...rules, limits: { ...rules.limits, ...limits } };
    await client.query(`INSERT INTO "PolicyVersion" ("id", "tenantId", "version", "rules") VALUES (gen_random_uuid()::text, $1, $2, $3)`, [
      id,
      version + 1,
      JSON.stringify(next),
    ]);
    await client.query(`UPDATE "Tenant" SET "policyVersion" = $2 WHERE id = $1`, [id, version + 1]);
  } finally {
    await client.end();
  }
}

test.beforeAll(async () => {
  test.setTimeout(300_000);
  server = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", "--reset-db"], {
    env: { ...process.env, PORT: String(port), SUPPORT_DB_NAME: DB_NAME, NEXTAUTH_URL: origin },
    stdio: "ignore",
  });
  const deadline = Date.now() + 240_000;
  for (;;) {
    const ok = await fetch(`${origin}/api/health`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error("the server with low limits did not start");
    await new Promise((r) => setTimeout(r, 500));
  }
  await lowerLimits({ messagesPerMinutePerConversation: 3 });
});

test.afterAll(async () => {
  server?.kill("SIGTERM");
});

test("sending too fast shows the polite limit notice; what was typed is kept and every accepted message is answered", async ({ page }) => {
  test.setTimeout(120_000);
  const shop = new Storefront(page);
  await page.goto(`${origin}/shop/acme?as=dana`);
  await shop.open();
  const sent = ["Where is my order A-1001?", "Also, what about A-1002?", "And can you check A-1003 too?"];
  for (const text of sent) await shop.send(text);

  // The fourth in the same minute is refused: a calm notice, not an error, and the text stays in the box.
  const fourth = "One more thing about A-1004";
  await shop.input.fill(fourth);
  await expect(shop.sendButton).toBeEnabled(); // the third has been taken: this Enter is a real attempt
  await shop.input.press("Enter");
  const notice = shop.frame.getByTestId("widget-error").locator('[data-limited="true"]');
  await expect(notice).toContainText("You're sending messages faster than we can answer them");
  await expect(notice).toContainText("everything you sent before this has been received");
  await expect(shop.input).toHaveValue(fourth);

  // Nothing lost: the three accepted messages are in the conversation, and the agent answers after the last of them.
  for (const text of sent) await expect(shop.messagesFrom("customer").filter({ hasText: text })).toHaveCount(1);
  await expect(shop.messagesFrom("customer").filter({ hasText: fourth })).toHaveCount(0);
  await expect(shop.log.locator("[data-from]").last()).toHaveAttribute("data-from", "agent", { timeout: 60_000 });
  expect(await shop.messagesFrom("agent").count()).toBeGreaterThan(0);
});

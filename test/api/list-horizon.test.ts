// The JSON API's lists page by (createdAt, id), and a row's createdAt is its transaction's start: a transaction
// still open may commit a row dated before rows already committed. A list shows only rows no open transaction can
// date before (lib/api/cursor `committedRows`), so following nextCursor never skips one.
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { API_SCOPES } from "@/lib/api/scopes";
import { issueApiToken } from "@/lib/api/tokens";
import { say } from "@/lib/operator/commands";
import { createHarness, type Harness } from "../runtime-harness";
import { harnessApiClient } from "./api-client";

let h: Harness;
let call: ReturnType<typeof harnessApiClient>;
let token: string;
const closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  h = await createHarness();
  call = harnessApiClient(h);
  token = (await issueApiToken(h.db, { tenantId: h.acme.id, name: "probe", scopes: [...API_SCOPES], issuedBy: { operator: true } })).token;
});
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  await h.close();
});

const REFUND_A1002 = "Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function walk(q: string, start: string | null = null): Promise<string[]> {
  const ids: string[] = [];
  let cursor = start;
  for (let i = 0; i < 100; i++) {
    const page = await call("GET", `/handoffs?${q}${cursor ? `&cursor=${cursor}` : ""}`, { token });
    expect(page.status).toBe(200);
    ids.push(...page.body.data.map((x: { id: string }) => x.id));
    if (!page.body.nextCursor) break;
    cursor = page.body.nextCursor;
  }
  return ids;
}

describe("a list read while a transaction that writes into it is still open", () => {
  it("holds back what is dated after that transaction began: nothing is skipped when it commits", async () => {
    // Just as the statement that opens the first conversation's handoff goes out, another session holds that run's
    // and conversation's rows for a moment (as any concurrent writer of them could): the statement starts — its
    // CURRENT_TIMESTAMP, the handoff's createdAt, is taken — and waits. Meanwhile two more handoffs commit.
    const locker = new pg.Client({ connectionString: h.tdb.url });
    await locker.connect();
    closers.push(() => locker.end());
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    closers.push(async () => {
      proto.query = original;
    });
    let armed = true;
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    proto.query = function (this: unknown, ...args: unknown[]) {
      const q = args[0] as string | { text?: string };
      const text = typeof q === "string" ? q : (q?.text ?? "");
      if (this !== locker && armed && text.includes('INSERT INTO "Handoff"')) {
        armed = false;
        return (async () => {
          await original.call(locker, "BEGIN");
          await original.call(locker, `SELECT id FROM "Run" WHERE phase = 'RUNNING' FOR UPDATE SKIP LOCKED`);
          await original.call(locker, `SELECT id FROM "Conversation" WHERE "activeRunId" IS NOT NULL FOR UPDATE SKIP LOCKED`);
          locked();
          return original.apply(this, args);
        })();
      }
      return original.apply(this, args);
    };
    const first = say(h.deps, { tenant: "acme", text: REFUND_A1002 });
    await lockTaken;
    await sleep(300);
    const b = await h.say("Hi, I'm sam@example.com. Please refund my order A-2003, the boots are the wrong size.");
    const d = await h.say("Hi, I'm dana@example.com. My order A-1004 arrived damaged, please refund it.");
    expect([b.handoffs.length, d.handoffs.length]).toEqual([1, 1]);

    // The integrator reads while the first handoff's statement waits: the two committed handoffs are dated after it
    // began, so a page that showed them — and a cursor past them — would skip the first when it commits. They wait.
    const during = await walk("limit=1");
    expect(during).toEqual([]);
    // It commits, and a walk shows all three, the first one first (the order they are dated in).
    await original.call(locker, "COMMIT");
    proto.query = original;
    const a = await first;
    expect(a.handoffs).toHaveLength(1);
    const after = await walk("limit=1");
    expect(after).toEqual([a.handoffs[0]!.id, b.handoffs[0]!.id, d.handoffs[0]!.id]);
  });
});

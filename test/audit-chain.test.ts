import { execFile } from "node:child_process";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { canonicalJson, chainHash, GENESIS_HASH, sealAuditChains, sealTenant, verifyAuditChain } from "@/lib/audit/chain";
import { storeOf } from "@/lib/db/kysely";
import { poolOf } from "@/lib/db/sql";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { runAfterCommitOnce } from "@/lib/runtime/after-commit";
import { Statement } from "@/lib/store/statement";
import { addAudit } from "@/lib/store/audit";
import { fanOutRetries, fanOutWebhookEvents, queueTestEvent } from "@/lib/webhooks/outbox";
import { createHarness, type Harness } from "./runtime-harness";
import { captureLogLines } from "./log-lines";
import { refuseSealingOf, refuseWrites } from "./refused-writes";

// The audit trail as a hash chain per shop: sealed shortly after commit by the worker, verified by walking it. Changes
// made behind the app's back — an UPDATE, a DELETE — are found and the first record concerned is named.

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const REFUND_A1002 = "Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.";
const query = (text: string, values: unknown[] = []) => poolOf(h.db)!.query(text, values);

/** A few real audit records for acme: a parked refund approved (decision + effect). */
async function someHistory() {
  const { handoffs } = await h.say(REFUND_A1002);
  await h.decide(handoffs[0]!.id, "raj@acme.test", "approve", { reason: "damaged in transit" });
}

async function sealedRecords() {
  return h.db.auditEvent.findMany({ where: { tenantId: h.acme.id, seq: { not: null } }, orderBy: { seq: "asc" } });
}

function agent(tdbUrl: string, ...args: string[]): Promise<{ code: number; out: any }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/agent.ts", ...args],
      {
        cwd: path.resolve(__dirname, ".."),
        env: { ...process.env, DATABASE_URL: tdbUrl, SUPPORT_DB_NAME: "", SUPPORT_SKIP_SEED: "1" },
        timeout: 60_000,
      },
      (error, stdout) => {
        let out: unknown = stdout;
        try {
          out = JSON.parse(stdout);
        } catch {}
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out });
      },
    );
  });
}

describe("the audit chain", () => {
  it("seals decisions and effects in order with linked hashes; an untouched chain verifies", async () => {
    await someHistory();
    // Written by the turn itself, sealed afterwards by the worker: the turn never waited on the chain.
    const pending = await h.db.auditEvent.count({ where: { tenantId: h.acme.id, seq: null } });
    expect(pending).toBeGreaterThanOrEqual(2);
    const pass = await runWorkerOnce(h.deps);
    expect(pass).toMatchObject({ sealed: expect.any(Number) });
    expect(await h.db.auditEvent.count({ where: { seq: null } })).toBe(0);

    const records = await sealedRecords();
    expect(records.map((r) => r.action)).toEqual(expect.arrayContaining(["handoff.approved", "effect.refund_order"]));
    expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
    expect(records[0]!.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < records.length; i++) expect(records[i]!.prevHash).toBe(records[i - 1]!.hash);
    // The hash is sha256(prevHash + canonical JSON of the record), recomputable by anyone holding the rows.
    const first = records[0]!;
    expect(
      chainHash(GENESIS_HASH, {
        id: first.id,
        tenantId: first.tenantId,
        seq: 1,
        runId: first.runId,
        actor: first.actor,
        action: first.action,
        subject: first.subject,
        data: first.data,
        createdAt: first.createdAt.toISOString(),
      }),
    ).toBe(first.hash);

    const report = await verifyAuditChain(storeOf(h.db), h.acme.id);
    expect(report).toMatchObject({ ok: true, checked: records.length, unsealed: 0, firstProblem: null });
    expect(report.head).toEqual({ seq: records.length, hash: records.at(-1)!.hash });
    // Another shop's chain is its own.
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    expect((await verifyAuditChain(storeOf(h.db), globex.id)).ok).toBe(true);
  });

  it("names the record an UPDATE behind the app's back changed, and verifies again once it is put back", async () => {
    await someHistory();
    await sealAuditChains(storeOf(h.db));
    const records = await sealedRecords();
    const target = records.find((r) => r.action === "handoff.approved")!;
    const original = target.data;
    await query(`UPDATE "AuditEvent" SET data = jsonb_set(data, '{reason}', '"nothing to see"') WHERE id = $1`, [target.id]);
    const report = await verifyAuditChain(storeOf(h.db), h.acme.id);
    expect(report).toMatchObject({ ok: false, firstProblem: { kind: "altered", seq: target.seq, id: target.id } });
    expect(report.checked).toBe(target.seq! - 1);

    // Changing who acted is caught the same way.
    await query(`UPDATE "AuditEvent" SET data = $2::jsonb, actor = 'someone@else' WHERE id = $1`, [target.id, JSON.stringify(original)]);
    expect((await verifyAuditChain(storeOf(h.db), h.acme.id)).firstProblem).toMatchObject({ kind: "altered", id: target.id });
    await query(`UPDATE "AuditEvent" SET actor = $2 WHERE id = $1`, [target.id, target.actor]);
    expect(await verifyAuditChain(storeOf(h.db), h.acme.id)).toMatchObject({ ok: true });
  });

  it("finds a DELETE: in the middle (a gap) and at the end (shorter than its head)", async () => {
    await someHistory();
    await sealAuditChains(storeOf(h.db));
    const records = await sealedRecords();
    expect(records.length).toBeGreaterThanOrEqual(3);
    const middle = records[1]!;
    await query(`DELETE FROM "AuditEvent" WHERE id = $1`, [middle.id]);
    expect(await verifyAuditChain(storeOf(h.db), h.acme.id)).toMatchObject({
      ok: false,
      firstProblem: { kind: "removed", seq: middle.seq, id: null },
    });

    // The last record removed: the chain still links, but it ends before its recorded head.
    await query(`INSERT INTO "AuditEvent" SELECT * FROM json_populate_record(null::"AuditEvent", $1::json)`, [
      JSON.stringify({ ...middle, pos: String(middle.pos) }),
    ]);
    expect(await verifyAuditChain(storeOf(h.db), h.acme.id)).toMatchObject({ ok: true });
    const last = records.at(-1)!;
    await query(`DELETE FROM "AuditEvent" WHERE id = $1`, [last.id]);
    expect(await verifyAuditChain(storeOf(h.db), h.acme.id)).toMatchObject({
      ok: false,
      firstProblem: { kind: "removed", seq: last.seq },
    });
  });

  it("concurrent writers and sealers: every record sealed once, no gaps", async () => {
    const db = storeOf(h.db);
    await sealAuditChains(db);
    const writes = Array.from({ length: 40 }, (_, i) =>
      query(
        `INSERT INTO "AuditEvent" (id, "tenantId", actor, action, data) VALUES (gen_random_uuid()::text, $1, 'test', 'test.write', $2::jsonb)`,
        [h.acme.id, JSON.stringify({ i })],
      ),
    );
    const seals = Array.from({ length: 6 }, () => sealTenant(db, h.acme.id, 7));
    await Promise.all([...writes, ...seals]);
    while ((await sealTenant(db, h.acme.id)) > 0);
    const records = await sealedRecords();
    expect(records.filter((r) => r.action === "test.write")).toHaveLength(40);
    expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
    expect(await verifyAuditChain(db, h.acme.id)).toMatchObject({ ok: true, checked: records.length, unsealed: 0 });
  });

  it("canonical JSON sorts keys at every level", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: null }], c: "x" } })).toBe('{"a":{"c":"x","d":[2,{"e":null,"f":1}]},"b":1}');
  });

  it("`agent audit verify` prints the report and exits non-zero when a record was altered", async () => {
    await someHistory();
    expect(await sealAuditChains(storeOf(h.db))).toBeGreaterThan(0);
    const clean = await agent(h.tdb.url, "audit", "verify", "--tenant", "acme");
    expect(clean.code).toBe(0);
    expect(clean.out).toMatchObject({ tenant: "acme", ok: true, firstProblem: null });

    const target = (await sealedRecords()).find((r) => r.action.startsWith("effect."))!;
    await query(`UPDATE "AuditEvent" SET data = '{}'::jsonb WHERE id = $1`, [target.id]);
    const tampered = await agent(h.tdb.url, "audit", "verify", "--tenant", "acme");
    expect(tampered.code).toBe(1);
    expect(tampered.out).toMatchObject({ tenant: "acme", ok: false, firstProblem: { kind: "altered", id: target.id, seq: target.seq } });
  }, 180_000); // two fresh CLI processes
});

describe("Settings → Audit", () => {
  it("lists the shop's records for admins only, filtered by kind, actor and date, with their place in the chain", async () => {
    const { listAuditRecords } = await import("@/lib/settings/audit");
    await someHistory();
    await sealAuditChains(storeOf(h.db));
    const ada = { tenantId: h.acme.id, staffId: h.staff.ada.id };
    const byKind = await listAuditRecords(h.db, ada, { kind: "handoff", actor: "raj" });
    expect(byKind.records.map((r) => [r.action, r.actor])).toEqual([["handoff.approved", "raj@acme.test"]]);
    expect(byKind.records[0]!.seq).toBeGreaterThan(0);
    expect(byKind.kinds).toEqual(expect.arrayContaining(["handoff.approved", "effect.refund_order"]));
    const today = new Date().toISOString().slice(0, 10);
    expect((await listAuditRecords(h.db, ada, { kind: "effect.refund_order", from: today, to: today })).records).toHaveLength(1);
    expect((await listAuditRecords(h.db, ada, { kind: "effect.refund_order", to: "2020-01-01" })).records).toHaveLength(0);
    await expect(listAuditRecords(h.db, ada, { from: "yesterday" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      details: { field: "from" },
    });
    await expect(listAuditRecords(h.db, { tenantId: h.acme.id, staffId: h.staff.sol.id })).rejects.toMatchObject({ code: "FORBIDDEN" });
    // Another shop's records never appear; paging walks everything exactly once.
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    await query(
      `INSERT INTO "AuditEvent" (id, "tenantId", actor, action, data) VALUES ('globex-secret', $1, 'x', 'handoff.approved', '{}')`,
      [globex.id],
    );
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await listAuditRecords(h.db, ada, { after });
      seen.push(...page.records.map((r) => r.id));
      after = page.next ?? undefined;
    } while (after);
    expect(seen).not.toContain("globex-secret");
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe(await h.db.auditEvent.count({ where: { tenantId: h.acme.id } }));
  });
});

describe("after-commit work that fails for a reason of its own", () => {
  const logLines = captureLogLines();
  /** An endpoint nothing listens at (its deliveries fail and wait for a retry). */
  const anEndpoint = (tenantId: string) =>
    h.db.webhookEndpoint.create({
      data: { tenantId, url: "http://127.0.0.1:9/hooks", secret: `whsec_${Buffer.alloc(32, 7).toString("base64")}`, eventTypes: [] },
    });

  it("a shop whose records cannot be sealed holds up neither the other shops' chains nor the webhooks; it is logged and tried again later, not at every pass", async () => {
    await someHistory(); // acme's records, unsealed
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const s = Statement.plain();
    addAudit(s, "a", { tenantId: globex.id, actor: "staff:gus", action: "settings.changed", subject: "policy", data: {} });
    await s.run(storeOf(h.db));
    const endpoint = await anEndpoint(globex.id);
    const eventId = await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test");
    // acme's records cannot be written.
    const refused = await refuseSealingOf(h.db, h.acme.id);
    const attempts = refused.tries;

    const pass = await runAfterCommitOnce(h.deps, { timeoutMs: 1000 });
    expect(pass.sealed).toBe(1); // globex's record
    expect(pass.webhookEvents).toBe(1); // the test event, fanned out
    expect(await h.db.auditEvent.count({ where: { tenantId: globex.id, seq: null } })).toBe(0);
    expect((await h.db.webhookEvent.findUniqueOrThrow({ where: { id: eventId } })).fannedOutAt).not.toBeNull();
    expect(await h.db.webhookDelivery.count({ where: { eventId } })).toBe(1);
    expect(await attempts()).toBe(1);
    const failure = logLines().find((l) => l.tenantId === h.acme.id);
    expect(failure?.msg).toMatch(/sealing a shop's audit records failed/);
    expect(failure?.err?.message).toMatch(/cannot be sealed/);

    await runAfterCommitOnce(h.deps, { timeoutMs: 1000 });
    expect(await attempts()).toBe(1); // waits for its retry
    expect(await h.db.auditEvent.count({ where: { tenantId: h.acme.id, seq: { not: null } } })).toBe(0); // nothing skipped
  });

  it("an event that cannot be fanned out holds up neither the events before it nor those after it; it is logged and tried again later, not at every pass", async () => {
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const endpoint = await anEndpoint(globex.id);
    const [first, bad, last] = [
      await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test"),
      await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test"),
      await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test"),
    ];
    // The middle event's delivery cannot be written.
    const refused = await refuseWrites(h.db, {
      name: "refuse_fan_out",
      op: "INSERT",
      table: "WebhookDelivery",
      when: `NEW."eventId" = '${bad}'`,
      message: "this event cannot be fanned out (for the test)",
    });
    const attempts = refused.tries;
    const fannedOut = async (id: string) => (await h.db.webhookEvent.findUniqueOrThrow({ where: { id } })).fannedOutAt !== null;

    const pass = await runAfterCommitOnce(h.deps, { timeoutMs: 1000 });
    expect(pass.webhookEvents).toBe(2);
    expect([await fannedOut(first), await fannedOut(bad), await fannedOut(last)]).toEqual([true, false, true]);
    expect(await h.db.webhookDelivery.count({ where: { eventId: { in: [first, last] } } })).toBe(2);
    const tried = await attempts();
    expect(tried).toBeGreaterThanOrEqual(1);
    const failure = logLines().find((l) => l.eventId === bad);
    expect(failure?.msg).toMatch(/fanning out a webhook event failed/);
    expect(failure?.err?.message).toMatch(/cannot be fanned out/);
    expect(failure?.tenantId).toBe(globex.id);

    // A later event is fanned out at the next pass; the refused one waits for its retry.
    const later = await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test");
    expect((await runAfterCommitOnce(h.deps, { timeoutMs: 1000 })).webhookEvents).toBe(1);
    expect(await fannedOut(later)).toBe(true);
    expect(await attempts()).toBe(tried);

    // Once it can be written and its retry has come, it goes out like any other, and nothing of it is kept waiting.
    await refused.stop();
    const retryCame = vi.spyOn(Date, "now").mockReturnValue(Date.now() + 3000);
    try {
      expect((await fanOutWebhookEvents(storeOf(h.db))).events).toBe(1);
    } finally {
      retryCame.mockRestore();
    }
    expect(await fannedOut(bad)).toBe(true);
    expect(fanOutRetries.failingKeys()).not.toContain(bad);
  });

  it("a fan-out that fails while another worker waits for the fan-out lock leaves the events to that worker", async () => {
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const endpoint = await anEndpoint(globex.id);
    const events: string[] = [];
    for (let i = 0; i < 3; i++) events.push(await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test"));
    // The one-statement fan-out fails slowly (for the test), while it holds the fan-out lock.
    await h.db.$executeRawUnsafe(
      `CREATE FUNCTION slow_refusal() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(1.5); RAISE EXCEPTION 'this fan-out fails (for the test)'; END $$`,
    );
    await h.db.$executeRawUnsafe(
      `CREATE TRIGGER slow_refusal BEFORE UPDATE ON "WebhookEvent" FOR EACH ROW EXECUTE FUNCTION slow_refusal()`,
    );
    // Another worker asks for the lock meanwhile: it waits, and has it the moment the failed statement lets it go.
    const other = await poolOf(h.db)!.connect();
    try {
      const pass = fanOutWebhookEvents(storeOf(h.db));
      await new Promise((r) => setTimeout(r, 200));
      await other.query("BEGIN");
      await other.query("SELECT pg_advisory_xact_lock(hashtextextended('webhook-fan-out', 0))");
      // The failed pass went on one event at a time, found the lock taken, and left every event to the other worker:
      // none fanned out, none tried, none held back, nothing logged as failing.
      expect(await pass).toEqual({ events: 0, deliveries: 0 });
      const fanned = await h.db.webhookEvent.count({ where: { id: { in: events }, fannedOutAt: { not: null } } });
      expect(fanned).toBe(0);
      expect(fanOutRetries.failingKeys().filter((id) => events.includes(id))).toEqual([]);
      expect(logLines().filter((l) => /fanning out .*failed/.test(l.msg))).toEqual([]);
    } finally {
      await other.query("COMMIT");
      other.release();
    }
    await h.db.$executeRawUnsafe(`DROP TRIGGER slow_refusal ON "WebhookEvent"`);
    expect((await fanOutWebhookEvents(storeOf(h.db))).events).toBe(3);
  });

  it("a fan-out that fails for every event holds up no delivery already queued, and is logged once, not once an event", async () => {
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const endpoint = await anEndpoint(globex.id);
    const first = await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test");
    await fanOutWebhookEvents(storeOf(h.db)); // its delivery is queued, due now
    const refusedEvents: string[] = [];
    for (let i = 0; i < 3; i++) refusedEvents.push(await queueTestEvent(storeOf(h.db), endpoint, "gus@globex.test"));
    await refuseWrites(h.db, {
      name: "refuse_fan_out",
      op: "UPDATE",
      table: "WebhookEvent",
      message: "this event cannot be fanned out (for the test)",
    });

    const pass = await runAfterCommitOnce(h.deps, { timeoutMs: 1000 });
    expect(pass.webhookEvents).toBe(0);
    expect(pass.webhookAttempts).toBe(1); // the queued delivery was tried (nothing listens on port 9: it waits for a retry)
    expect((await h.db.webhookDelivery.findFirstOrThrow({ where: { eventId: first } })).attempts).toBe(1);
    const failures = logLines().filter((l) => /fanning out .*failed/.test(l.msg));
    expect(failures).toHaveLength(1);
    expect(failures[0]!.msg).toMatch(/fanning out 3 webhook events failed alike/);
    expect(failures[0]!.err?.message).toMatch(/cannot be fanned out/);
    expect(failures[0]!.count).toBe(3);
    expect(failures[0]!.eventIds).toEqual(refusedEvents);
  });
});

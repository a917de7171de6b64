// A runtime on a private test database with the offline model (scriptable) under the real SDK client.
import { createTestDatabase, type TestDatabase } from "./db";
import { createModelClient } from "@/lib/model/client";
import { createOfflineFetch, OfflineScript } from "@/lib/model/offline";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { decide, say, listHandoffs } from "@/lib/operator/commands";
import { runDetail } from "@/lib/runs/detail";
import { storeOf } from "@/lib/db/kysely";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import type { PolicyRulesInput } from "@/lib/policy/policy";
import { buildModelMessages, loadTranscript, transcriptViolations } from "@/lib/store/transcript";
import pg from "pg";
import { statementsSentWhile } from "@/bench/peers/scenario";

export interface Harness {
  tdb: TestDatabase;
  db: TestDatabase["prisma"];
  deps: RuntimeDeps;
  script: OfflineScript;
  acme: { id: string };
  staff: Record<"rita" | "raj" | "sol" | "ada" | "gus", { id: string; email: string; tenantId: string }>;
  say(text: string, opts?: { conversationId?: string; customer?: string }): ReturnType<typeof say>;
  decide(
    handoffId: string,
    as: string,
    decision: string,
    extra?: { input?: unknown; reason?: string; version?: number },
  ): ReturnType<typeof decide>;
  pendingHandoffs(): ReturnType<typeof listHandoffs>;
  effects(): Promise<Array<{ toolName: string; idempotencyKey: string; outcome: unknown; runId: string }>>;
  /** The conversation's messages as the model would see them now, checked against the pairing contract. */
  transcriptProblems(conversationId: string): Promise<string[]>;
  /** The errors of the conversation's model calls the provider refused as an invalid request (400). */
  badRequests(conversationId: string): Promise<string[]>;
  runDetail(runId: string): ReturnType<typeof runDetail>;
  newDeps(workerId: string, model?: RuntimeDeps["model"]): RuntimeDeps;
  /**
   * A refund of `cents` waiting for a person, on a new $500 delivered order of Dana's (money limits count what waits on
   * an order, so each refund gets an order of its own), in a new conversation; `note` is in the request and the reason.
   */
  parkRefund(cents: number, note?: string): Promise<ParkedRefund>;
  /** Publishes a new policy version for acme: the demo rules, changed. */
  publish(change: (rules: PolicyRulesInput) => PolicyRulesInput): Promise<void>;
  close(): Promise<void>;
}

export interface ParkedRefund {
  conversationId: string;
  runId: string;
  handoffId: string;
  version: number;
  orderNumber: string;
}

/**
 * The demo shop's rules as the harness publishes them. Without `specialists`, the specialist tools are left out: the
 * offline model hands refunds and replacements to the specialists a request offers, and most tests exercise the
 * agent's own path (test/runtime/specialists.test.ts and offline-specialists.test.ts offer them).
 */
function harnessRules(specialists: boolean) {
  const rules = structuredClone(DEMO_POLICY_RULES) as unknown as PolicyRulesInput;
  return specialists ? rules : { ...rules, allowedTools: rules.allowedTools.filter((t) => !t.endsWith("_specialist")) };
}

export async function createHarness(opts: { leaseMs?: number; maxRetries?: number; specialists?: boolean } = {}): Promise<Harness> {
  const tdb = await createTestDatabase();
  const db = tdb.prisma;
  const script = new OfflineScript();
  const model = createModelClient({ fetch: createOfflineFetch({ script }), maxRetries: opts.maxRetries ?? 0, timeoutMs: 2000 });
  const deps: RuntimeDeps = { db, model, workerId: "test-worker", leaseMs: opts.leaseMs ?? 30_000 };
  const acme = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const staffRows = await db.staffUser.findMany();
  const byName = (e: string) => staffRows.find((s) => s.email === e)!;
  const staff = {
    rita: byName("rita@acme.test"),
    raj: byName("raj@acme.test"),
    sol: byName("sol@acme.test"),
    ada: byName("ada@acme.test"),
    gus: byName("gus@globex.test"),
  };
  let orderSeq = 7000;
  const harness: Harness = {
    tdb,
    db,
    deps,
    script,
    acme,
    staff,
    say: (text, o = {}) => say(deps, { tenant: "acme", text, conversationId: o.conversationId, customerEmail: o.customer }),
    decide: (handoffId, as, decision, extra = {}) => decide(deps, { handoffId, staffEmail: as, decision, ...extra }),
    pendingHandoffs: () => listHandoffs(db, acme.id, { status: "PENDING" }),
    effects: () => db.effectLedger.findMany({ orderBy: { createdAt: "asc" } }),
    async transcriptProblems(conversationId) {
      return transcriptViolations(buildModelMessages(await loadTranscript(storeOf(db), conversationId)));
    },
    async badRequests(conversationId) {
      const calls = await db.modelCall.findMany({ where: { run: { conversationId } }, orderBy: { createdAt: "asc" } });
      return calls.flatMap((c) => (c.error?.startsWith("bad_request") ? [c.error] : []));
    },
    runDetail: (runId) => runDetail(db, runId),
    newDeps: (workerId, m = model) => ({ ...deps, workerId, model: m }),
    async parkRefund(cents, note = "") {
      const dana = await db.customer.findFirstOrThrow({ where: { tenantId: acme.id, email: "dana@example.com" } });
      const orderNumber = `A-${++orderSeq}`;
      await db.order.create({
        data: {
          tenantId: acme.id,
          customerId: dana.id,
          number: orderNumber,
          totalCents: 50000,
          status: "delivered",
          shippingAddress: { line1: "214 Alder Street", city: "Portland", postalCode: "97204", country: "US" },
        },
      });
      script.push({
        reply: {
          content: [
            {
              type: "tool_use",
              name: "refund_order",
              input: { order_number: orderNumber, amount_cents: cents, reason: note || "damaged" },
            },
          ],
          stop_reason: "tool_use",
        },
      });
      const out = await harness.say(`Refund ${orderNumber} please${note ? ` (${note})` : ""}`, { customer: "dana@example.com" });
      if (out.phase !== "WAITING_FOR_APPROVAL") throw new Error(`the refund of ${orderNumber} did not park: ${out.phase}`);
      const handoff = await db.handoff.findFirstOrThrow({ where: { conversationId: out.conversationId, status: "PENDING" } });
      return { conversationId: out.conversationId, runId: out.runId!, handoffId: handoff.id, version: handoff.version, orderNumber };
    },
    async publish(change) {
      const tenant = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
      // Versions are cached by (tenant, version) and every test database copies one template: each its own number.
      const version = tenant.policyVersion + 1 + Math.floor(Math.random() * 1_000_000);
      const rules = change(harnessRules(opts.specialists ?? false));
      await db.policyVersion.create({ data: { tenantId: tenant.id, version, rules: rules as object } });
      await db.tenant.update({ where: { id: tenant.id }, data: { policyVersion: version } });
    },
    close: () => tdb.drop(),
  };
  if (!opts.specialists) {
    // The shop's first version, rewritten in place in this private copy (tests expect "policy v1").
    const tenant = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    await db.policyVersion.update({
      where: { tenantId_version: { tenantId: tenant.id, version: tenant.policyVersion } },
      data: { rules: harnessRules(false) as object },
    });
  }
  return harness;
}

/**
 * Every statement sent (by any pg client: Prisma's adapter, the SQL store) while `work` runs, with the round trip it
 * went in: a statement sent on a pipelined connection while another is still unanswered shares that one's round trip
 * (as the bench counts them).
 */
export async function roundTripsDuring(work: () => Promise<unknown>): Promise<Array<{ text: string; trip: number }>> {
  const sent = await statementsSentWhile(pg.Client, work);
  return sent.map(({ text, trip }) => ({ text, trip }));
}

/** The text of every statement sent while `work` runs. */
export async function statementsSentDuring(work: () => Promise<unknown>): Promise<string[]> {
  return (await roundTripsDuring(work)).map((s) => s.text);
}

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "@/lib/db/prisma-types";
import { say } from "@/lib/operator/commands";
import { createHarness, type Harness } from "@/test/runtime-harness";
import type { Viewer } from "./access";
import {
  RUN_CSV_COLUMNS,
  exportRuns,
  orderSearchSql,
  runCsvHeader,
  runCsvRow,
  runFilterSchema,
  runJsonLine,
  runReview,
  searchRuns,
} from "./runs";
import { decisionInWords } from "./decision-words";

// Runs made by the real runtime and the offline model (the demo shop's conversations), searched as a supervisor.

let h: Harness;
let supervisor: Viewer;
let reviewer: Viewer;
let otherShop: Viewer;
const run: Record<string, { runId: string; conversationId: string }> = {};

const filter = (f: Record<string, unknown> = {}) => runFilterSchema.parse(f);
const ids = async (f: Record<string, unknown> = {}, viewer = supervisor) =>
  (await searchRuns(h.db, viewer, filter(f), { limit: 500 })).runs.map((r) => r.id);
const idsOf = (...names: string[]) => names.map((n) => run[n]!.runId);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as { code?: string },
  );

beforeAll(async () => {
  h = await createHarness();
  supervisor = { tenantId: h.acme.id, role: "supervisor" };
  reviewer = { tenantId: h.acme.id, role: "reviewer" };
  const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
  otherShop = { tenantId: globex.id, role: "admin" };

  const keep = (name: string, out: { runId: string | null; conversationId: string }) => {
    run[name] = { runId: out.runId!, conversationId: out.conversationId };
    return out;
  };
  keep("autoRefund", await h.say("I'm dana@example.com, please refund order A-1001 — the zipper broke."));
  const approved = keep("approved", await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it."));
  await h.decide((await h.pendingHandoffs()).find((x) => x.conversationId === approved.conversationId)!.id, "raj@acme.test", "approve");
  const denied = keep("denied", await h.say("I'm sam@example.com. Please cancel order A-2001, I ordered the wrong size."));
  await h.decide((await h.pendingHandoffs()).find((x) => x.conversationId === denied.conversationId)!.id, "rita@acme.test", "deny", {
    reason: "It has already left the warehouse",
  });
  keep("human", await h.say("I want to talk to a human please"));
  keep("ceiling", await h.say("I'm dana@example.com. Order A-1003 never arrived, I want a refund for A-1003."));
  keep("waiting", await h.say("I'm dana@example.com. My order A-1004 arrived damaged, please refund it."));
  keep("globex", await say(h.deps, { tenant: "globex", text: "I want to talk to a human please" }));
});
afterAll(async () => {
  await h?.close();
});

describe("who may search runs", () => {
  it("a reviewer is refused supervisor-only data in the data layer, not only by hidden links", async () => {
    expect((await refusal(searchRuns(h.db, reviewer, filter())))?.code).toBe("FORBIDDEN");
    expect((await refusal(exportRuns(h.db, reviewer, filter())))?.code).toBe("FORBIDDEN");
    expect((await refusal(runReview(h.db, reviewer, run.approved!.runId)))?.code).toBe("FORBIDDEN");
  });

  it("another shop's runs are never listed, and their ids are not found", async () => {
    const mine = await ids();
    expect(mine).not.toContain(run.globex!.runId);
    expect(await ids({}, otherShop)).toEqual([run.globex!.runId]);
    expect(await ids({ q: "A-1002" }, otherShop)).toEqual([]);
    expect(await ids({ q: run.approved!.conversationId }, otherShop)).toEqual([]);
    expect(await ids({ q: "dana@example.com" }, otherShop)).toEqual([]);
    expect((await refusal(runReview(h.db, otherShop, run.approved!.runId)))?.code).toBe("NOT_FOUND");
    expect((await refusal(runReview(h.db, supervisor, run.globex!.runId)))?.code).toBe("NOT_FOUND");
  });
});

describe("searching", () => {
  it.each([
    { name: "an order number", q: "A-1002", want: ["approved"] },
    { name: "an order number as a customer types it", q: "a-1002", want: ["approved"] },
    { name: "an order that escalated", q: "A-1003", want: ["ceiling"] },
    { name: "a customer's email (any case)", q: "Dana@Example.com", want: ["autoRefund", "approved", "ceiling", "waiting"] },
    { name: "another customer's email", q: "sam@example.com", want: ["denied"] },
    { name: "nothing that matches", q: "A-9999", want: [] },
  ])("by $name", async ({ q, want }) => {
    expect((await ids({ q })).sort()).toEqual(idsOf(...want).sort());
  });

  it("by conversation id and by run id", async () => {
    expect(await ids({ q: run.human!.conversationId })).toEqual([run.human!.runId]);
    expect(await ids({ q: ` ${run.denied!.runId} ` })).toEqual([run.denied!.runId]);
  });

  it.each([
    { outcome: "resolved_by_agent", want: ["autoRefund"] },
    { outcome: "approved", want: ["approved"] },
    { outcome: "denied", want: ["denied"] },
    { outcome: "escalated", want: ["human", "ceiling"] },
    { outcome: "waiting", want: ["waiting"] },
    { outcome: "expired", want: [] },
    { outcome: "dead_letter", want: [] },
  ])("by outcome: $outcome", async ({ outcome, want }) => {
    expect((await ids({ outcome })).sort()).toEqual(idsOf(...want).sort());
  });

  it("combines the search, the outcome and a date range", async () => {
    expect(await ids({ q: "dana@example.com", outcome: "escalated" })).toEqual([run.ceiling!.runId]);
    await h.db.run.update({ where: { id: run.autoRefund!.runId }, data: { startedAt: new Date("2025-03-10T12:00:00Z") } });
    expect(await ids({ from: "2025-03-10", to: "2025-03-10" })).toEqual([run.autoRefund!.runId]);
    expect(await ids({ from: "2025-03-11", to: "2025-03-31" })).toEqual([]);
    expect(await ids({ to: "2025-03-09" })).toEqual([]);
    expect(await ids({ from: "2025-03-11" })).not.toContain(run.autoRefund!.runId);
  });

  it("refuses bad filters with a clear message", () => {
    const msg = (f: Record<string, unknown>) => runFilterSchema.safeParse(f).error?.issues.map((i) => i.message);
    expect(msg({ from: "2025-02-30" })).toEqual(["From: use a date like 2026-12-01"]);
    expect(msg({ from: "2025-03-02", to: "2025-03-01" })).toEqual(["The start date is after the end date."]);
    expect(msg({ outcome: "success" })?.length).toBe(1);
    expect(runFilterSchema.parse({ q: "  ", from: "", outcome: "" })).toEqual({ outcome: "all" });
  });
});

describe("the rows", () => {
  const row = async (name: string) => (await searchRuns(h.db, supervisor, filter({ q: run[name]!.runId }))).runs[0]!;

  it("name the customer, the orders, the outcome, the handoffs and who decided", async () => {
    const approved = await row("approved");
    expect(approved).toMatchObject({
      customer: { name: "Dana Reyes", email: "dana@example.com" },
      orders: ["A-1002"],
      outcome: "approved",
      outcomeLabel: "Approved by a reviewer",
      decidedBy: ["Raj"],
    });
    expect(approved.handoffs).toEqual([expect.objectContaining({ kind: "APPROVAL", status: "APPROVED", summary: "Approved by Raj" })]);
    expect(approved.costMicros).toBeGreaterThanOrEqual(0);
    expect((await row("denied")).handoffs[0]).toMatchObject({ summary: "Denied by Rita", decidedBy: ["Rita"] });
  });

  it("an escalation the agent ended with end_turn is escalated, not a success", async () => {
    const human = await row("human");
    expect(human.phase).toBe("COMPLETED");
    expect(human.stopReason).toBe("end_turn");
    expect(human.outcome).toBe("escalated");
    expect(human.customer).toBeNull();
  });

  it("pages by a cursor: every run once, newest first", async () => {
    const all = await ids();
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 20; i++) {
      const page = await searchRuns(h.db, supervisor, filter({ cursor }), { limit: 2 });
      seen.push(...page.runs.map((r) => r.id));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(all);
    expect(all.length).toBeGreaterThan(4);
    expect((await refusal(searchRuns(h.db, supervisor, filter({ cursor: "not-a-cursor" }))))?.code).toBe("INVALID_INPUT");
  });

  it("export the same filtered rows, as CSV and as JSON lines", async () => {
    const f = filter({ q: "dana@example.com" });
    const rows = [];
    for await (const r of await exportRuns(h.db, supervisor, f)) rows.push(r);
    expect(rows.map((r) => r.id)).toEqual(await ids({ q: "dana@example.com" }));
    expect(runCsvHeader()).toBe(`${RUN_CSV_COLUMNS.join(",")}\r\n`);
    const approved = rows.find((r) => r.id === run.approved!.runId)!;
    const csv = runCsvRow(approved);
    expect(csv).toContain(",approved,COMPLETED,");
    expect(csv).toContain(",Dana Reyes,dana@example.com,A-1002,approval: Approved by Raj,Raj,");
    const json = JSON.parse(runJsonLine(approved));
    expect(json).toMatchObject({ run_id: approved.id, outcome: "approved", orders: ["A-1002"], decided_by: ["Raj"] });
    expect(runJsonLine(approved).endsWith("\n")).toBe(true);
  });
});

describe("the run page's data", () => {
  it("carries the final reply as the customer saw it and the people who decided", async () => {
    const d = await runReview(h.db, supervisor, run.approved!.runId);
    expect(d.summary.outcome).toBe("approved");
    expect(d.finalReply).toMatchObject({ from: "agent" });
    expect(d.finalReply!.text).toMatch(/\$250\.00/);
    const words = decisionInWords(d.decisions[0]!.facts);
    expect(words).toEqual([expect.stringMatching(/^Approved by Raj on .+ — \$250\.00 refunded$/)]);
    expect(d.heldBackReply).toBeNull();
  });

  it("shows a waiting run's last notice, and the first of two approvals", async () => {
    const pending = (await h.pendingHandoffs()).find((x) => x.conversationId === run.waiting!.conversationId)!;
    await h.decide(pending.id, "raj@acme.test", "approve");
    const d = await runReview(h.db, supervisor, run.waiting!.runId);
    expect(d.summary.outcome).toBe("waiting");
    expect(d.finalReply).toMatchObject({ from: "system" });
    expect(d.finalReply!.text).toMatch(/with our team/);
    expect(decisionInWords(d.decisions[0]!.facts)[0]).toMatch(/^Approved by Raj on .+ — waiting for a second, different reviewer$/);
  });
});

describe("indexes", () => {
  it("the order-number search reads indexes, never a whole table", async () => {
    const sql = orderSearchSql(h.acme.id, "A-1002")!;
    const plan = await h.db.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL enable_seqscan = off`;
      return tx.$queryRaw<Array<{ "QUERY PLAN": string }>>(Prisma.sql`EXPLAIN ${sql}`);
    });
    const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
    expect(text).toContain("ToolCall_input_idx"); // the big table: its GIN index
    expect(text).not.toContain("Seq Scan"); // handoffs: the GIN index or the tenant's, whichever is cheaper
  });
});

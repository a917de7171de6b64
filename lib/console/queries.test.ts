import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { publishEvent } from "@/lib/events";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { queueFilterSchema } from "./filters";
import { consoleEvents, conversationDetail, eventHead, handoffDetail, queueHandoffs } from "./queries";
import { runReview, searchRuns } from "./runs";

async function makeHandoff(
  db: PrismaClient,
  tenantId: string,
  o: {
    kind?: "APPROVAL" | "ESCALATION";
    amountCents?: number | null;
    minutesAgo?: number;
    claimedById?: string;
    claimMinutes?: number;
    status?: "PENDING" | "APPROVED";
  } = {},
) {
  const conversation = await db.conversation.create({ data: { tenantId, tokenHash: randomUUID() } });
  const payload = {
    customer: null,
    asked: "refund please",
    tried: [],
    rootCause: "needs approval",
    amountCents: o.amountCents ?? null,
    recommendedAction: "Approve: Refund.",
    reason: "Refund needs approval",
    trigger: "approval_required",
    orderNumber: null,
  };
  const h = await db.handoff.create({
    data: {
      tenantId,
      conversationId: conversation.id,
      kind: o.kind ?? "APPROVAL",
      status: o.status ?? "PENDING",
      payload,
      amountCents: o.amountCents ?? null,
      createdAt: new Date(Date.now() - (o.minutesAgo ?? 1) * 60_000),
      ...(o.claimedById ? { claimedById: o.claimedById, claimExpiresAt: new Date(Date.now() + (o.claimMinutes ?? 5) * 60_000) } : {}),
    },
  });
  await publishEvent(db, { tenantId, conversationId: conversation.id, type: "handoff.created", data: { handoffId: h.id } });
  return h;
}

describe("console queries", () => {
  let db: TestDatabase;
  let acme: string;
  let globex: string;
  let rita: string;
  let raj: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    db = await createTestDatabase();
    const p = db.prisma;
    acme = (await p.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
    globex = (await p.tenant.findUniqueOrThrow({ where: { slug: "globex" } })).id;
    rita = (await p.staffUser.findUniqueOrThrow({ where: { email: "rita@acme.test" } })).id;
    raj = (await p.staffUser.findUniqueOrThrow({ where: { email: "raj@acme.test" } })).id;
    ids.small = (await makeHandoff(p, acme, { amountCents: 5000, minutesAgo: 5 })).id;
    ids.mineRita = (await makeHandoff(p, acme, { amountCents: 25000, minutesAgo: 30, claimedById: rita })).id;
    ids.rajs = (await makeHandoff(p, acme, { amountCents: 46000, minutesAgo: 90, claimedById: raj })).id;
    ids.expiredClaim = (await makeHandoff(p, acme, { amountCents: 30000, minutesAgo: 2, claimedById: raj, claimMinutes: -1 })).id;
    ids.escalation = (await makeHandoff(p, acme, { kind: "ESCALATION", minutesAgo: 3 })).id;
    ids.decided = (await makeHandoff(p, acme, { amountCents: 20000, status: "APPROVED" })).id;
    ids.globex = (await makeHandoff(p, globex, { amountCents: 25000 })).id;
  });
  afterAll(async () => {
    await db?.drop();
  });

  const queue = async (staffId: string, f: Record<string, unknown> = {}) =>
    (await queueHandoffs(db.prisma, { tenantId: acme, staffId }, queueFilterSchema.parse(f))).map((h) => h.id);

  it.each([
    { name: "default: open items of the shop, oldest first", f: {}, want: ["rajs", "mineRita", "small", "escalation", "expiredClaim"] },
    { name: "kind", f: { kind: "escalation" }, want: ["escalation"] },
    { name: "amount range in dollars", f: { min: "200", max: "400" }, want: ["mineRita", "expiredClaim"] },
    { name: "claimed by me", f: { claimed: "me" }, want: ["mineRita"] },
    { name: "claimed by someone else", f: { claimed: "others" }, want: ["rajs"] },
    { name: "claimed by nobody (an expired claim is nobody's)", f: { claimed: "nobody" }, want: ["small", "escalation", "expiredClaim"] },
    { name: "fresh (< 15 min)", f: { age: "fresh" }, want: ["small", "escalation", "expiredClaim"] },
    { name: "aging (15–60 min)", f: { age: "aging" }, want: ["mineRita"] },
    { name: "overdue (> 1 h)", f: { age: "overdue" }, want: ["rajs"] },
    { name: "decided", f: { status: "decided" }, want: ["decided"] },
  ])("queue filter: $name", async ({ f, want }) => {
    const got = await queue(rita, f);
    expect([...got].sort()).toEqual(want.map((k) => ids[k]).sort());
    if (!Object.keys(f).length) expect(got).toEqual(want.map((k) => ids[k])); // order too
  });

  it("never lists another shop's items", async () => {
    const all = await queue(rita, { status: "all" });
    expect(all).not.toContain(ids.globex);
  });

  it("another shop's ids are NOT_FOUND, exactly like unknown ids", async () => {
    const notFound = expect.objectContaining({ code: "NOT_FOUND" });
    await expect(handoffDetail(db.prisma, globex, ids.small!)).rejects.toEqual(notFound);
    await expect(handoffDetail(db.prisma, acme, ids.globex!)).rejects.toEqual(notFound);
    await expect(handoffDetail(db.prisma, acme, "does-not-exist")).rejects.toBeInstanceOf(AppError);
    const h = await db.prisma.handoff.findUniqueOrThrow({ where: { id: ids.small! } });
    await expect(conversationDetail(db.prisma, globex, h.conversationId)).rejects.toEqual(notFound);
    expect((await conversationDetail(db.prisma, acme, h.conversationId)).conversation.id).toBe(h.conversationId);
  });

  it("runs are scoped to the shop too", async () => {
    const conv = await db.prisma.conversation.create({ data: { tenantId: acme, tokenHash: randomUUID() } });
    const run = await db.prisma.run.create({
      data: {
        tenantId: acme,
        conversationId: conv.id,
        maxTurns: 12,
        tokenBudget: 1000,
        policyVersion: 1,
        promptVersion: "p1",
        toolsVersion: "t1",
        model: "offline",
      },
    });
    const supervisorOf = (tenantId: string) => ({ tenantId, role: "supervisor" as const });
    await expect(runReview(db.prisma, supervisorOf(globex), run.id)).rejects.toEqual(expect.objectContaining({ code: "NOT_FOUND" }));
    expect((await runReview(db.prisma, supervisorOf(acme), run.id)).run.id).toBe(run.id);
    const all = { outcome: "all" } as const;
    expect((await searchRuns(db.prisma, supervisorOf(acme), all)).runs.map((r) => r.id)).toContain(run.id);
    expect((await searchRuns(db.prisma, supervisorOf(globex), all)).runs.map((r) => r.id)).not.toContain(run.id);
  });

  it("hands out JSON-shaped data (dates as strings) so page and refetch agree", async () => {
    const d = await handoffDetail(db.prisma, acme, ids.mineRita!);
    expect(typeof d.handoff.createdAt).toBe("string");
    expect(d.handoff.claimedBy).toMatchObject({ id: rita, name: "Rita" });
  });

  it("follows the event feed from a cursor, per shop and per conversation", async () => {
    const head = await eventHead(db.prisma, acme);
    const h = await makeHandoff(db.prisma, acme, { amountCents: 100 });
    await makeHandoff(db.prisma, globex, { amountCents: 100 });
    const page = await consoleEvents(db.prisma, acme, BigInt(head));
    expect(page.events.map((e) => e.type)).toEqual(["handoff.created"]);
    expect(page.events[0]!.data).toMatchObject({ handoffId: h.id });
    expect(BigInt(page.cursor)).toBeGreaterThan(BigInt(head));
    // Resuming from the returned cursor gives nothing new; nothing is repeated or skipped.
    expect((await consoleEvents(db.prisma, acme, BigInt(page.cursor))).events).toEqual([]);
    const other = await db.prisma.handoff.findUniqueOrThrow({ where: { id: ids.small! } });
    expect((await consoleEvents(db.prisma, acme, BigInt(head), other.conversationId)).events).toEqual([]);
    expect((await consoleEvents(db.prisma, acme, BigInt(head), h.conversationId)).events).toHaveLength(1);
  });
});

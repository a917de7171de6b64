import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { storeOf } from "@/lib/db/kysely";
import { readCustomerView, readVisitorView } from "./view";

// The customer's view is read in one statement (the widget reads it on every live update). Checked here against the
// view spelled out with Prisma reads over a conversation with every kind of message, a person of this shop and one of
// another shop, hidden messages, an owner, a parked run with one pending and one decided approval, and events.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

async function oracle(conversationId: string, afterSeq: number) {
  const p = db.prisma;
  const c = await p.conversation.findUniqueOrThrow({ where: { id: conversationId } });
  const messages = await p.message.findMany({
    where: { conversationId, shownToCustomer: true, seq: { gt: afterSeq } },
    orderBy: { seq: "asc" },
  });
  const run = c.activeRunId ? await p.run.findUnique({ where: { id: c.activeRunId } }) : null;
  const pending = await p.handoff.count({ where: { conversationId, kind: "APPROVAL", status: "PENDING" } });
  const names = new Map((await p.staffUser.findMany({ where: { tenantId: c.tenantId } })).map((s) => [s.id, s.name]));
  const last = await p.event.findFirst({ where: { conversationId }, orderBy: { id: "desc" } });
  const status =
    c.status === "human"
      ? "with_person"
      : run?.phase === "WAITING_FOR_APPROVAL"
        ? "waiting_for_approval"
        : run?.phase === "RUNNING" || run?.phase === "WAITING_FOR_RETRY"
          ? "working"
          : c.status === "escalated"
            ? "waiting_for_person"
            : "idle";
  return {
    cursor: last?.id ?? 0n,
    view: {
      conversationId,
      status,
      owner: c.ownerStaffId ? (names.get(c.ownerStaffId) ?? "A person") : null,
      verified: !!c.verifiedCustomerId && (!c.verificationExpiresAt || c.verificationExpiresAt > new Date()),
      pendingApprovals: pending,
      lastSeq: c.messageCount,
      messages: messages.map((m) => ({
        seq: m.seq,
        from: m.author === "CUSTOMER" ? "customer" : m.author === "STAFF" ? "person" : m.author === "AGENT" ? "agent" : "system",
        name: m.author === "STAFF" && m.staffId ? (names.get(m.staffId) ?? "Support") : null,
        text: m.displayText ?? "",
        at: m.createdAt,
      })),
    },
  };
}

describe("the customer's view in one statement", () => {
  it("is what the separate reads say, for every kind of message, after any seq", async () => {
    const p = db.prisma;
    const acme = await p.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    const globex = await p.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const ours = await p.staffUser.findFirstOrThrow({ where: { tenantId: acme.id } });
    const theirs = await p.staffUser.findFirstOrThrow({ where: { tenantId: globex.id } });
    const conv = await p.conversation.create({
      data: {
        tenantId: acme.id,
        tokenHash: `view-test-${Date.now()}`,
        status: "open",
        ownerStaffId: ours.id,
        verifiedCustomerId: null,
        messageCount: 7,
      },
    });
    const at = (s: number) => new Date(Date.UTC(2026, 11, 2, 0, 0, s, 123 + s));
    const m = (seq: number, author: "CUSTOMER" | "AGENT" | "STAFF" | "HARNESS", shown: boolean, text: string | null, staffId?: string) => ({
      tenantId: acme.id,
      conversationId: conv.id,
      seq,
      role: author === "CUSTOMER" || author === "STAFF" ? ("user" as const) : ("assistant" as const),
      author,
      content: [{ type: "text", text: text ?? "" }],
      shownToCustomer: shown,
      displayText: text,
      staffId: staffId ?? null,
      createdAt: at(seq),
    });
    await p.message.createMany({
      data: [
        m(1, "CUSTOMER", true, "Where is my order?"),
        m(2, "AGENT", false, null), // a tool_use turn: not shown
        m(3, "AGENT", true, 'It ships tomorrow — "quoted", ünïcode ✓'),
        m(4, "STAFF", true, "Hi, Sam here.", ours.id),
        m(5, "STAFF", true, "A name from another shop must not show.", theirs.id),
        m(6, "HARNESS", true, "A refund is waiting for approval."),
        m(7, "CUSTOMER", true, ""),
      ],
    });
    const run = await p.run.create({
      data: {
        tenantId: acme.id,
        conversationId: conv.id,
        phase: "WAITING_FOR_APPROVAL",
        maxTurns: 10,
        tokenBudget: 1000,
        policyVersion: acme.policyVersion,
        promptVersion: "t",
        toolsVersion: "t",
        model: "t",
      },
    });
    await p.conversation.update({ where: { id: conv.id }, data: { activeRunId: run.id } });
    for (const status of ["PENDING", "APPROVED"] as const)
      await p.handoff.create({
        data: { tenantId: acme.id, conversationId: conv.id, runId: run.id, kind: "APPROVAL", status, payload: {} },
      });
    await p.event.createMany({
      data: [1, 2, 3].map((i) => ({ tenantId: acme.id, conversationId: conv.id, type: "message.created", data: { i } })),
    });

    for (const after of [0, 1, 3, 5, 7]) {
      const got = await readCustomerView(storeOf(p), conv.id, after);
      expect(got).toEqual(await oracle(conv.id, after));
    }
    const whole = await readCustomerView(storeOf(p), conv.id);
    expect(whole.view.status).toBe("waiting_for_approval");
    expect(whole.view.pendingApprovals).toBe(1);
    expect(whole.view.owner).toBe(ours.name);
    expect(whole.view.messages.map((x) => x.name)).toEqual([null, null, ours.name, "Support", null, null]);
    expect(whole.view.messages[0]?.at.toISOString()).toBe("2026-12-02T00:00:01.124Z");

    // Taken over by a person, verified, the run gone: the other statuses.
    const expires = new Date(Date.now() + 60_000);
    await p.conversation.update({
      where: { id: conv.id },
      data: { status: "human", activeRunId: null, verifiedCustomerId: "c", verificationExpiresAt: expires },
    });
    expect(await readCustomerView(storeOf(p), conv.id)).toEqual(await oracle(conv.id, 0));
    expect((await readCustomerView(storeOf(p), conv.id)).view).toMatchObject({ status: "with_person", verified: true });
    await p.conversation.update({ where: { id: conv.id }, data: { status: "escalated", verificationExpiresAt: new Date(Date.now() - 1) } });
    expect((await readCustomerView(storeOf(p), conv.id)).view).toMatchObject({ status: "waiting_for_person", verified: false });
  });

  it("a widget read: the shop, the conversation its token opens in that shop only, and the same view", async () => {
    const p = db.prisma;
    const acme = await p.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    const conv = await p.conversation.create({ data: { tenantId: acme.id, tokenHash: "visitor-hash", status: "open" } });
    const store = storeOf(p);
    const read = await readVisitorView(store, "acme", "visitor-hash", 0);
    expect(read).toEqual({ tenantId: acme.id, conversation: await readCustomerView(store, conv.id, 0) });
    expect(await readVisitorView(store, "acme", "another-hash", 0)).toEqual({ tenantId: acme.id, conversation: null });
    const globex = await p.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    expect(await readVisitorView(store, "globex", "visitor-hash", 0)).toEqual({ tenantId: globex.id, conversation: null });
    expect(await readVisitorView(store, "no-such-shop", "visitor-hash", 0)).toBeNull();
  });

  it("an unknown conversation is NOT_FOUND", async () => {
    await expect(readCustomerView(storeOf(db.prisma), "no-such-conversation")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { API_SCOPES, type ApiScope } from "@/lib/api/scopes";
import { issueApiToken, revokeApiToken } from "@/lib/api/tokens";
import { say } from "@/lib/operator/commands";
import { createHarness, type Harness } from "../runtime-harness";
import { type ApiAnswer, apiClient, harnessApiClient } from "./api-client";

// The JSON API end to end below HTTP: real route handlers, a real database, the runtime with the offline model under
// the real SDK client. Each refusal is checked for its status, its stable code — and that nothing changed. Every test
// gets its own database (money limits count what earlier refunds did on the same order).

let h: Harness;
let call: ReturnType<typeof apiClient>;
let acmeToken: string;
let globexToken: string;

const REFUND_A1002 = "Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.";

async function tokenFor(tenantId: string, scopes: readonly ApiScope[] = API_SCOPES, name = "integration") {
  return (await issueApiToken(h.db, { tenantId, name, scopes: [...scopes], issuedBy: { operator: true } })).token;
}

beforeEach(async () => {
  h = await createHarness();
  call = harnessApiClient(h);
  acmeToken = await tokenFor(h.acme.id);
  const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
  globexToken = await tokenFor(globex.id);
});
afterEach(async () => {
  await h.close();
});

/** A pending approval in the other shop. */
async function parkGlobexRefund() {
  const parked = await say(h.deps, {
    tenant: "globex",
    customerEmail: "hank@globex.test",
    text: "My order G-9001 arrived damaged, please refund it.",
  });
  expect(parked.handoffs).toHaveLength(1);
  return parked.handoffs[0]!;
}

async function parkRefund(text = REFUND_A1002) {
  const out = await h.say(text);
  expect(out.phase).toBe("WAITING_FOR_APPROVAL");
  expect(out.handoffs).toHaveLength(1);
  return { out, handoff: out.handoffs[0]! };
}

/** The audit records of a handoff's decisions, oldest first: who, through which token, what. */
async function decisionAudits(handoffId: string) {
  const rows = await h.db.auditEvent.findMany({ where: { subject: handoffId }, orderBy: { createdAt: "asc" } });
  return rows
    .filter((r) => r.action !== "handoff.approval_requested")
    .map((r) => {
      const data = r.data as { via?: unknown; decision?: unknown };
      return { action: r.action, actor: r.actor, via: data.via, decision: data.decision };
    });
}

/** The acme token these tests call with, as an audit record names it. */
async function viaAcmeToken() {
  const token = await h.db.apiToken.findFirstOrThrow({ where: { tenantId: h.acme.id, name: "integration" } });
  return { tokenId: token.id, tokenName: "integration" };
}

function expectRefusal(answer: ApiAnswer, status: number, code: string) {
  expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
  expect(typeof answer.body.error.message).toBe("string");
  expect(answer.headers.get("content-type")).toMatch(/application\/json/);
}

describe("authentication and scopes", () => {
  it("no token, a malformed one, an unknown one and a revoked one are all UNAUTHENTICATED (401), alike", async () => {
    const unknown = `sa_live_${"x".repeat(43)}`;
    const issued = await issueApiToken(h.db, {
      tenantId: h.acme.id,
      name: "short-lived",
      scopes: ["handoffs:read"],
      issuedBy: { operator: true },
    });
    expect((await call("GET", "/handoffs", { token: issued.token })).status).toBe(200);
    await revokeApiToken(h.db, { id: issued.apiToken.id, revokedBy: { operator: true } });
    const answers = await Promise.all([
      call("GET", "/handoffs"),
      call("GET", "/handoffs", { token: "not-a-token" }),
      call("GET", "/handoffs", { token: unknown }),
      call("GET", "/handoffs", { token: issued.token }),
      call("GET", "/handoffs", { headers: { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` } }),
    ]);
    for (const a of answers) {
      expectRefusal(a, 401, "UNAUTHENTICATED");
      expect(a.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(a.body.error.message).toBe(answers[0]!.body.error.message); // nothing says which it was
    }
  });

  it("a token without the endpoint's scope is FORBIDDEN (403) and names the scope it lacks", async () => {
    const runsOnly = await tokenFor(h.acme.id, ["runs:read"]);
    const { handoff } = await parkRefund();
    const listed = await call("GET", "/handoffs", { token: runsOnly });
    expectRefusal(listed, 403, "FORBIDDEN");
    expect(listed.body.error.details).toEqual({ requiredScope: "handoffs:read" });
    expectRefusal(await call("GET", "/conversations", { token: runsOnly }), 403, "FORBIDDEN");
    const readOnly = await tokenFor(h.acme.id, ["handoffs:read"]);
    const decided = await call("POST", `/handoffs/${handoff.id}/decision`, {
      token: readOnly,
      body: { decision: "approve", version: 1, actor: "raj@acme.test" },
    });
    expectRefusal(decided, 403, "FORBIDDEN");
    expect((await call("GET", `/handoffs/${handoff.id}`, { token: readOnly })).body.status).toBe("PENDING");
    expect(await h.effects()).toHaveLength(0);
  });

  it("the OpenAPI document is public", async () => {
    const doc = await call("GET", "/openapi.json");
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe("3.1.0");
  });
});

describe("GET /handoffs", () => {
  it("lists the shop's handoffs with filters, oldest first, in keyset pages; never another shop's", async () => {
    const globexHandoff = await parkGlobexRefund();
    const first = await parkRefund();
    const second = await parkRefund("Hi, I'm sam@example.com. Please refund my order A-2003, the boots are the wrong size.");
    const all = await call("GET", "/handoffs?status=PENDING&kind=APPROVAL&limit=100", { token: acmeToken });
    expect(all.status).toBe(200);
    const ids = all.body.data.map((x: { id: string }) => x.id);
    expect(ids).toEqual(expect.arrayContaining([first.handoff.id, second.handoff.id]));
    expect(ids).not.toContain(globexHandoff.id);
    expect(ids.indexOf(first.handoff.id)).toBeLessThan(ids.indexOf(second.handoff.id));
    const one = all.body.data.find((x: { id: string }) => x.id === first.handoff.id);
    expect(one).toMatchObject({
      kind: "APPROVAL",
      status: "PENDING",
      version: 1,
      toolName: "refund_order",
      amountCents: 25000,
      proposedInput: { order_number: "A-1002", amount_cents: 25000 },
      customer: { email: "dana@example.com" },
      rule: { gate: "refund_policy", policyVersion: 1 },
    });
    expect(one.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // Pages of one: every handoff exactly once, in the same order.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: ApiAnswer = await call("GET", `/handoffs?status=PENDING&kind=APPROVAL&limit=1${cursor ? `&cursor=${cursor}` : ""}`, {
        token: acmeToken,
      });
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(1);
      paged.push(...page.body.data.map((x: { id: string }) => x.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(ids);

    const escalations = await call("GET", "/handoffs?kind=ESCALATION", { token: acmeToken });
    expect(escalations.body.data.every((x: { kind: string }) => x.kind === "ESCALATION")).toBe(true);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await call("GET", `/handoffs?since=${encodeURIComponent(future)}`, { token: acmeToken })).body).toEqual({
      data: [],
      nextCursor: null,
    });
    const between = await call(
      "GET",
      `/handoffs?since=${encodeURIComponent(one.createdAt)}&until=${encodeURIComponent(new Date(Date.parse(one.createdAt) + 1).toISOString())}`,
      { token: acmeToken },
    );
    expect(between.body.data.map((x: { id: string }) => x.id)).toContain(first.handoff.id);
  });

  it.each([
    ["an unknown status", "/handoffs?status=WAITING"],
    ["an unknown filter", "/handoffs?stauts=PENDING"],
    ["a limit out of range", "/handoffs?limit=1000"],
    ["a date that is not one", "/handoffs?since=yesterday"],
    ["a forged cursor", `/handoffs?cursor=${Buffer.from("nope").toString("base64url")}`],
  ])("refuses %s with INVALID_INPUT (400) saying where", async (_what, path) => {
    const answer = await call("GET", path, { token: acmeToken });
    expectRefusal(answer, 400, "INVALID_INPUT");
    expect(answer.body.error.message).toMatch(/^query\./);
  });
});

describe("GET /handoffs/{id}", () => {
  it("reads one handoff; another shop's id is NOT_FOUND (404) both ways", async () => {
    const globexHandoff = await parkGlobexRefund();
    const { handoff } = await parkRefund();
    const got = await call("GET", `/handoffs/${handoff.id}`, { token: acmeToken });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: handoff.id, version: 1, status: "PENDING", amount: "$250.00" });
    // Its call waits: no result yet.
    expect(got.body.call).toEqual({ status: "PARKED", result: null });
    expectRefusal(await call("GET", `/handoffs/${globexHandoff.id}`, { token: acmeToken }), 404, "NOT_FOUND");
    expectRefusal(await call("GET", `/handoffs/${handoff.id}`, { token: globexToken }), 404, "NOT_FOUND");
    expectRefusal(await call("GET", "/handoffs/no-such-id", { token: acmeToken }), 404, "NOT_FOUND");
  });
});

describe("POST /handoffs/{id}/decision", () => {
  const decide = (id: string, body: unknown, token = acmeToken) => call("POST", `/handoffs/${id}/decision`, { token, body });

  it("approves as the console does: THAT call runs once, the run continues, the answer shows the outcome", async () => {
    const { out, handoff } = await parkRefund();
    const answer = await decide(handoff.id, { decision: "approve", version: 1, actor: "Raj@Acme.test" });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      outcome: "approved",
      resumeFailed: false,
      handoff: { id: handoff.id, status: "APPROVED", decidedBy: { name: "Raj" }, version: 2 },
      run: { id: out.runId, phase: "COMPLETED" },
    });
    // What became of the call, beside what Raj decided.
    expect(answer.body.handoff.call).toMatchObject({ status: "SUCCEEDED", result: expect.objectContaining({ amount: "$250.00" }) });
    const effects = (await h.effects()).filter((e) => e.runId === out.runId);
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ toolName: "refund_order", outcome: expect.objectContaining({ amount_cents: 25000 }) });
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
    // The same decision again is refused and runs nothing.
    const again = await decide(handoff.id, { decision: "approve", version: 1, actor: "raj@acme.test" });
    expectRefusal(again, 409, "ALREADY_DECIDED");
    expect(again.body.error.details).toMatchObject({ status: "APPROVED", decidedBy: "Raj" });
    expect((await h.effects()).filter((e) => e.runId === out.runId)).toHaveLength(1);
    // Audited in the decision's own commit: the staff member, and the token they acted through — one record, so a
    // process that stops after the decision cannot leave it without the token's name.
    expect(await decisionAudits(handoff.id)).toEqual([
      { action: "handoff.approved", actor: "raj@acme.test", via: await viaAcmeToken(), decision: "approved" },
    ]);
  });

  it("denies with a reason and edits with new arguments (gated again), each continuing the run", async () => {
    const denied = await parkRefund();
    const noReason = await decide(denied.handoff.id, { decision: "deny", version: 1, actor: "raj@acme.test" });
    expectRefusal(noReason, 400, "INVALID_INPUT");
    const deny = await decide(denied.handoff.id, {
      decision: "deny",
      version: 1,
      actor: "raj@acme.test",
      reason: "Outside the return window",
    });
    expect(deny.body).toMatchObject({
      outcome: "denied",
      handoff: { status: "DENIED", decisionReason: "Outside the return window", call: { status: "DENIED" } },
    });
    expect(deny.body.run.phase).not.toBe("WAITING_FOR_APPROVAL");

    const edited = await parkRefund();
    const edit = await decide(edited.handoff.id, {
      decision: "edit",
      version: 1,
      actor: "raj@acme.test",
      editedInput: { order_number: "A-1002", amount_cents: 15000, reason: "partial refund: damage is cosmetic" },
    });
    expect(edit.status).toBe(200);
    expect(edit.body).toMatchObject({ outcome: "approved", handoff: { status: "EDITED", amountCents: 15000 } });
    const effect = (await h.effects()).find((e) => e.runId === edited.out.runId);
    expect(effect?.outcome).toMatchObject({ amount_cents: 15000 });
  });

  it("refuses a stale version with STALE_VERSION (409) and the current version; nothing happens", async () => {
    const { handoff } = await parkRefund();
    const stale = await decide(handoff.id, { decision: "approve", version: 2, actor: "raj@acme.test" });
    expectRefusal(stale, 409, "STALE_VERSION");
    expect(stale.body.error.details).toEqual({ currentVersion: 1 });
    expect((await call("GET", `/handoffs/${handoff.id}`, { token: acmeToken })).body).toMatchObject({ status: "PENDING", version: 1 });
  });

  it("applies the acting person's authority, the two-approver rule and shop membership", async () => {
    // $460 on A-1004: above Rita's $300 authority, and from $400 two different reviewers must approve.
    const { out, handoff } = await parkRefund("Hi, I'm dana@example.com. My tent from order A-1004 is broken, please refund it.");
    expect(handoff).toMatchObject({ amountCents: 46000, requiredApprovals: 2 });
    expectRefusal(await decide(handoff.id, { decision: "approve", version: 1, actor: "rita@acme.test" }), 403, "OVER_AUTHORITY");
    const outsider = await decide(handoff.id, { decision: "approve", version: 1, actor: "gus@globex.test" });
    expectRefusal(outsider, 403, "FORBIDDEN");
    expectRefusal(await decide(handoff.id, { decision: "approve", version: 1, actor: "nobody@acme.test" }), 403, "FORBIDDEN");
    const first = await decide(handoff.id, { decision: "approve", version: 1, actor: "raj@acme.test" });
    expect(first.body).toMatchObject({ outcome: "awaiting_second_approval", handoff: { status: "PENDING", version: 2 } });
    expectRefusal(await decide(handoff.id, { decision: "approve", version: 2, actor: "raj@acme.test" }), 409, "SAME_APPROVER");
    const second = await decide(handoff.id, { decision: "approve", version: 2, actor: "ada@acme.test" });
    expect(second.body).toMatchObject({ outcome: "approved", handoff: { status: "APPROVED" }, run: { phase: "COMPLETED" } });
    const via = await viaAcmeToken();
    expect(await decisionAudits(handoff.id)).toEqual([
      { action: "handoff.first_approval", actor: "raj@acme.test", via, decision: undefined },
      { action: "handoff.approved", actor: "ada@acme.test", via, decision: "approved" },
    ]);
    expect((await h.effects()).filter((e) => e.runId === out.runId)).toHaveLength(1);
  });

  it("another shop's handoff is NOT_FOUND (404), whoever the actor; its handoff stays pending", async () => {
    const globexHandoff = await parkGlobexRefund();
    expectRefusal(await decide(globexHandoff.id, { decision: "approve", version: 1, actor: "raj@acme.test" }), 404, "NOT_FOUND");
    expectRefusal(await decide(globexHandoff.id, { decision: "approve", version: 1, actor: "gus@globex.test" }), 404, "NOT_FOUND");
    const mine = await call("GET", `/handoffs/${globexHandoff.id}`, { token: globexToken });
    expect(mine.body).toMatchObject({ status: "PENDING", version: 1 });
  });

  it.each([
    ["no version", { decision: "approve", actor: "raj@acme.test" }, /body\.version/],
    ["no actor", { decision: "approve", version: 1 }, /body\.actor/],
    ["an unknown decision", { decision: "maybe", version: 1, actor: "raj@acme.test" }, /body\.decision/],
    ["an unknown field", { decision: "approve", version: 1, actor: "raj@acme.test", handoffId: "other" }, /body/],
    ["a version that is no number", { decision: "approve", version: "1", actor: "raj@acme.test" }, /body\.version/],
  ])("refuses a body with %s: INVALID_INPUT (400), nothing decided", async (_what, body, where) => {
    const { handoff } = await parkRefund();
    const answer = await decide(handoff.id, body);
    expectRefusal(answer, 400, "INVALID_INPUT");
    expect(answer.body.error.message).toMatch(where);
    expect((await call("GET", `/handoffs/${handoff.id}`, { token: acmeToken })).body.status).toBe("PENDING");
  });

  it("refuses a body that is not JSON, or not sent as JSON", async () => {
    const { handoff } = await parkRefund();
    const path = `/handoffs/${handoff.id}/decision`;
    expectRefusal(await call("POST", path, { token: acmeToken, rawBody: "{decision: approve" }), 400, "INVALID_INPUT");
    expectRefusal(
      await call("POST", path, {
        token: acmeToken,
        body: { decision: "approve", version: 1, actor: "raj@acme.test" },
        contentType: "text/plain",
      }),
      400,
      "INVALID_INPUT",
    );
    expectRefusal(await call("POST", path, { token: acmeToken, rawBody: "x".repeat(40_000) }), 413, "TOO_LARGE");
  });

  it("a failure inside is INTERNAL (500) with a generic message: nothing internal leaks", async () => {
    const { handoff } = await parkRefund();
    const broken = apiClient({
      getDb: async () => h.db,
      getRuntime: async () => {
        throw new Error("connection to 10.0.0.7:5432 refused (secret detail)");
      },
      rateLimit: () => ({ points: 100, windowSeconds: 60 }),
    });
    const answer = await broken("POST", `/handoffs/${handoff.id}/decision`, {
      token: acmeToken,
      body: { decision: "approve", version: 1, actor: "raj@acme.test" },
    });
    expectRefusal(answer, 500, "INTERNAL");
    expect(JSON.stringify(answer.body)).not.toMatch(/10\.0\.0\.7|secret|stack/);
    expect(answer.headers.get("x-request-id")).toBeTruthy();
  });
});

describe("GET /runs/{id}", () => {
  it("returns the run with its transcript as the model saw it, and nothing internal", async () => {
    const { out, handoff } = await parkRefund();
    await call("POST", `/handoffs/${handoff.id}/decision`, {
      token: acmeToken,
      body: { decision: "approve", version: 1, actor: "raj@acme.test" },
    });
    const run = await call("GET", `/runs/${out.runId}`, { token: acmeToken });
    expect(run.status).toBe(200);
    expect(run.body.run).toMatchObject({ id: out.runId, conversationId: out.conversationId, phase: "COMPLETED", policyVersion: 1 });
    expect(run.body.messages[0]).toMatchObject({ role: "user" });
    expect(run.body.transcript.length).toBeGreaterThan(3);
    expect(run.body.modelCalls.map((m: { stopReason: string }) => m.stopReason)).toContain("tool_use");
    expect(run.body.toolCalls.find((c: { name: string }) => c.name === "refund_order")).toMatchObject({
      status: "SUCCEEDED",
      gateDecision: "ask",
      review: expect.objectContaining({ decision: "approved" }),
    });
    expect(run.body.gateDecisions.some((g: { gate: string }) => g.gate === "refund_policy")).toBe(true);
    expect(run.body.effects).toHaveLength(1);
    expect(run.body.handoffs.map((x: { id: string }) => x.id)).toEqual([handoff.id]);
    const text = JSON.stringify(run.body);
    for (const internal of ["leaseOwner", "leaseExpiresAt", "idempotencyKey", "tenantId", "tokenHash"])
      expect(text).not.toContain(internal);
  });

  it("another shop's run is NOT_FOUND (404); a token without runs:read is FORBIDDEN", async () => {
    const globexHandoff = await parkGlobexRefund();
    expectRefusal(await call("GET", `/runs/${globexHandoff.runId}`, { token: acmeToken }), 404, "NOT_FOUND");
    expect((await call("GET", `/runs/${globexHandoff.runId}`, { token: globexToken })).status).toBe(200);
    const handoffsOnly = await tokenFor(h.acme.id, ["handoffs:read", "handoffs:decide"]);
    expectRefusal(await call("GET", `/runs/${globexHandoff.runId}`, { token: handoffsOnly }), 403, "FORBIDDEN");
  });
});

describe("GET /conversations", () => {
  it("lists the shop's conversations with their customer, latest run and pending handoffs; filters", async () => {
    const globexHandoff = await parkGlobexRefund();
    const { out } = await parkRefund();
    const all = await call("GET", "/conversations?limit=100", { token: acmeToken });
    expect(all.status).toBe(200);
    const mine = all.body.data.find((c: { id: string }) => c.id === out.conversationId);
    expect(mine).toMatchObject({
      status: "open",
      customer: { email: "dana@example.com", name: "Dana Reyes" },
      pendingHandoffs: 1,
      lastRun: { id: out.runId, phase: "WAITING_FOR_APPROVAL" },
    });
    expect(all.body.data.map((c: { id: string }) => c.id)).not.toContain(globexHandoff.conversationId);
    const sams = await call("GET", "/conversations?customer=SAM%40example.com", { token: acmeToken });
    expect(sams.body.data.every((c: { customer: { email: string } }) => c.customer.email === "sam@example.com")).toBe(true);
    expect((await call("GET", "/conversations?customer=nobody%40example.com", { token: acmeToken })).body.data).toEqual([]);
    const escalated = await call("GET", "/conversations?status=escalated", { token: acmeToken });
    expect(escalated.body.data.every((c: { status: string }) => c.status === "escalated")).toBe(true);
    expectRefusal(await call("GET", "/conversations?status=lost", { token: acmeToken }), 400, "INVALID_INPUT");
  });
});

// Demo history for the metrics page and the admin's what-if: a few weeks of acme's past conversations, written into
// the real tables the way the runtime writes them — transcripts with every tool_use answered by its tool_result in
// the next user message, each call judged by the real gates (lib/gates) on the facts of its moment, handoffs with
// the decisions people made and how long they took, refunds with their effect-ledger rows and the order's running
// total, model calls with their usage and cost (lib/model/cost), dead letters with their escalation.
//
// Deterministic (a seeded generator, dates relative to today at 15:00 UTC like the rest of the seed) and fast (a
// handful of multi-row inserts). It touches nothing the other demo data or the specs rely on: its customers and
// orders are its own, and every handoff it writes is decided, expired or resolved, so the open queue is unchanged.
import { createHash } from "node:crypto";
import { customerText } from "@/lib/agent/framing";
import { promptVersion } from "@/lib/agent/prompt";
import { evaluateGates } from "@/lib/gates/evaluate";
import { sql, type Transaction } from "kysely";
import { type DB, storeOf } from "@/lib/db/kysely";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { estimateCostMicros } from "@/lib/model/cost";
import { formatCents } from "@/lib/money";
import { policyRulesSchema } from "@/lib/policy/policy";
import { canonicalJson, idempotencyKey } from "@/lib/runtime/idempotency";
import { getTool, toolsVersion } from "@/lib/tools/registry";
import type { CallFacts } from "@/lib/tools/types";

/** How far back the history goes (days before today). */
export const HISTORY_DAYS = 27;
const MODEL = "claude-sonnet-4-5";
const DAY = 86_400_000;
const MIN = 60_000;

/** A small deterministic generator (mulberry32): the same history on every fresh database. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
  };
}

const HISTORY_CUSTOMERS = [
  ["morgan.blake@example.net", "Morgan Blake"],
  ["ines.duarte@example.net", "Inês Duarte"],
  ["tom.hughes@example.net", "Tom Hughes"],
  ["yuki.sato@example.net", "Yuki Sato"],
  ["lea.martin@example.net", "Léa Martin"],
  ["omar.haddad@example.net", "Omar Haddad"],
  ["grace.obi@example.net", "Grace Obi"],
  ["pavel.novak@example.net", "Pavel Novák"],
  ["ruth.cohen@example.net", "Ruth Cohen"],
  ["diego.ramos@example.net", "Diego Ramos"],
  ["ana.silva@example.net", "Ana Silva"],
  ["ben.carter@example.net", "Ben Carter"],
  ["mei.lin@example.net", "Mei Lin"],
  ["sven.berg@example.net", "Sven Berg"],
  ["nora.kelly@example.net", "Nora Kelly"],
  ["ali.demir@example.net", "Ali Demir"],
] as const;

const PRODUCTS = [
  ["TR-RUN", "Trail running shoes", 13900],
  ["PK-30", "Daypack 30L", 8900],
  ["SL-DWN", "Down sleeping bag", 42000],
  ["TN-1P", "One-person tent", 31000],
  ["JK-RN", "Rain jacket", 16500],
  ["ST-TI", "Titanium stove set", 7400],
  ["HL-400", "Headlamp 400lm", 4500],
  ["BT-GTX", "Hiking boots GTX", 21500],
  ["CH-CF", "Carbon camp chair", 9800],
  ["JK-SD2", "Expedition down parka", 78000],
] as const;

type Scenario = "status" | "refund" | "ask_human" | "policy_gap" | "dead_letter";
const SCENARIOS: ReadonlyArray<[Scenario, number]> = [
  ["status", 30],
  ["refund", 52],
  ["ask_human", 8],
  ["policy_gap", 6],
  ["dead_letter", 4],
];
/** What the reviewer did with a refund that needed approval. */
type Review = "approve" | "edit" | "deny" | "expire";
const REVIEWS: ReadonlyArray<[Review, number]> = [
  ["approve", 55],
  ["edit", 15],
  ["deny", 20],
  ["expire", 10],
];

function weighted<T>(rng: ReturnType<typeof generator>, table: ReadonlyArray<[T, number]>): T {
  const total = table.reduce((s, [, w]) => s + w, 0);
  let r = rng.next() * total;
  for (const [v, w] of table) if ((r -= w) < 0) return v;
  return table[table.length - 1]![0];
}

type Row = Record<string, unknown>;
type Block = Record<string, unknown>;

interface Staff {
  id: string;
  name: string;
  email: string;
  authorityLimitCents: number | null;
}

/**
 * Writes acme's history (nothing when it is already there). `now` anchors the dates (default: today 15:00 UTC).
 * Returns how many runs it wrote.
 */
export async function seedDemoHistory(prisma: PrismaClient, opts: { now?: Date } = {}): Promise<{ runs: number }> {
  const tenant = await prisma.tenant.findUnique({ where: { slug: "acme" } });
  if (!tenant) throw new Error("seedDemoHistory: the demo shop acme is not seeded");
  if (await prisma.run.findFirst({ where: { id: { startsWith: "hist_" } }, select: { id: true } })) return { runs: 0 };
  const policy = await prisma.policyVersion.findUniqueOrThrow({ where: { tenantId_version: { tenantId: tenant.id, version: 1 } } });
  const rules = policyRulesSchema.parse(policy.rules);
  const staffRows = await prisma.staffUser.findMany({ where: { tenantId: tenant.id } });
  const staff = (email: string): Staff => {
    const s = staffRows.find((r) => r.email === email);
    if (!s) throw new Error(`seedDemoHistory: staff ${email} missing`);
    return s;
  };
  const reviewers = [staff("rita@acme.test"), staff("raj@acme.test"), staff("sol@acme.test")];

  const today = opts.now ?? new Date();
  if (!opts.now) today.setUTCHours(15, 0, 0, 0);
  const rng = generator(20_261_201);
  const t = tenant.id;
  const id = (kind: string, n: number | string) => `hist_${kind}_${n}`;

  const rows = {
    customers: [] as Row[],
    orders: [] as Row[],
    items: [] as Row[],
    shipments: [] as Row[],
    conversations: [] as Row[],
    runs: [] as Row[],
    messages: [] as Row[],
    toolCalls: [] as Row[],
    gateDecisions: [] as Row[],
    modelCalls: [] as Row[],
    handoffs: [] as Row[],
    approvals: [] as Row[],
    effects: [] as Row[],
    refunds: [] as Row[],
    audits: [] as Row[],
  };

  const customers = HISTORY_CUSTOMERS.map(([email, name], i) => {
    const c = { id: id("cus", i), email, name };
    rows.customers.push({ ...c, tenantId: t, createdAt: new Date(today.getTime() - 60 * DAY) });
    return c;
  });
  /** Money the agent refunded on its own per customer, with when (the per-customer limit's window). */
  const autoRefunds = new Map<string, Array<{ at: number; cents: number }>>();

  const days: number[] = [];
  for (let d = HISTORY_DAYS; d >= 1; d--) days.push(d);
  let n = 0;
  for (const daysAgo of days) {
    const perDay = rng.int(3, 8);
    const starts = Array.from({ length: perDay }, () => rng.int(8 * 60, 20 * 60)).sort((a, b) => a - b);
    for (const minuteOfDay of starts) {
      const startedAt = new Date(today.getTime() - daysAgo * DAY - 15 * 60 * MIN + minuteOfDay * MIN);
      let scenario = weighted(rng, SCENARIOS);
      // The newest dead letter is the one a supervisor can retry in the demo: make sure there is one.
      if (daysAgo === 2 && minuteOfDay === starts[0]) scenario = "dead_letter";
      writeRun(n++, scenario, startedAt);
    }
  }

  function writeRun(i: number, scenario: Scenario, startedAt: Date) {
    const customer = rng.pick(customers);
    // Refunds: most are small; some fall in the approval band; a few ask for more than the ceiling (a parka).
    const band = rng.next();
    const ceiling = scenario === "refund" && band >= 0.9;
    const product = ceiling ? PRODUCTS[9] : rng.pick(PRODUCTS.slice(0, 9));
    const placedAt = new Date(startedAt.getTime() - rng.int(4, 20) * DAY);
    const order = {
      id: id("ord", i),
      number: `A-${7001 + i}`,
      totalCents: product[2],
      refundedCents: 0,
      status: "delivered" as const,
      customerId: customer.id,
    };
    const tracking = `1Z9A7E3W03${String(7001 + i).padStart(8, "0")}`;
    rows.orders.push({
      id: order.id,
      tenantId: t,
      customerId: customer.id,
      number: order.number,
      totalCents: order.totalCents,
      status: order.status,
      note: scenario === "refund" ? rng.pick(["arrived damaged", "wrong size sent", "item missing from parcel", null]) : null,
      shippingAddress: { line1: `${rng.int(2, 99)} Harbour Lane`, city: "Bristol", postalCode: "BS1 4DJ", country: "GB" },
      placedAt,
    });
    rows.items.push({ id: id("itm", i), orderId: order.id, sku: product[0], name: product[1], quantity: 1, unitPriceCents: product[2] });
    rows.shipments.push({
      id: id("shp", i),
      orderId: order.id,
      carrier: "UPS",
      tracking,
      status: "delivered",
      updatedAt: new Date(placedAt.getTime() + 3 * DAY),
    });

    const runId = id("run", i);
    const conversationId = id("conv", i);
    let clock = startedAt.getTime();
    const tick = (lo: number, hi: number) => {
      clock += rng.int(lo, hi);
      return new Date(clock);
    };
    let seq = 0;
    let turn = 0;
    const run = { inputTokens: 0, outputTokens: 0, costMicros: 0, activeMs: 0 };
    let previousCall: { name: string; canonicalInput: string } | null = null;
    let conversationStatus: "open" | "closed" = "closed";

    const message = (m: {
      role: "user" | "assistant";
      author: "CUSTOMER" | "AGENT" | "HARNESS";
      content: Block[];
      shown?: string;
      inTranscript?: boolean;
      at: Date;
    }) => {
      seq++;
      rows.messages.push({
        id: id(`msg${i}`, seq),
        tenantId: t,
        conversationId,
        runId,
        seq,
        role: m.role,
        author: m.author,
        content: m.content,
        inTranscript: m.inTranscript ?? true,
        shownToCustomer: m.shown !== undefined,
        displayText: m.shown ?? null,
        createdAt: m.at,
      });
      return seq;
    };
    /** One model call and the assistant message it returned (appended exactly as it came back). */
    const modelTurn = (content: Block[], stopReason: "tool_use" | "end_turn", shown?: string) => {
      turn++;
      const latencyMs = rng.int(900, 3600);
      const usage = {
        input_tokens: 420 + turn * rng.int(260, 520),
        output_tokens: rng.int(45, 240),
        cache_read_input_tokens: 2100,
        cache_creation_input_tokens: turn === 1 ? 2100 : 0,
      };
      const costMicros = estimateCostMicros(MODEL, usage);
      run.inputTokens += usage.input_tokens;
      run.outputTokens += usage.output_tokens;
      run.costMicros += costMicros;
      run.activeMs += latencyMs;
      const at = tick(latencyMs, latencyMs + 400);
      rows.modelCalls.push({
        id: id(`mc${i}`, turn),
        tenantId: t,
        runId,
        turn,
        model: MODEL,
        stopReason,
        inputTokens: usage.input_tokens,
        outputTokens: usage.output_tokens,
        cacheReadTokens: usage.cache_read_input_tokens,
        cacheWriteTokens: usage.cache_creation_input_tokens,
        costMicros,
        maxTokens: 1024,
        latencyMs,
        throughSeq: seq,
        response: { content, stop_reason: stopReason, usage },
        createdAt: at,
      });
      message({ role: "assistant", author: "AGENT", content, shown, at });
      return at;
    };
    /** A proposed call judged by the real gates, as the runtime judges it (verified customer, this policy). */
    const gate = (name: string, input: Record<string, unknown>, facts: CallFacts, at: Date) => {
      const tool = getTool(name);
      const evaluation = evaluateGates({
        toolName: name,
        input,
        canonicalInput: canonicalJson(input),
        facts,
        isKnownTool: !!tool,
        accountAction: tool?.accountAction ?? true,
        sideEffect: tool?.sideEffect ?? true,
        state: {
          verifiedCustomerId: name === "verify_customer" ? null : customer.id,
          verificationExpiresAt: new Date(startedAt.getTime() + rules.verificationTtlMinutes * MIN),
          verificationLevel: "order_email",
          now: at,
          previousCall,
        },
        policy: { version: policy.version, rules },
      });
      previousCall = { name, canonicalInput: canonicalJson(input) };
      return evaluation;
    };
    const call = (c: {
      toolUseId: string;
      name: string;
      input: Record<string, unknown>;
      effectiveInput?: Record<string, unknown>;
      status: string;
      evaluation: ReturnType<typeof evaluateGates>;
      facts: CallFacts;
      result: unknown;
      isError?: boolean;
      review?: unknown;
      decidedById?: string | null;
      messageSeq: number;
      at: Date;
      updatedAt: Date;
    }) => {
      const callId = id(`call${i}`, c.toolUseId.slice(-2));
      const tool = getTool(c.name);
      const { verdict } = c.evaluation;
      const key = tool?.sideEffect
        ? idempotencyKey({ tenantId: t, runId, toolUseId: c.toolUseId, toolName: c.name, input: c.effectiveInput ?? c.input })
        : null;
      rows.toolCalls.push({
        id: callId,
        tenantId: t,
        runId,
        toolUseId: c.toolUseId,
        name: c.name,
        input: c.input,
        effectiveInput: c.effectiveInput ?? c.input,
        status: c.status,
        gateDecision: verdict.decision,
        gateReason: `${verdict.gate}: ${verdict.reason}`,
        idempotencyKey: key,
        attempts: c.status === "SUCCEEDED" || c.status === "FAILED" ? 1 : 0,
        result: c.result,
        review: c.review ?? null,
        gateFacts: c.facts,
        decidedById: c.decidedById ?? null,
        isError: c.isError ?? false,
        position: 0,
        messageSeq: c.messageSeq,
        createdAt: c.at,
        updatedAt: c.updatedAt,
      });
      for (const [k, r] of c.evaluation.records.entries()) {
        rows.gateDecisions.push({
          id: id(`gd${i}`, `${c.toolUseId.slice(-2)}_${k}`),
          tenantId: t,
          runId,
          toolCallId: callId,
          toolUseId: c.toolUseId,
          gate: r.gate,
          decision: r.decision,
          reason: r.reason,
          policyVersion: policy.version,
          createdAt: c.at,
        });
      }
      return { callId, key };
    };
    const toolResult = (toolUseId: string, result: unknown, isError: boolean, at: Date) =>
      message({
        role: "user",
        author: "HARNESS",
        content: [{ type: "tool_result", tool_use_id: toolUseId, content: JSON.stringify(result), ...(isError ? { is_error: true } : {}) }],
        at,
      });
    const handoffPayload = (p: {
      trigger: string;
      asked: string;
      reason: string;
      rootCause: string;
      recommendedAction: string;
      amountCents: number | null;
      tried: string[];
      extra?: Record<string, unknown>;
    }) => ({
      customer: { id: customer.id, name: customer.name, email: customer.email },
      asked: p.asked,
      tried: p.tried,
      rootCause: p.rootCause,
      amountCents: p.amountCents,
      recommendedAction: p.recommendedAction,
      reason: p.reason,
      trigger: p.trigger,
      orderNumber: order.number,
      order: {
        number: order.number,
        status: order.status,
        totalCents: order.totalCents,
        refundedCents: order.refundedCents,
        shipment: { carrier: "UPS", tracking, status: "delivered" },
      },
      ...p.extra,
    });

    // The customer writes; the agent verifies them first (every account action needs it).
    const asked =
      scenario === "status"
        ? rng.pick([
            `Where is my order ${order.number}?`,
            `Has ${order.number} been delivered yet?`,
            `Can you check the status of ${order.number}?`,
          ])
        : scenario === "refund"
          ? rng.pick([
              `My order ${order.number} arrived damaged, I'd like a refund.`,
              `The ${product[1].toLowerCase()} from ${order.number} is faulty, can I get my money back?`,
              `Part of ${order.number} was missing — please refund me.`,
            ])
          : scenario === "ask_human"
            ? rng.pick([`I want to talk to a real person about ${order.number}.`, `Please put me through to someone from your team.`])
            : scenario === "policy_gap"
              ? `Can you price-match ${order.number}? I saw the ${product[1].toLowerCase()} cheaper elsewhere.`
              : `Where is my order ${order.number}?`;
    message({
      role: "user",
      author: "CUSTOMER",
      content: [{ type: "text", text: customerText(asked) }],
      shown: asked,
      at: new Date(clock),
    });

    let phase: "COMPLETED" | "DEAD_LETTER" = "COMPLETED";
    let outcome = "end_turn";
    let lastStopReason: string | null = "end_turn";

    if (scenario === "dead_letter") {
      // The model could not be reached: every attempt failed, the run was dead-lettered with an escalation.
      for (let a = 1; a <= rules.budgets.maxRequestAttempts; a++) {
        const at = tick(2_000 * a, 4_000 * a);
        rows.modelCalls.push({
          id: id(`mc${i}`, `e${a}`),
          tenantId: t,
          runId,
          turn: 1,
          model: MODEL,
          stopReason: null,
          error: "server_error: InternalServerError: 529 Overloaded",
          maxTokens: 1024,
          latencyMs: 0,
          throughSeq: seq,
          createdAt: at,
        });
      }
      const reason = `The model could not be reached (server_error) after ${rules.budgets.maxRequestAttempts} attempt(s).`;
      const notice =
        "I'm sorry — I couldn't finish this on my own. I've passed your conversation to our team with a summary, and a person will follow up here.";
      const at = tick(200, 600);
      message({ role: "assistant", author: "HARNESS", content: [{ type: "text", text: notice }], shown: notice, inTranscript: false, at });
      const person = rng.pick(reviewers);
      rows.handoffs.push({
        id: id("hand", i),
        tenantId: t,
        conversationId,
        runId,
        kind: "ESCALATION",
        status: "RESOLVED",
        version: 2,
        payload: handoffPayload({
          trigger: "no_progress",
          asked,
          reason,
          rootCause: "InternalServerError: 529 Overloaded",
          recommendedAction: "Read the summary, take over the conversation and finish the customer's request.",
          amountCents: null,
          tried: [],
        }),
        decidedById: person.id,
        decision: "resolved",
        decisionReason: "Answered the customer by email.",
        decidedAt: new Date(at.getTime() + rng.int(20, 240) * MIN),
        createdAt: at,
        updatedAt: at,
      });
      phase = "DEAD_LETTER";
      outcome = `no_progress: ${reason}`;
      lastStopReason = null;
      conversationStatus = "open";
    } else {
      const verifyInput = { email: customer.email, order_number: order.number };
      let at = modelTurn(
        [
          { type: "text", text: "I can help with that. Let me confirm your details first." },
          { type: "tool_use", id: `toolu_h${i}_01`, name: "verify_customer", input: verifyInput },
        ],
        "tool_use",
      );
      const verifyFacts: CallFacts = { summary: `Verify ${customer.email}` };
      const verifyEval = gate("verify_customer", verifyInput, verifyFacts, at);
      const verified = { verified: true, customer_name: customer.name, level: "order_email" };
      call({
        toolUseId: `toolu_h${i}_01`,
        name: "verify_customer",
        input: verifyInput,
        status: "SUCCEEDED",
        evaluation: verifyEval,
        facts: verifyFacts,
        result: verified,
        messageSeq: seq,
        at,
        updatedAt: at,
      });
      rows.audits.push({
        id: id(`aud${i}`, "v"),
        tenantId: t,
        runId,
        actor: "harness",
        action: "customer.verified",
        subject: customer.id,
        data: {},
        createdAt: at,
      });
      toolResult(`toolu_h${i}_01`, verified, false, tick(80, 300));

      if (scenario === "status") {
        const input = { order_number: order.number };
        at = modelTurn([{ type: "tool_use", id: `toolu_h${i}_02`, name: "lookup_order", input }], "tool_use");
        const facts: CallFacts = {
          orderNumber: order.number,
          customerId: customer.id,
          orderStatus: order.status,
          summary: `Look up ${order.number}`,
        };
        const result = {
          order_number: order.number,
          status: "delivered",
          total: formatCents(order.totalCents),
          shipment: { carrier: "UPS", tracking, status: "delivered" },
        };
        call({
          toolUseId: `toolu_h${i}_02`,
          name: "lookup_order",
          input,
          status: "SUCCEEDED",
          evaluation: gate("lookup_order", input, facts, at),
          facts,
          result,
          messageSeq: seq,
          at,
          updatedAt: at,
        });
        toolResult(`toolu_h${i}_02`, result, false, tick(80, 300));
        const reply = `${order.number} was delivered by UPS (tracking ${tracking}). Is there anything else I can help with?`;
        modelTurn([{ type: "text", text: reply }], "end_turn", reply);
      } else if (scenario === "ask_human" || scenario === "policy_gap") {
        const trigger = scenario === "ask_human" ? "customer_request" : "policy_gap";
        const input = {
          trigger,
          summary: asked,
          tried: "",
          root_cause: trigger === "policy_gap" ? "Price matching is not covered by the shop's policy." : "",
          recommended_action: trigger === "policy_gap" ? "Decide whether to offer a goodwill gesture." : "Reply to the customer.",
          order_number: order.number,
        };
        at = modelTurn([{ type: "tool_use", id: `toolu_h${i}_02`, name: "escalate_to_human", input }], "tool_use");
        const facts: CallFacts = { orderNumber: order.number, summary: `Escalate: ${trigger}` };
        const result = {
          status: "escalated",
          message: "A person from the team will take over this conversation. Tell the customer honestly; do not promise an outcome.",
          handoff_id: id("hand", i),
        };
        call({
          toolUseId: `toolu_h${i}_02`,
          name: "escalate_to_human",
          input,
          status: "SUCCEEDED",
          evaluation: gate("escalate_to_human", input, facts, at),
          facts,
          result,
          messageSeq: seq,
          at,
          updatedAt: at,
        });
        const person = rng.pick(reviewers);
        const escalation = getTool("escalate_to_human")!.escalation!(input as never) as {
          reason: string;
          recommendedAction: string;
          rootCause: string;
        };
        rows.handoffs.push({
          id: id("hand", i),
          tenantId: t,
          conversationId,
          runId,
          kind: "ESCALATION",
          status: "RESOLVED",
          version: 2,
          payload: handoffPayload({
            trigger,
            asked,
            reason: escalation.reason,
            rootCause: escalation.rootCause,
            recommendedAction: escalation.recommendedAction,
            amountCents: null,
            tried: [],
          }),
          decidedById: person.id,
          decision: "resolved",
          decisionReason: "Answered the customer.",
          decidedAt: new Date(at.getTime() + rng.int(5, 180) * MIN),
          createdAt: at,
          updatedAt: at,
        });
        rows.audits.push({
          id: id(`aud${i}`, "e"),
          tenantId: t,
          runId,
          actor: "agent",
          action: "handoff.escalated",
          subject: id("hand", i),
          data: { trigger },
          createdAt: at,
        });
        toolResult(`toolu_h${i}_02`, result, false, tick(80, 300));
        const reply = "I've passed your conversation to our team with a summary; a person will follow up here shortly.";
        modelTurn([{ type: "text", text: reply }], "end_turn", reply);
      } else {
        writeRefund();
      }

      function writeRefund() {
        const cents = ceiling
          ? rng.int(560, 760) * 100
          : band < 0.45
            ? Math.min(order.totalCents, rng.int(12, 98) * 100 + rng.pick([0, 50, 99]))
            : Math.min(order.totalCents, rng.int(110, 390) * 100);
        const input = {
          order_number: order.number,
          amount_cents: cents,
          reason: asked.includes("damaged") ? "arrived damaged" : "customer request",
        };
        const toolUseId = `toolu_h${i}_02`;
        const proposedAt = modelTurn([{ type: "tool_use", id: toolUseId, name: "refund_order", input }], "tool_use");
        const window = rules.refund.autoPerCustomerWindowDays * DAY;
        const customerAuto = (autoRefunds.get(customer.id) ?? [])
          .filter((r) => r.at > proposedAt.getTime() - window)
          .reduce((s, r) => s + r.cents, 0);
        const facts: CallFacts = {
          orderNumber: order.number,
          amountCents: cents,
          customerId: customer.id,
          orderStatus: order.status,
          orderTotalCents: order.totalCents,
          refundableCents: order.totalCents - order.refundedCents,
          totals: {
            orderDoneCents: order.refundedCents,
            orderPendingCents: 0,
            sameTurnCents: 0,
            customerAutoCents: customerAuto,
            customerPendingAutoCents: 0,
            windowDays: rules.refund.autoPerCustomerWindowDays,
          },
          summary: `Refund ${formatCents(cents)} on ${order.number}`,
        };
        const evaluation = gate("refund_order", input, facts, proposedAt);
        const { verdict } = evaluation;
        const refundResult = (amount: number, key: string) => ({
          status: "refunded",
          refund_id: id("rfd", i),
          order_number: order.number,
          amount_cents: amount,
          amount: formatCents(amount),
          idempotency: key.slice(0, 8),
        });
        const execute = (amount: number, callId: string, key: string, at: Date, executedInput: Record<string, unknown>) => {
          const result = refundResult(amount, key);
          order.refundedCents += amount;
          rows.refunds.push({
            id: id("rfd", i),
            tenantId: t,
            orderId: order.id,
            amountCents: amount,
            reason: String(executedInput.reason),
            idempotencyKey: key,
            createdAt: at,
          });
          rows.effects.push({
            id: id("eff", i),
            tenantId: t,
            runId,
            toolCallId: callId,
            toolName: "refund_order",
            idempotencyKey: key,
            input: executedInput,
            outcome: result,
            createdAt: at,
          });
          rows.audits.push({
            id: id(`aud${i}`, "f"),
            tenantId: t,
            runId,
            actor: "harness",
            action: "effect.refund",
            subject: order.number,
            data: { amount_cents: amount },
            createdAt: at,
          });
          return result;
        };

        if (verdict.decision === "allow") {
          const at = tick(300, 1200);
          const key = idempotencyKey({ tenantId: t, runId, toolUseId, toolName: "refund_order", input });
          const result = execute(cents, id(`call${i}`, "02"), key, at, input);
          call({
            toolUseId,
            name: "refund_order",
            input,
            status: "SUCCEEDED",
            evaluation,
            facts,
            result,
            messageSeq: seq,
            at: proposedAt,
            updatedAt: at,
          });
          autoRefunds.set(customer.id, [...(autoRefunds.get(customer.id) ?? []), { at: at.getTime(), cents }]);
          toolResult(toolUseId, result, false, tick(50, 200));
          const reply = `Done — I've refunded ${formatCents(cents)} on ${order.number}. It should reach your card within 5–10 business days.`;
          modelTurn([{ type: "text", text: reply }], "end_turn", reply);
          return;
        }
        if (verdict.decision === "deny") {
          if (!verdict.escalate) throw new Error(`seedDemoHistory: a refund of ${cents} on ${order.number} was refused: ${verdict.reason}`);
          // Over the ceiling: refused, and the escalation opened by the harness itself.
          const result = { error_category: "business_rule", is_retryable: false, message: verdict.reason, gate: verdict.gate };
          call({
            toolUseId,
            name: "refund_order",
            input,
            status: "DENIED",
            evaluation,
            facts,
            result,
            isError: true,
            messageSeq: seq,
            at: proposedAt,
            updatedAt: proposedAt,
          });
          const person = rng.pick(reviewers.slice(1));
          rows.handoffs.push({
            id: id("hand", i),
            tenantId: t,
            conversationId,
            runId,
            toolCallId: null,
            kind: "ESCALATION",
            status: "RESOLVED",
            version: 2,
            amountCents: cents,
            payload: handoffPayload({
              trigger: "policy_ceiling",
              asked,
              reason: verdict.reason,
              rootCause: "The refund asked for is above what the policy allows without a person.",
              recommendedAction: "Review the case and decide on the refund with the customer.",
              amountCents: cents,
              tried: [`Refund ${formatCents(cents)} on ${order.number} (refused by policy)`],
              extra: { refusedCall: { toolName: "refund_order", input, amountCents: cents } },
            }),
            decidedById: person.id,
            decision: "resolved",
            decisionReason: "Arranged a return instead.",
            decidedAt: new Date(proposedAt.getTime() + rng.int(30, 600) * MIN),
            createdAt: proposedAt,
            updatedAt: proposedAt,
          });
          rows.audits.push({
            id: id(`aud${i}`, "e"),
            tenantId: t,
            runId,
            actor: "harness",
            action: "handoff.escalated",
            subject: id("hand", i),
            data: { trigger: "policy_ceiling" },
            createdAt: proposedAt,
          });
          toolResult(toolUseId, result, true, tick(50, 200));
          const reply = `A refund of ${formatCents(cents)} is more than I can arrange here, so I've passed your request to our team; a person will follow up shortly. Nothing has been refunded yet.`;
          modelTurn([{ type: "text", text: reply }], "end_turn", reply);
          return;
        }
        // ask: parked for a person. How long they took: mostly minutes, sometimes hours.
        const review = weighted(rng, REVIEWS);
        const waitMin = rng.next() < 0.8 ? rng.int(2, 55) : rng.int(60, 600);
        const expiresAt = new Date(proposedAt.getTime() + rules.approvalTtlHours * 60 * MIN);
        const decidedAt = review === "expire" ? expiresAt : new Date(proposedAt.getTime() + waitMin * MIN);
        const limitOk = (s: Staff) => s.authorityLimitCents === null || s.authorityLimitCents >= cents;
        const person = rng.pick(reviewers.filter(limitOk));
        const handoffId = id("hand", i);
        const callId = id(`call${i}`, "02");
        const base = {
          id: handoffId,
          tenantId: t,
          conversationId,
          runId,
          toolCallId: callId,
          kind: "APPROVAL",
          version: 2,
          amountCents: cents,
          requiredApprovals: verdict.requiredApprovals ?? 1,
          expiresAt,
          payload: handoffPayload({
            trigger: "approval_required",
            asked,
            reason: verdict.reason,
            rootCause: "The refund falls in the band that needs a person's approval.",
            recommendedAction: `Approve: refund ${formatCents(cents)} on ${order.number}.`,
            amountCents: cents,
            tried: [`Verified ${customer.email}`, `Proposed a refund of ${formatCents(cents)} on ${order.number}`],
            extra: {
              toolName: "refund_order",
              toolUseId,
              proposedInput: input,
              rule: { gate: verdict.gate, reason: verdict.reason, policyVersion: policy.version },
            },
          }),
          createdAt: proposedAt,
          updatedAt: decidedAt,
        };
        rows.audits.push({
          id: id(`aud${i}`, "a"),
          tenantId: t,
          runId,
          actor: "harness",
          action: "handoff.approval_requested",
          subject: handoffId,
          data: { amount_cents: cents },
          createdAt: proposedAt,
        });
        clock = decidedAt.getTime();
        let reply: string;
        if (review === "approve" || review === "edit") {
          const amount = review === "edit" ? Math.max(500, Math.round((cents * rng.pick([0.5, 0.6, 0.75])) / 100) * 100) : cents;
          const executed = review === "edit" ? { ...input, amount_cents: amount } : input;
          const key = idempotencyKey({ tenantId: t, runId, toolUseId, toolName: "refund_order", input: executed });
          const doneAt = tick(300, 1500);
          const result = execute(amount, callId, key, doneAt, executed);
          const reviewRecord = {
            decision: review === "edit" ? "edit" : "approve",
            by: person.name,
            reason: review === "edit" ? "Partial refund: the item can be repaired." : null,
            original_input: input,
            executed_input: executed,
          };
          call({
            toolUseId,
            name: "refund_order",
            input,
            effectiveInput: executed,
            status: "SUCCEEDED",
            evaluation,
            facts,
            result,
            review: reviewRecord,
            decidedById: person.id,
            messageSeq: seq,
            at: proposedAt,
            updatedAt: doneAt,
          });
          rows.handoffs.push({
            ...base,
            status: review === "edit" ? "EDITED" : "APPROVED",
            decidedById: person.id,
            decision: review === "edit" ? "edit" : "approve",
            decisionReason: reviewRecord.reason,
            ...(review === "edit" ? { editedInput: executed, amountCents: amount } : {}),
            decidedAt,
          });
          rows.approvals.push({ id: id("appr", i), handoffId, staffId: person.id, version: 1, createdAt: decidedAt });
          rows.audits.push({
            id: id(`aud${i}`, "d"),
            tenantId: t,
            runId,
            actor: person.email,
            action: review === "edit" ? "handoff.edited" : "handoff.approved",
            subject: handoffId,
            data: reviewRecord,
            createdAt: decidedAt,
          });
          toolResult(
            toolUseId,
            review === "edit"
              ? { ...result, note: `A reviewer changed the amount from ${formatCents(cents)} to ${formatCents(amount)}.` }
              : result,
            false,
            tick(50, 200),
          );
          reply =
            review === "edit"
              ? `Our team reviewed your request and refunded ${formatCents(amount)} on ${order.number}.`
              : `Good news — your refund of ${formatCents(cents)} on ${order.number} was approved and has been issued.`;
        } else {
          const expired = review === "expire";
          const reason = expired
            ? null
            : rng.pick(["Outside the return window.", "The parcel was signed for in good condition.", "Already replaced."]);
          const result = expired
            ? {
                error_category: "business_rule",
                is_retryable: false,
                message: "The approval expired before anyone decided; the refund was NOT made.",
                expired: true,
              }
            : {
                error_category: "permission",
                is_retryable: false,
                message: `A reviewer denied this refund: ${reason} The refund was NOT made.`,
              };
          call({
            toolUseId,
            name: "refund_order",
            input,
            status: expired ? "EXPIRED" : "DENIED",
            evaluation,
            facts,
            result,
            isError: true,
            review: { decision: expired ? "expired" : "deny", by: expired ? null : person.name, reason, original_input: input },
            decidedById: expired ? null : person.id,
            messageSeq: seq,
            at: proposedAt,
            updatedAt: decidedAt,
          });
          rows.handoffs.push({
            ...base,
            status: expired ? "EXPIRED" : "DENIED",
            decidedById: expired ? null : person.id,
            decision: expired ? "expired" : "deny",
            decisionReason: reason,
            decidedAt,
          });
          rows.audits.push({
            id: id(`aud${i}`, "d"),
            tenantId: t,
            runId,
            actor: expired ? "harness" : person.email,
            action: expired ? "handoff.expired" : "handoff.denied",
            subject: handoffId,
            data: { reason },
            createdAt: decidedAt,
          });
          toolResult(toolUseId, result, true, tick(50, 200));
          reply = expired
            ? `I'm sorry — your refund request on ${order.number} wasn't reviewed in time, so nothing has been refunded. Please write again and we'll look at it.`
            : `I'm sorry — our team reviewed your request and couldn't approve a refund on ${order.number}: ${reason}`;
        }
        modelTurn([{ type: "text", text: reply }], "end_turn", reply);
      }
    }

    const endedAt = new Date(clock);
    rows.runs.push({
      id: runId,
      tenantId: t,
      conversationId,
      phase,
      turnsUsed: turn,
      maxTurns: rules.budgets.maxTurns,
      requestAttempts: phase === "DEAD_LETTER" ? rules.budgets.maxRequestAttempts : 0,
      inputTokens: run.inputTokens,
      outputTokens: run.outputTokens,
      tokenBudget: rules.budgets.tokenBudget,
      costMicros: run.costMicros,
      activeMs: run.activeMs,
      policyVersion: policy.version,
      promptVersion,
      toolsVersion,
      model: MODEL,
      lastStopReason,
      outcome,
      startedAt,
      endedAt,
      updatedAt: endedAt,
    });
    rows.conversations.push({
      id: conversationId,
      tenantId: t,
      tokenHash: createHash("sha256").update(`history:${conversationId}`).digest("hex"),
      status: conversationStatus,
      customerId: null,
      verifiedCustomerId: scenario === "dead_letter" ? null : customer.id,
      verifiedAt: scenario === "dead_letter" ? null : startedAt,
      verificationExpiresAt: scenario === "dead_letter" ? null : new Date(startedAt.getTime() + rules.verificationTtlMinutes * MIN),
      verificationLevel: scenario === "dead_letter" ? null : "order_email",
      messageCount: seq,
      createdAt: startedAt,
      updatedAt: endedAt,
    });
    // The order as the refunds left it.
    const orderRow = rows.orders[rows.orders.length - 1]!;
    orderRow.refundedCents = order.refundedCents;
  }

  // Bulk inserts: each table's rows travel as one jsonb parameter (rows with the same columns per statement, so
  // columns a row leaves out keep their defaults).
  const spend = new Map<string, number>();
  for (const m of rows.modelCalls) {
    const day = (m.createdAt as Date).toISOString().slice(0, 10);
    spend.set(day, (spend.get(day) ?? 0) + Number(m.costMicros ?? 0));
  }
  // The shop's model spend per day (the daily budget reads today's only; history is in the past).
  const tenantSpend = [...spend].map(([d, micros]) => ({ tenantId: t, day: d, shard: 0, costMicros: micros }));
  await storeOf(prisma)
    .transaction()
    .execute(async (tx) => {
      await insertRows(tx, "Customer", rows.customers);
      await insertRows(tx, "Order", rows.orders);
      await insertRows(tx, "OrderItem", rows.items);
      await insertRows(tx, "Shipment", rows.shipments);
      await insertRows(tx, "Conversation", rows.conversations);
      await insertRows(tx, "Run", rows.runs);
      await insertRows(tx, "Message", rows.messages);
      await insertRows(tx, "ToolCall", rows.toolCalls);
      await insertRows(tx, "GateDecision", rows.gateDecisions);
      await insertRows(tx, "ModelCall", rows.modelCalls);
      await insertRows(tx, "Handoff", rows.handoffs);
      await insertRows(tx, "HandoffApproval", rows.approvals);
      await insertRows(tx, "Refund", rows.refunds);
      await insertRows(tx, "EffectLedger", rows.effects);
      await insertRows(tx, "AuditEvent", rows.audits);
      await insertRows(tx, "TenantSpend", tenantSpend);
    });
  return { runs: rows.runs.length };
}

/** INSERTs rows into `table` from one jsonb parameter, one statement per distinct set of columns. */
async function insertRows(db: Transaction<DB>, table: string, rows: Row[]): Promise<void> {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const key = Object.keys(r).sort().join(",");
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  for (const [key, group] of groups) {
    const cols = sql.join(key.split(",").map((c) => sql.ref(c)));
    await sql`INSERT INTO ${sql.table(table)} (${cols})
      SELECT ${cols} FROM jsonb_populate_recordset(NULL::${sql.table(table)}, ${JSON.stringify(group)}::jsonb)`.execute(db);
  }
}

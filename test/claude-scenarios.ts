/**
 * The demo scenarios played against Claude by `npm run record` and replayed from test/fixtures/claude/ by
 * test/runtime/claude-replay.test.ts: the same steps through the real runtime, so a fixture's requests are what the
 * runtime sends.
 */
import type { DraftSink } from "@/lib/live/drafts";
import type { SensitiveKind } from "@/lib/model/replay";
import { decide, say } from "@/lib/operator/commands";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { runWorkerOnce } from "@/lib/runtime/worker";

export type ScenarioStep =
  | { say: string; customer?: string }
  /** A reviewer approves the conversation's pending handoff. */
  | { approve: string }
  /** The run waits for a retry: wait until it is due, then a worker takes it. */
  | { worker: true };

export interface ClaudeScenario {
  name: string;
  title: string;
  /** Streamed like the widget (the runtime streams when it has a draft sink), or plain JSON. */
  stream: boolean;
  /** The SDK's own retries. */
  maxRetries: number;
  /** false: the API cannot be made to do this on demand (errors, a refusal) — the fixture is hand-written only. */
  recordable: boolean;
  steps: ScenarioStep[];
}

const DANA = "dana@example.com";

export const CLAUDE_SCENARIOS: ClaudeScenario[] = [
  {
    name: "status-question",
    title: "a signed-in customer asks where an order is",
    stream: false,
    maxRetries: 0,
    recordable: true,
    steps: [{ say: "Where is my order A-1001?", customer: DANA }],
  },
  {
    name: "refund-auto",
    title: "a refund under the automatic limit, after verifying the customer from the chat",
    stream: true,
    maxRetries: 0,
    recordable: true,
    steps: [{ say: "Hi, it's dana@example.com. Please refund order A-1001, the zipper broke after a week." }],
  },
  {
    name: "refund-approval",
    title: "a refund over the automatic limit parks for approval, a reviewer approves, the run resumes",
    stream: true,
    maxRetries: 0,
    recordable: true,
    steps: [{ say: "A-1002 arrived torn. I'd like my $250 back please.", customer: DANA }, { approve: "rita@acme.test" }],
  },
  {
    name: "lost-parcel",
    title: "a lost parcel worth more than any automatic limit is escalated to a person",
    stream: true,
    maxRetries: 0,
    recordable: true,
    steps: [{ say: "My order A-1003 never arrived and the tracking says lost. I want the full $820 back today.", customer: DANA }],
  },
  {
    name: "stop-reasons",
    title: "a reply cut at max_tokens is retried with the larger limit, then the model refuses",
    stream: false,
    maxRetries: 0,
    recordable: false,
    steps: [{ say: "Can you tell me about order A-1001?", customer: DANA }],
  },
  {
    name: "overloaded",
    title: "529 retried by the SDK, then 429 after its retries: the run waits, a worker finishes it",
    stream: true,
    maxRetries: 1,
    recordable: false,
    steps: [{ say: "Where is my order A-1001?", customer: DANA }, { worker: true }],
  },
];

export function scenarioNamed(name: string): ClaudeScenario {
  const s = CLAUDE_SCENARIOS.find((x) => x.name === name);
  if (!s) throw new Error(`no Claude scenario named ${name}`);
  return s;
}

export interface PlayedScenario {
  conversationId: string;
  runIds: string[];
  /** Every reply the customer was shown, in order. */
  replies: string[];
  /** What the draft sink was shown while the model wrote (streamed scenarios). */
  drafts: string[];
  phases: Array<string | null>;
}

/** Plays a scenario through the real runtime (say / decide / the worker) with `deps`' model. */
export async function playScenario(deps: RuntimeDeps, scenario: ClaudeScenario): Promise<PlayedScenario> {
  const drafts: string[] = [];
  const sink: DraftSink = { show: (_ref, text) => drafts.push(text), end: () => {} };
  const d: RuntimeDeps = scenario.stream ? { ...deps, drafts: sink } : { ...deps, drafts: undefined };
  const played: PlayedScenario = { conversationId: "", runIds: [], replies: [], drafts, phases: [] };
  for (const step of scenario.steps) {
    if ("say" in step) {
      const out = await say(d, {
        tenant: "acme",
        text: step.say,
        conversationId: played.conversationId || undefined,
        customerEmail: played.conversationId ? undefined : step.customer,
      });
      played.conversationId = out.conversationId;
      if (out.runId) played.runIds.push(out.runId);
      played.replies.push(...out.replies.map((r) => r.text));
      played.phases.push(out.phase);
    } else if ("approve" in step) {
      const pending = await d.db.handoff.findFirst({ where: { conversationId: played.conversationId, status: "PENDING" } });
      if (!pending) throw new Error(`${scenario.name}: nothing waits for approval`);
      const out = await decide(d, { handoffId: pending.id, staffEmail: step.approve, decision: "approve" });
      played.replies.push(...out.replies.map((r) => r.text));
      played.phases.push(out.phase);
    } else {
      const runId = played.runIds[played.runIds.length - 1];
      const run = await d.db.run.findUniqueOrThrow({ where: { id: runId } });
      const wait = (run.nextAttemptAt?.getTime() ?? Date.now()) - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait + 5));
      const before = (await d.db.conversation.findUniqueOrThrow({ where: { id: played.conversationId } })).messageCount;
      await runWorkerOnce(d);
      const shown = await d.db.message.findMany({
        where: { conversationId: played.conversationId, seq: { gt: before }, shownToCustomer: true },
        orderBy: { seq: "asc" },
      });
      played.replies.push(...shown.map((m) => m.displayText ?? ""));
      played.phases.push((await d.db.run.findUniqueOrThrow({ where: { id: runId } })).phase);
    }
  }
  return played;
}

/** The personal data a recording may carry: the shop's customers and staff (names word by word), and addresses. */
export async function sensitiveValues(db: RuntimeDeps["db"]): Promise<Array<{ value: string; kind: SensitiveKind }>> {
  const out: Array<{ value: string; kind: SensitiveKind }> = [];
  const people = [...(await db.customer.findMany()), ...(await db.staffUser.findMany())];
  for (const p of people) {
    out.push({ value: p.email, kind: "email" });
    for (const word of (p.name ?? "").split(/\s+/)) out.push({ value: word, kind: "name" });
  }
  for (const o of await db.order.findMany({ select: { shippingAddress: true } })) {
    const a = o.shippingAddress as { line1?: string; line2?: string; city?: string; postalCode?: string };
    for (const v of [a.line1, a.line2, a.city, a.postalCode]) if (v) out.push({ value: v, kind: "address" });
  }
  return out;
}

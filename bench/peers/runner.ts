/**
 * The measurement loop of `npm run bench:peers`, the same for every system: a system under test only says how to
 * take one customer turn, how to park a refund for approval and how to approve it; this file times it, counts what
 * it wrote, and runs the exactly-once probes. Each peer's runner (langgraph.ts, openai-agents.ts) serves it over
 * stdin/stdout; the product's side (scripts/bench-peers.ts) calls it in-process. No imports but scenario.ts.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type ApprovalSample,
  between,
  customerText,
  orderForTurn,
  type ProbeOutcome,
  type ProbeResult,
  type Queryable,
  REFUND_INPUT,
  REFUND_REPLY,
  replyText,
  type RunnerCommand,
  type RunnerReply,
  type TurnSample,
  writeMark,
  writtenSince,
} from "./scenario";

/** A scripted model reply, in no system's format: each system turns it into its own model's message. */
export type ScriptedReply = { toolCall: { name: string; input: Record<string, unknown> } } | { text: string };

/** Where the system under test records the time spent in its model and in its tool bodies. */
export interface Clock {
  modelMs: number;
  modelCalls: number;
  toolMs: number;
  /** performance.now() when the last model request started */
  lastRequestStartedAt: number;
}

export const newClock = (): Clock => ({ modelMs: 0, modelCalls: 0, toolMs: 0, lastRequestStartedAt: 0 });

/** The model calls of one resume, even when two resumes run at once (async context follows each one). */
const resumeScope = new AsyncLocalStorage<{ modelCalls: number }>();

/**
 * Time spent asking the provider something that is not a model turn (this product counts a long request's tokens
 * before sending it): excluded like model time, but neither a model call nor the start of the next request.
 */
export async function timedProviderCall<T>(clock: Clock, call: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await call();
  } finally {
    clock.modelMs += performance.now() - t0;
  }
}

/** Every system's model wrapper calls this around the model call it makes: timed as above, and counted. */
export async function timedModelCall<T>(clock: Clock, call: () => Promise<T>): Promise<T> {
  clock.lastRequestStartedAt = performance.now();
  try {
    return await timedProviderCall(clock, call);
  } finally {
    clock.modelCalls += 1;
    const scope = resumeScope.getStore();
    if (scope) scope.modelCalls += 1;
  }
}

/** Every system's tool bodies run inside this, so their time is not charged to the harness. */
export async function timedToolBody<T>(clock: Clock, body: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await body();
  } finally {
    clock.toolMs += performance.now() - t0;
  }
}

/** An approval the system parked: whatever it needs to find it again. */
export type Pause = Record<string, unknown>;
export type Connection = 0 | 1;

export interface SystemUnderTest {
  /** for measurement queries only (its statements are never counted in a turn) */
  admin: Queryable;
  clock: Clock;
  statements: { count: number };
  /** queues replies for the system's scripted model, in order */
  script(...replies: ScriptedReply[]): void;
  /** replies still queued (each turn must consume exactly its own) */
  pendingReplies(): number;
  /** forgets the replies still queued */
  dropReplies(): void;
  openConversation(): Promise<string>;
  /** one customer message, handled as the system's server would, until the agent's reply */
  customerTurn(conversationId: string, text: string): Promise<void>;
  /** a new conversation whose customer asks for REFUND_INPUT; returns once the run is parked for approval */
  parkRefund(): Promise<Pause>;
  /** what a reviewer's screen does before deciding: reads the pending approval (on `connection`) */
  viewPause(pause: Pause, connection: Connection): Promise<void>;
  /**
   * The reviewer approves and the run resumes until the agent's reply, as the system's approve handler would:
   * `from: "latest"` finds the pause in the system's latest saved state (what a second click does); `from: "pause"`
   * resumes exactly the state saved when the run paused (what a redelivered resume job carries). Connection 1 is a
   * second, separate set of connections (a second server process). Returns what happened, in words, or throws.
   */
  approve(pause: Pause, how: { connection: Connection; from: "latest" | "pause" }): Promise<string>;
  /** refunds rows the pause produced */
  refundsOf(pause: Pause): Promise<number>;
}

const now = () => performance.now();

/** Customer turns `from` … `from + count - 1` of an open conversation, each timed and (when `measure`) measured. */
export async function measureTurns(
  sut: SystemUnderTest,
  conversationId: string,
  from: number,
  count: number,
  measure: boolean,
): Promise<TurnSample[]> {
  const samples: TurnSample[] = [];
  for (let i = from; i < from + count; i++) {
    const order = orderForTurn(i);
    sut.script({ toolCall: { name: "lookup_order", input: { order_number: order } } }, { text: replyText(order) });
    const mark = measure ? await writeMark(sut.admin) : null;
    Object.assign(sut.clock, { modelMs: 0, modelCalls: 0, toolMs: 0 });
    const s0 = sut.statements.count;
    const t0 = now();
    await sut.customerTurn(conversationId, customerText(i));
    const wall = now() - t0;
    const statements = sut.statements.count - s0;
    if (sut.clock.modelCalls !== 2 || sut.pendingReplies() !== 0)
      throw new Error(`turn ${i + 1}: expected 2 model calls, saw ${sut.clock.modelCalls} (${sut.pendingReplies()} replies left)`);
    if (!mark) continue;
    const after = await writeMark(sut.admin);
    const written = await writtenSince(sut.admin, mark);
    samples.push({
      turn: i + 1,
      harnessMs: wall - sut.clock.modelMs - sut.clock.toolMs,
      modelMs: sut.clock.modelMs,
      toolMs: sut.clock.toolMs,
      statements,
      ...between(mark, after),
      ...written,
    });
  }
  return samples;
}

export async function measureApprovals(sut: SystemUnderTest, samples: number): Promise<ApprovalSample[]> {
  const out: ApprovalSample[] = [];
  for (let k = 0; k < samples; k++) {
    sut.script({ toolCall: { name: "refund_order", input: { ...REFUND_INPUT } } });
    const pause = await sut.parkRefund();
    sut.script({ text: REFUND_REPLY });
    sut.clock.lastRequestStartedAt = 0;
    const s0 = sut.statements.count;
    const t0 = now();
    await sut.approve(pause, { connection: 0, from: "latest" });
    const statements = sut.statements.count - s0;
    if (sut.clock.lastRequestStartedAt === 0 || sut.pendingReplies() !== 0) throw new Error("the approval did not reach the model");
    out.push({ decisionToRequestMs: sut.clock.lastRequestStartedAt - t0, statements, refunds: await sut.refundsOf(pause) });
  }
  return out;
}

/** What one resume did, in words, whether it returned or threw, and how many model requests it made. */
const settle = (resume: () => Promise<string>) => {
  const scope = { modelCalls: 0 };
  return resumeScope.run(scope, async () => {
    let said: string;
    try {
      said = await resume();
    } catch (err) {
      said = `refused (${(err instanceof Error ? err.message : String(err)).split("\n")[0]!.slice(0, 60)})`;
    }
    return `${said}, ${scope.modelCalls} model request${scope.modelCalls === 1 ? "" : "s"}`;
  });
};

export async function runProbes(sut: SystemUnderTest): Promise<ProbeResult> {
  const probe = async (resume: (pause: Pause) => Promise<string[]>): Promise<ProbeOutcome> => {
    sut.script({ toolCall: { name: "refund_order", input: { ...REFUND_INPUT } } });
    const pause = await sut.parkRefund();
    // Each resume that reaches the model gets its reply; what is left over is dropped.
    sut.script({ text: REFUND_REPLY }, { text: REFUND_REPLY });
    const detail = await resume(pause);
    sut.dropReplies();
    return { refunds: await sut.refundsOf(pause), detail: detail.join(" / ") };
  };
  const twice = (from: "latest" | "pause") => async (pause: Pause) => {
    await sut.viewPause(pause, 0);
    const first = await settle(() => sut.approve(pause, { connection: 0, from }));
    return [first, await settle(() => sut.approve(pause, { connection: 0, from }))];
  };
  const approvedTwice = await probe(twice("latest"));
  const resumedTwice = await probe(twice("pause"));
  const racing = await probe(async (pause) => {
    // Both reviewers' screens have loaded the approval (their connections are open), then both click at once.
    await Promise.all([sut.viewPause(pause, 0), sut.viewPause(pause, 1)]);
    return Promise.all([
      settle(() => sut.approve(pause, { connection: 0, from: "latest" })),
      settle(() => sut.approve(pause, { connection: 1, from: "latest" })),
    ]);
  });
  return { approvedTwice, resumedTwice, racing };
}

/** A peer runner's answer to one command of scripts/bench-peers.ts. */
export async function handleCommand(sut: SystemUnderTest, command: RunnerCommand): Promise<RunnerReply | null> {
  switch (command.cmd) {
    case "open":
      return { conversationId: await sut.openConversation() };
    case "turns":
      return { samples: await measureTurns(sut, command.conversationId, command.from, command.count, command.measure) };
    case "approvals":
      return { approvals: await measureApprovals(sut, command.samples) };
    case "probes":
      return { probes: await runProbes(sut) };
    case "exit":
      return null;
  }
}

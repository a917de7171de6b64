// What one step of a run writes, gathered and then written as ONE statement fenced by the run's lease (see
// lib/store/statement and lib/store/lease). A step appends messages, changes its conversation (once per statement),
// records model calls, tool calls, handoffs, audit and events, and may change the run's phase; the order of the
// CTEs is fixed here — queued text taken, then the conversation and its messages, then everything that refers to them.
import type { Store } from "@/lib/db/kysely";
import { type FencedStatement, type FencedTx, fenced, type RunCounters, type RunTransition } from "@/lib/store/lease";
import type { Sql, Statement } from "@/lib/store/statement";
import { type ConversationChange, changeConversation, type NewMessage, takeQueuedText } from "@/lib/store/transcript";
import { queuedBytesBudget } from "./context";
import type { RunState } from "./run-state";

type Part = (s: Statement) => void;

export class StepWrite {
  private readonly before: Part[] = [];
  private readonly after: Part[] = [];
  private readonly messages: NewMessage[] = [];
  private change: Omit<ConversationChange, "conversationId" | "messages"> = {};
  private counters: RunCounters;
  private transition: RunTransition | undefined;

  constructor(
    readonly state: RunState,
    opts: { counters?: RunCounters; transition?: RunTransition } = {},
  ) {
    this.counters = { ...opts.counters };
    this.transition = opts.transition;
  }

  /** Adds counter changes (written with the lease renewal). */
  count(c: RunCounters): this {
    for (const [k, v] of Object.entries(c) as Array<[keyof RunCounters, unknown]>) {
      const prev = this.counters[k];
      (this.counters as Record<string, unknown>)[k] = typeof v === "number" && typeof prev === "number" ? prev + v : v;
    }
    return this;
  }

  /** Changes the run's phase with this step (RUNNING → …). */
  transitionTo(t: RunTransition): this {
    this.transition = t;
    return this;
  }

  get phaseChange(): RunTransition | undefined {
    return this.transition;
  }

  /** Appends a message of this run's conversation; returns the CTE name of its row (`seq` and `content` are returned). */
  message(m: Omit<NewMessage, "tenantId" | "conversationId"> & Partial<Pick<NewMessage, "tenantId" | "conversationId">>): string {
    const { tenantId, conversationId } = this.state.ref;
    this.messages.push({ tenantId, conversationId, runId: this.state.ref.id, ...m });
    return `conv_m${this.messages.length - 1}`;
  }

  /**
   * Takes the text queued while the run was busy (CTE `queued`), for a message built with `withQueuedText`: as much as
   * fits in `maxBytes` (and the oldest message in any case unless `atLeastOne` is false); `onlyStaff`: a person's words
   * only, the customer's left queued.
   */
  takeQueued(maxBytes = queuedBytesBudget(), atLeastOne = true, onlyStaff = false): string {
    if (!this.change.takeQueued) {
      const { conversationId, id } = this.state.ref;
      this.before.push((s) => takeQueuedText(s, "queued", conversationId, id, maxBytes, atLeastOne, onlyStaff));
      this.change.takeQueued = "queued";
    }
    return "queued";
  }

  /** Changes the conversation's row (merged into its one update). */
  conversation(c: Omit<ConversationChange, "conversationId" | "messages" | "takeQueued">): this {
    this.change = { ...this.change, ...c, set: { ...this.change.set, ...c.set } };
    return this;
  }

  /** Adds writes that refer to the conversation's update (`conv`) or the messages' CTEs. */
  also(part: Part): this {
    this.after.push(part);
    return this;
  }

  /**
   * Carries another step's writes in this one, so they commit together: a specialist's last step (the turn that
   * asked a person, or its report) is written with the outer step that parks the run or records the outer result.
   */
  absorb(other: StepWrite): this {
    if (other.messages.length || other.transition) throw new Error("a step carried in another appends no messages and changes no phase");
    this.count(other.counters);
    this.before.push(...other.before);
    this.after.push(...other.after);
    if (Object.keys(other.change).length) this.conversation(other.change);
    return this;
  }

  private build(): FencedStatement {
    const s = fenced(this.state.lease, { counters: this.counters, transition: this.transition });
    for (const part of this.before) part(s);
    const touches = this.messages.length || Object.keys(this.change).length;
    if (touches) changeConversation(s, { conversationId: this.state.ref.conversationId, messages: this.messages, ...this.change }, "conv");
    for (const part of this.after) part(s);
    return s;
  }

  /** Writes the step (throws LeaseLostError, having written nothing, when the lease was lost). */
  async run<R = Record<string, unknown>>(db: Store, select?: Sql): Promise<R | null> {
    return this.build().run<R>(db, select);
  }

  /** Writes the step as the last statement of an effect's transaction, its COMMIT sent with it (see FencedStatement). */
  async runThenCommit<R = Record<string, unknown>>(tx: FencedTx, select?: Sql): Promise<R | null> {
    return this.build().runThenCommit<R>(tx, select);
  }
}

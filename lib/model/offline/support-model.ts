import type { OfflineReply, OfflineRequest } from "./types";
import { readTranscript, type TranscriptEvent } from "./transcript";
import {
  findEmails,
  findOrderNumbers,
  findReason,
  isGreeting,
  isThanks,
  parseAddress,
  parseConcerns,
  type ConcernKind,
  type ParsedConcern,
} from "./intents";
import {
  customerFacingMessage,
  describeAction,
  GREETING,
  isEscalatedBody,
  questionSentence,
  resultSentence,
  THANKS,
  UNCLEAR,
  type Question,
} from "./replies";
import { asksForCode, findCode, findPostcode, identityQuestionSentence, type IdentityQuestion } from "./identity";
import { briefFor, offeredSpecialists, type SpecialistKey, specialistReply, specialistRole, specialistToolFor } from "./specialist";
import { ADDRESS_CHANGE_LEVEL, meetsLevel, verificationLevelOf, type VerificationLevel } from "@/lib/identity/levels";

/**
 * The deterministic support model. Stateless: every request is answered by replaying its messages —
 * what the customer asked (concerns), who they are (identity), which tools ran and what they returned —
 * and then choosing the next step: tool calls (several at once when independent) or a final reply that
 * answers every concern from the tool results alone. It knows no shop data; it learns it from results.
 * When the request offers specialists (their tools), refunds and replacements are handed to them (./specialist);
 * when its instructions make it a specialist, it plays that specialist.
 */
export function supportModelReply(request: OfflineRequest): OfflineReply {
  const role = specialistRole(request);
  if (role) return specialistReply(request, role);
  const transcript = readTranscript(request);
  const state = new ConversationState(transcript.events, transcript.endsWithAssistant, offeredSpecialists(request));
  if (state.harnessAwaitsCorrection()) return text(state.correctedReply());
  const calls = state.nextCalls();
  if (calls.length)
    return { content: calls.map((c) => ({ type: "tool_use" as const, name: c.name, input: c.input })), stop_reason: "tool_use" };
  return text(state.finalReply());
}

const text = (t: string): OfflineReply => ({ content: [{ type: "text", text: t }], stop_reason: "end_turn" });

interface ToolCallPlan {
  name: string;
  input: Record<string, unknown>;
}

interface Call extends ToolCallPlan {
  id: string;
  at: number;
  result?: { isError: boolean; body: Record<string, unknown>; at: number };
  /** Matched to a concern: reported through it (or silently, when it only supported it). */
  consumed: boolean;
}

interface Concern extends ParsedConcern {
  seq: number;
  /** Index of the customer text that raised it: concerns of one message are handled together. */
  batch: number;
  done: boolean;
  doneAt?: number;
  outcome?: { call: Call } | { note: string };
  /** Closed together with another concern that speaks for both (one escalation, one sentence). */
  silent: boolean;
  failures: Map<string, number>;
  pendingRetry?: Call;
  permissionErrors: number;
  stuck?: Call;
}

type Step = { call: ToolCallPlan } | { question: Question; order?: string } | { identity: IdentityQuestion; order?: string };

const ACTION_KIND: Record<string, ConcernKind> = {
  refund_order: "refund",
  create_replacement: "replace",
  cancel_order: "cancel",
  update_shipping_address: "address",
  list_orders: "list_orders",
};

const needsOrder = (kind: ConcernKind) =>
  kind === "status" || kind === "refund" || kind === "replace" || kind === "cancel" || kind === "address";
const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim() : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const callKey = (c: ToolCallPlan) => `${c.name} ${JSON.stringify(c.input)}`;
const orderOf = (input: Record<string, unknown>) => str(input.order_number)?.toUpperCase();

/** A refusal because the customer is verified, but not strongly enough (lib/identity/levels verificationShortfall). */
const needsStrongerVerification = (body: Record<string, unknown>) =>
  typeof body.required_verification === "string" || /stronger identity check/i.test(str(body.message) ?? "");

function refundableCents(body: Record<string, unknown>): number | undefined {
  const direct = num(body.refundable_cents);
  if (direct !== undefined) return direct;
  const total = num(body.total_cents);
  return total === undefined ? undefined : total - (num(body.refunded_cents) ?? 0);
}

class ConversationState {
  private readonly concerns: Concern[] = [];
  private readonly calls = new Map<string, Call>();
  private readonly mentioned: Array<{ order: string; at: number }> = [];
  private readonly emails: string[] = [];
  /** One-time codes and postcodes the customer typed, in order. */
  private readonly codes: Array<{ code: string; at: number }> = [];
  private readonly postcodes: Array<{ postcode: string; at: number }> = [];
  /** Where the customer last asked for a code (instead of giving an order number). */
  private codeWantedAt: number | undefined;
  private readonly codeRequests: Array<{ email: string; status: string; at: number }> = [];
  /** Where the customer last typed an order number or a postcode: another way to prove who they are than a code. */
  private proofTypedAt = -1;
  private readonly attempts: Array<{ input: Record<string, unknown>; status: string; retryLater: boolean; at: number }> = [];
  private verified: { email?: string; name?: string; level: VerificationLevel } | null = null;
  private humanEscalated = false;
  /** Indexes of assistant turns without tool_use: the replies the customer was given. */
  private readonly replies: number[] = [];
  private readonly harness: number[] = [];
  private readonly customerAt: number[] = [];
  private readonly customerTexts: string[] = [];
  /** Concerns the latest shown reply left undone (see onReply). */
  private settledByReply: Concern[] = [];
  private lastCustomerText: string | undefined;

  constructor(
    private readonly events: TranscriptEvent[],
    endsWithAssistant: boolean,
    /** The specialists this request offers (their tools): only those are ever asked. */
    private readonly specialists: Partial<Record<SpecialistKey, string>> = {},
  ) {
    // First where the replies, customer texts and [harness] notes are, so a reply can be judged shown or rejected.
    events.forEach((e, i) => {
      if (e.kind === "customer") this.customerAt.push(i);
      else if (e.kind === "harness") this.harness.push(i);
      // A paused turn at the very end is being continued, not a reply already given.
      else if (e.kind === "assistant_end" && !e.hasToolUse && !(endsWithAssistant && i === events.length - 1)) this.replies.push(i);
    });
    events.forEach((e, i) => {
      if (e.kind === "customer") this.onCustomer(e.text, i);
      else if (e.kind === "context") this.onContext(e.text);
      else if (e.kind === "tool_use") {
        this.calls.set(e.id, { id: e.id, name: e.name, input: e.input, at: i, consumed: false });
        const order = orderOf(e.input);
        if (order) this.mentioned.push({ order, at: i });
      } else if (e.kind === "tool_result") this.onResult(e.toolUseId, e.isError, e.body, i);
      else if (e.kind === "assistant_end" && this.replies.includes(i) && !this.rejected(i)) this.onReply(i);
    });
  }

  /**
   * A reply the customer saw ends the turn: a concern that could have been acted on but was not (a reply
   * scripted by a test, or written by a person) is settled by it. Concerns waiting on an answer stay open.
   */
  private onReply(at: number) {
    this.settledByReply = [];
    for (const c of this.open()) {
      if ("call" in this.nextStep(c)) {
        this.close(c, at, { note: "" });
        c.silent = true;
        this.settledByReply.push(c);
      }
    }
  }

  // ---- reading the conversation ------------------------------------------------------------

  private open(): Concern[] {
    return this.concerns.filter((c) => !c.done);
  }

  private latestOrder(before = Infinity): string | undefined {
    return this.mentioned.filter((m) => m.at < before).at(-1)?.order;
  }

  private onCustomer(text: string, at: number) {
    const earlierTexts = this.customerTexts.slice();
    this.customerTexts.push(text);
    this.lastCustomerText = text;
    // Codes and postcodes first, and out of the text the rest reads: "my code is 123456" is no order IS-123456.
    const code = findCode(text, this.codeAwaited());
    if (code) this.codes.push({ code, at });
    const postcode = code ? undefined : findPostcode(text, this.postcodeAwaited());
    if (postcode) this.postcodes.push({ postcode, at });
    if (asksForCode(text)) this.codeWantedAt = at;
    this.emails.push(...findEmails(text));
    text = [code, postcode].reduce<string>(
      (t, v) => (v ? t.replace(new RegExp(`\\b${v.slice(0, 3)}[ -]?${v.slice(3)}\\b`, "i"), " ") : t),
      text,
    );
    const orders = findOrderNumbers(text);
    // A follow-up often only supplies what was asked for: an order number or an address.
    for (const c of this.open()) {
      if (!c.order && needsOrder(c.kind) && orders[0]) c.order = orders[0];
      if (c.kind === "address" && !c.address) c.address = parseAddress(text) ?? parseAddress(`address: ${text}`);
    }
    const previous = this.latestOrder(at);
    for (const o of orders) this.mentioned.push({ order: o, at });
    if (orders.length || postcode) this.proofTypedAt = at;
    const parsed = parseConcerns(text);
    // "Yes, go ahead" after a reply that offered to: take up again what that reply left undone.
    if (!parsed.length && /^\W*(yes|yeah|yep|sure|ok(?:ay)?|please do|go ahead|do it)\b/i.test(text)) {
      for (const c of this.settledByReply.splice(0))
        Object.assign(c, { done: false, doneAt: undefined, outcome: undefined, silent: false, batch: at });
    }
    for (const p of parsed) {
      // "A-1002, it came torn" answering "which order?": the reason for what is open, not a question of its own.
      if (p.complaint && this.open().some((c) => c.order === (p.order ?? previous))) continue;
      if (!p.order && needsOrder(p.kind) && previous) p.order = previous; // "replace it"
      // "replace it" after "A-1002 arrived damaged": the reason was given earlier, about the same order,
      // or shows in what a lookup returned (a lost parcel).
      if (!findReason(p.text, text) && p.order) {
        const earlier = earlierTexts
          .filter((t) => findOrderNumbers(t).includes(p.order!))
          .map((t) => findReason(t, t))
          .filter(Boolean)
          .at(-1);
        const lost = this.lastLookup(p.order)?.status === "lost" ? "lost in transit" : undefined;
        if (earlier ?? lost) p.reason = (earlier ?? lost)!;
      }
      // "refund it" after "A-1003 never arrived": the trouble happened on the way, as said before or as a lookup shows.
      if (!p.inTransit && p.order) {
        const earlier = earlierTexts.some((t) => parseConcerns(t).some((e) => e.inTransit && e.order === p.order));
        if (earlier || this.lastLookup(p.order)?.status === "lost") p.inTransit = true;
      }
      const same = this.open().find((c) => c.kind === p.kind && c.order === p.order);
      if (same) {
        if (p.amountCents) same.amountCents = p.amountCents;
        continue;
      }
      const concern: Concern = {
        ...p,
        seq: this.concerns.length,
        batch: at,
        done: false,
        silent: false,
        failures: new Map(),
        permissionErrors: 0,
      };
      this.concerns.push(concern);
      if (p.kind === "human" && this.humanEscalated) {
        this.close(concern, at, {
          note: "A person from our team has already been asked to take over; they'll reply here as soon as they can.",
        });
      }
    }
  }

  private onContext(text: string) {
    const email = findEmails(text)[0];
    if (email && /sign|verif|log(?:ged)?[ -]?in|authenticat|identif/i.test(text)) {
      // "[context] The shop signed this customer in: Dana Reyes <dana@example.com>. …"
      const name = text.match(/:\s*([^<:]+?)\s*</)?.[1];
      this.verified = { email, ...(name ? { name } : {}), level: "shop_signed" };
      this.emails.push(email);
    }
  }

  private onResult(toolUseId: string, isError: boolean, body: Record<string, unknown>, at: number) {
    const call = this.calls.get(toolUseId);
    if (!call) return;
    call.result = { isError, body, at };
    const message = str(body.message) ?? "";
    if (call.name === "verify_customer") {
      const status = isError ? "error" : (str(body.status) ?? "unknown");
      this.attempts.push({ input: call.input, status, retryLater: body.retry_later === true, at });
      if (status === "verified") {
        this.verified = {
          email: str(body.email) ?? str(call.input.email),
          name: str(body.name),
          level: verificationLevelOf(body.level) ?? "order_email",
        };
      }
      call.consumed = true;
      return;
    }
    if (call.name === "send_verification_code") {
      const status = isError ? "error" : (str(body.status) ?? "unknown");
      this.codeRequests.push({ email: str(call.input.email) ?? "", status: body.retry_later === true ? "retry_later" : status, at });
      call.consumed = true; // answered through the identity questions ("a code is on its way…")
      return;
    }
    // Verified, but not strongly enough for this action: the customer is still who they were.
    if (isError && needsStrongerVerification(body) && this.verified) {
      this.verified.level = verificationLevelOf(body.verification_level) ?? "order_email";
    } else if (isError && body.error_category === "permission" && !body.review && /verif/i.test(message)) this.verified = null;
    if (call.name === "escalate_to_human") return this.onEscalation(call, at);

    const order = orderOf(call.input);
    if (call.name === "lookup_order") {
      for (const c of this.open().filter((c) => needsOrder(c.kind) && c.order === order && this.raisedBefore(c, call))) {
        call.consumed = true;
        this.settle(c, call, at, c.kind === "status");
        // A lookup that shows nothing left to refund answers a refund request on its own.
        if (!c.done && c.kind === "refund" && c.amountCents === undefined && !isError && (refundableCents(body) ?? 1) <= 0) {
          this.close(c, at, { note: `Order ${order} has no refundable balance left, so there is nothing more to refund on it.` });
        }
      }
      return;
    }
    if (this.isSpecialistCall(call.name)) {
      const concern = this.open().find((c) => this.specialistFor(c) === call.name && c.order === order && this.raisedBefore(c, call));
      if (concern) {
        call.consumed = true;
        this.settle(concern, call, at, true);
      }
      return;
    }
    const kind = ACTION_KIND[call.name];
    const concern =
      kind && this.open().find((c) => c.kind === kind && (kind === "list_orders" || c.order === order) && this.raisedBefore(c, call));
    if (concern) {
      call.consumed = true;
      this.settle(concern, call, at, true);
    }
  }

  private isSpecialistCall(name: string): boolean {
    return Object.values(this.specialists).includes(name);
  }

  /** The specialist a concern goes to, when the request offers one for it (the intent table's routes). */
  private specialistFor(c: Concern): string | undefined {
    return specialistToolFor(c, this.specialists);
  }

  private raisedBefore(c: Concern, call: Call) {
    return c.batch < call.at;
  }

  /** Applies a result to a concern: done, or failed in a way that decides the next step. */
  private settle(c: Concern, call: Call, at: number, terminalOnSuccess: boolean) {
    const { isError, body } = call.result!;
    if (!isError) {
      c.pendingRetry = undefined;
      if (terminalOnSuccess) this.close(c, at, { call });
      return;
    }
    if (body.review || isEscalatedBody(body)) return this.close(c, at, { call });
    // A specialist that could not finish, where a person already follows up: told, not escalated again.
    if (this.isSpecialistCall(call.name) && /person will follow up/i.test(str(body.message) ?? "")) return this.close(c, at, { call });
    if (needsStrongerVerification(body)) return; // verify more strongly, then try again
    const category = str(body.error_category);
    const message = str(body.message) ?? "";
    if (category === "permission") {
      if (/verif/i.test(message)) c.permissionErrors++;
      else c.stuck = call;
      return;
    }
    if (category === "transient" && body.is_retryable === true) {
      const key = callKey(call);
      c.failures.set(key, (c.failures.get(key) ?? 0) + 1);
      c.pendingRetry = call;
      return;
    }
    if (category === "transient" || category === "system" || /you just called/i.test(message)) {
      c.stuck = call;
      return;
    }
    this.close(c, at, { call }); // a business rule the customer should hear about
  }

  private onEscalation(call: Call, at: number) {
    call.consumed = true;
    const trigger = str(call.input.trigger);
    const order = orderOf(call.input);
    const open = this.open();
    let targets: Concern[];
    if (trigger === "customer_request") targets = [...open.filter((c) => c.kind === "human"), ...open.filter((c) => c.kind !== "human")];
    else if (trigger === "policy_gap") {
      const gaps = open.filter((c) => c.kind === "policy_gap");
      targets = gaps.filter((c) => !order || c.order === order);
      if (!targets.length) targets = gaps;
    } else {
      targets = open.filter((c) => (order && c.order === order) || c.stuck || c.pendingRetry || c.permissionErrors > 0);
      if (!targets.length) targets = open.filter((c) => c.kind !== "human");
    }
    targets.forEach((c, i) => {
      this.close(c, at, { call });
      c.silent = i > 0;
    });
    if (!targets.length) call.consumed = false;
    if (trigger === "customer_request" && !call.result?.isError) this.humanEscalated = true;
  }

  private close(c: Concern, at: number, outcome: NonNullable<Concern["outcome"]>) {
    c.done = true;
    c.doneAt = at;
    c.outcome = outcome;
  }

  // ---- what has the customer already been told -----------------------------------------------

  /** A reply followed by a [harness] correction request (no customer text between) was never shown. */
  private rejected(reply: number): boolean {
    return this.harness.some(
      (h) => h > reply && !this.customerAt.some((c) => c > reply && c < h) && !this.replies.some((r) => r > reply && r < h),
    );
  }

  private reported(at: number): boolean {
    return this.replies.some((r) => r > at && !this.rejected(r));
  }

  /** The last user turn is only a [harness] message (e.g. the stop check): rewrite, don't act. */
  harnessAwaitsCorrection(): boolean {
    const userEvents = this.events.filter(
      (e) => e.kind === "customer" || e.kind === "harness" || e.kind === "tool_result" || e.kind === "context",
    );
    const lastTurn = userEvents.at(-1)?.turn;
    if (lastTurn === undefined) return false;
    const inTurn = userEvents.filter((e) => e.turn === lastTurn);
    return inTurn.some((e) => e.kind === "harness") && !inTurn.some((e) => e.kind === "customer" || e.kind === "tool_result");
  }

  // ---- deciding ---------------------------------------------------------------------------------

  /** The tool calls of the next response: a person at once if asked; else the earliest message's concerns, together. */
  nextCalls(): ToolCallPlan[] {
    const open = this.open();
    const human = open.find((c) => c.kind === "human");
    if (human) return [this.escalation("customer_request", human)];
    // "Send me a code" / "my code is 123456" with nothing asked yet: verifying is the request.
    const identity = this.identityOnlyStep();
    if (identity && "call" in identity) return [identity.call];
    const batches = [...new Set(open.map((c) => c.batch))];
    for (const batch of batches) {
      const calls = open
        .filter((c) => c.batch === batch)
        .map((c) => this.nextStep(c))
        .flatMap((s) => ("call" in s ? [s.call] : []));
      if (!calls.length) continue;
      // Verification comes first and alone: every account action depends on it.
      const verify = calls.find((c) => c.name === "verify_customer");
      if (verify) return [verify];
      return calls.filter((c, i) => calls.findIndex((d) => callKey(d) === callKey(c)) === i);
    }
    return [];
  }

  private nextStep(c: Concern): Step {
    if (c.kind === "human") return { call: this.escalation("customer_request", c) };
    if (c.kind === "policy_gap") return { call: this.escalation("policy_gap", c) };
    if (c.stuck || c.permissionErrors >= 2) return { call: this.escalation("no_progress", c) };
    if (c.pendingRetry) {
      // A transient failure is retried once; the second failure goes to a person.
      if ((c.failures.get(callKey(c.pendingRetry)) ?? 0) >= 2) return { call: this.escalation("no_progress", c) };
      return { call: { name: c.pendingRetry.name, input: c.pendingRetry.input } };
    }
    if (!this.verified) return this.identityStep(c);
    if (needsOrder(c.kind) && !c.order) return { question: "which_order" };
    const order = c.order!;
    const specialist = this.specialistFor(c);
    if (specialist) {
      // The brief quotes the message that raised the concern.
      const raised = this.events[c.batch];
      return { call: { name: specialist, input: briefFor(c, raised?.kind === "customer" ? raised.text : c.text) } };
    }
    switch (c.kind) {
      case "status":
        return { call: { name: "lookup_order", input: { order_number: order } } };
      case "refund": {
        const known = this.refundable(order);
        const amount = c.amountCents ?? (known !== undefined && known > 0 ? known : undefined);
        if (amount !== undefined)
          return { call: { name: "refund_order", input: { order_number: order, amount_cents: amount, reason: c.reason } } };
        // A fresh lookup that still does not say what is refundable: a person must look.
        if (this.freshLookup(c)) return { call: this.escalation("no_progress", c) };
        return { call: { name: "lookup_order", input: { order_number: order } } };
      }
      case "replace":
        return { call: { name: "create_replacement", input: { order_number: order, reason: c.reason } } };
      case "cancel":
        return { call: { name: "cancel_order", input: { order_number: order, reason: c.reason } } };
      case "address":
        if (!c.address) return { question: "address", order };
        if (!meetsLevel(this.verified.level, ADDRESS_CHANGE_LEVEL)) return this.strongerIdentityStep(order);
        return { call: { name: "update_shipping_address", input: { order_number: order, address: c.address } } };
      default:
        return { call: { name: "list_orders", input: {} } };
    }
  }

  private lastLookup(order: string): Record<string, unknown> | undefined {
    const lookups = [...this.calls.values()].filter(
      (c) => c.name === "lookup_order" && orderOf(c.input) === order && c.result && !c.result.isError,
    );
    return lookups.sort((a, b) => a.at - b.at).at(-1)?.result?.body;
  }

  /** What is still refundable on an order, from its latest lookup after the latest refund or cancellation. */
  private refundable(order: string): number | undefined {
    let value: number | undefined;
    for (const call of [...this.calls.values()].sort((a, b) => a.at - b.at)) {
      if (orderOf(call.input) !== order || !call.result || call.result.isError) continue;
      if (call.name === "lookup_order") value = refundableCents(call.result.body);
      else if (call.name === "refund_order" || call.name === "cancel_order") value = undefined;
    }
    return value;
  }

  private freshLookup(c: Concern): boolean {
    return [...this.calls.values()].some(
      (call) => call.name === "lookup_order" && orderOf(call.input) === c.order && call.at > c.batch && call.result && !call.result.isError,
    );
  }

  // ---- identity -----------------------------------------------------------------------------------

  /** A code request answered since the customer asked (the latest one), if any. */
  private codeRequestSince(at: number) {
    return this.codeRequests.filter((r) => r.at > at).at(-1);
  }

  private codeAwaited(): boolean {
    return !this.verified && this.codeRequests.some((r) => r.status === "code_requested");
  }

  private postcodeAwaited(): boolean {
    return this.open().some((c) => c.kind === "address") && !meetsLevel(this.verified?.level, ADDRESS_CHANGE_LEVEL);
  }

  /**
   * What to do instead of verifying with `input` again: nothing (never tried, or verified), say the details don't
   * match (the same words whatever was wrong) or that it must wait; a check that itself failed is tried once more,
   * then handed to a person.
   */
  private afterFailure(input: Record<string, unknown>, failed: IdentityQuestion, c?: Concern): Step | null {
    const same = this.attempts.filter((a) => JSON.stringify(a.input) === JSON.stringify(input));
    const previous = same.at(-1);
    if (!previous || previous.status === "verified") return null;
    if (previous.retryLater) return { identity: "try_later" };
    if (previous.status === "needs_more") return { identity: "order_for_identity" };
    if (previous.status === "error") return same.length < 2 ? null : c ? { call: this.escalation("no_progress", c) } : { identity: failed };
    return { identity: failed };
  }

  /** The code the customer typed since the latest code was sent, as a verify_customer call (once per code). */
  private codeStep(): Step | null {
    const sent = this.codeRequests.filter((r) => r.status === "code_requested").at(-1);
    const typed = sent && this.codes.filter((c) => c.at > sent.at).at(-1);
    if (!sent || !typed) return null;
    const input = { email: sent.email, code: typed.code };
    return this.afterFailure(input, "code_not_matched") ?? { call: { name: "verify_customer", input } };
  }

  /** The customer asked for a code: send one to their email (ask for it first), or say it was sent. */
  private codeRequestStep(): Step | null {
    if (this.codeWantedAt === undefined) return null;
    const answered = this.codeRequestSince(this.codeWantedAt);
    // An order number (or postcode) typed after the code went out: the customer chose that way instead.
    if (answered && this.proofTypedAt > answered.at) return null;
    if (answered) return { identity: answered.status === "retry_later" ? "codes_try_later" : "code" };
    const email = this.emails.at(-1);
    if (!email) return { identity: "email_for_code" };
    return { call: { name: "send_verification_code", input: { email } } };
  }

  /** The code path: a code asked for (again) is sent first; else a code typed since the last one was sent is tried. */
  private byCodeStep(): Step | null {
    const wantsNew = this.codeWantedAt !== undefined && !this.codeRequestSince(this.codeWantedAt);
    return wantsNew ? this.codeRequestStep() : (this.codeStep() ?? this.codeRequestStep());
  }

  /** Verify by something a stranger can't know (a code, or the email with an order number), or ask for it. Never a name. */
  private identityStep(c: Concern): Step {
    const byCode = this.byCodeStep();
    if (byCode) return byCode;
    const email = this.emails.at(-1);
    const order = c.order ?? this.latestOrder();
    if (!email && !order) return { identity: "identity" };
    if (!email) return { identity: "email_for_identity", order };
    if (!order) return { identity: "order_for_identity" };
    const postcode = this.postcodes.at(-1)?.postcode;
    // An address change needs the postcode too: ask for it with the rest rather than verify twice.
    if (c.kind === "address" && !postcode) return { identity: "postcode", order };
    const input: Record<string, unknown> = { email, order_number: order, ...(c.kind === "address" ? { postcode } : {}) };
    return (
      this.afterFailure(input, c.kind === "address" ? "postcode_not_matched" : "not_matched", c) ?? {
        call: { name: "verify_customer", input },
      }
    );
  }

  /** Verified by email and order number, but an address change needs the postcode (or a code). */
  private strongerIdentityStep(order: string): Step {
    const byCode = this.byCodeStep();
    if (byCode) return byCode;
    const postcode = this.postcodes.at(-1)?.postcode;
    if (!postcode) return { identity: "postcode", order };
    const input = { email: this.verified?.email ?? this.emails.at(-1), order_number: order, postcode };
    return this.afterFailure(input, "postcode_not_matched") ?? { call: { name: "verify_customer", input } };
  }

  /** With no concern open: a code asked for or typed is still worth acting on. */
  private identityOnlyStep(): Step | null {
    if (this.verified || this.open().length) return null;
    return this.byCodeStep();
  }

  /** A self-contained escalation record: a person can act on it without reading the transcript. */
  private escalation(trigger: "customer_request" | "policy_gap" | "no_progress", c: Concern): ToolCallPlan {
    const order = c.order ?? this.latestOrder();
    const tried = this.triedSummary();
    const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
    const input: Record<string, unknown> = { trigger };
    if (trigger === "customer_request") {
      Object.assign(input, {
        summary: `The customer asked to talk to a person${order ? ` (their conversation mentions order ${order})` : ""}: "${c.text}"`,
        tried,
        root_cause: "The customer wants to talk to a person.",
        recommended_action: "Take over the conversation and reply to the customer.",
      });
    } else if (trigger === "policy_gap") {
      Object.assign(input, {
        summary: `The customer asks: "${c.text}"${order ? ` (order ${order})` : ""}. No written policy covers this.`,
        tried,
        root_cause: "The request needs a policy exception or falls outside the shop's policies.",
        recommended_action: "Decide whether to make an exception and tell the customer the outcome.",
        ...(c.amountCents ? { amount_cents: c.amountCents } : {}),
      });
    } else {
      const failed = c.stuck ?? c.pendingRetry;
      const message = failed?.result ? (str(failed.result.body.message) ?? "no message") : "the request could not be completed";
      const times = failed ? (c.failures.get(callKey(failed)) ?? 1) : 0;
      Object.assign(input, {
        summary: `The customer asked to ${this.describeConcern(c)}; the agent could not complete it.`,
        tried: failed ? `${failed.name} ${JSON.stringify(failed.input)} failed${times > 1 ? ` ${times} times` : ""}: ${message}` : tried,
        root_cause: failed ? message : "Verification or a tool kept failing.",
        recommended_action: failed
          ? `Do it manually if appropriate (${describeAction(failed.name, failed.input)}) and reply to the customer.`
          : "Check the customer's request and reply to them.",
        ...(num(failed?.input.amount_cents) !== undefined ? { amount_cents: failed!.input.amount_cents } : {}),
      });
    }
    if (order) input.order_number = order;
    for (const k of ["summary", "tried"]) input[k] = clip(String(input[k] ?? ""), 1900) || "—";
    for (const k of ["root_cause", "recommended_action"]) input[k] = clip(String(input[k] ?? ""), 900);
    return { name: "escalate_to_human", input };
  }

  private describeConcern(c: Concern): string {
    const order = c.order ?? "an order";
    switch (c.kind) {
      case "status":
        return `know the status of ${order}`;
      case "refund":
        return `get a refund on ${order}`;
      case "replace":
        return `get a replacement for ${order}`;
      case "cancel":
        return `cancel ${order}`;
      case "address":
        return `change the delivery address of ${order}`;
      case "list_orders":
        return "see their orders";
      default:
        return c.text;
    }
  }

  private triedSummary(): string {
    const lines = [...this.calls.values()]
      .filter((c) => c.result && c.name !== "escalate_to_human")
      .map(
        (c) =>
          `${c.name} ${JSON.stringify(c.input)} → ${c.result!.isError ? `error: ${customerFacingMessage(c.result!.body.message) ?? "failed"}` : (str(c.result!.body.status) ?? "ok")}`,
      );
    return lines.length ? lines.join("; ") : "Nothing yet.";
  }

  // ---- replying ---------------------------------------------------------------------------------

  /** Sentences for everything done or decided since the customer was last told, concern by concern. */
  private newFacts(): string[] {
    const facts: string[] = [];
    for (const c of this.concerns) {
      if (!c.done || c.silent || c.doneAt === undefined || this.reported(c.doneAt)) continue;
      facts.push("call" in c.outcome! ? resultSentence(c.outcome.call) : c.outcome!.note);
    }
    // Results no concern asked for (e.g. a call scripted by a test) are reported too, never hidden.
    for (const call of [...this.calls.values()].sort((a, b) => a.at - b.at)) {
      if (call.result && !call.consumed && !this.reported(call.result.at)) facts.push(resultSentence(call));
    }
    return facts;
  }

  private questions(): string[] {
    const out: string[] = [];
    const steps = this.open().map((c) => this.nextStep(c));
    const identity = this.identityOnlyStep();
    if (identity) steps.push(identity);
    for (const step of steps) {
      const q =
        "question" in step
          ? questionSentence(step.question, step.order)
          : "identity" in step
            ? identityQuestionSentence(step.identity, step.order)
            : undefined;
      if (q && !out.includes(q)) out.push(q);
    }
    return out;
  }

  finalReply(): string {
    const parts = [...this.newFacts(), ...this.questions()];
    if (parts.length) return parts.join(" ");
    const justVerified = this.attempts.filter((a) => a.status === "verified" && !this.reported(a.at)).at(-1);
    if (justVerified && this.verified?.name) return `Thanks, ${this.verified.name.split(" ")[0]} — you're verified. How can I help?`;
    const last = this.lastCustomerText;
    if (last && isThanks(last)) return THANKS;
    if (!last || isGreeting(last)) return GREETING;
    return UNCLEAR;
  }

  /** The reply rewritten after a [harness] stop check: only what tool results show, nothing more. */
  correctedReply(): string {
    const facts = this.newFacts();
    const told = facts.join(" ");
    const last = this.harness.at(-1);
    const harnessText = last === undefined ? "" : (this.events[last] as { text: string }).text;
    const pending = [...this.open().flatMap((c) => (c.order ? [c.order] : [])), ...findOrderNumbers(harnessText)].filter(
      (o, i, all) => all.indexOf(o) === i && !told.includes(o),
    );
    const orders = `${pending.length > 1 ? "orders" : "order"} ${pending.join(" and ")}`;
    const parts: string[] = [];
    if (facts.length) {
      parts.push("Sorry, I need to correct my last message.", ...facts);
      if (pending.length) parts.push(`Nothing has been done yet about ${orders}.`);
    } else {
      parts.push(
        `Sorry, I need to correct my last message: nothing has been done ${pending.length ? `yet about ${orders}` : "on your account yet"}.`,
      );
    }
    parts.push(...this.questions());
    if (/person|hand ?off|handed|escalat/i.test(harnessText)) parts.push("A person from our team will follow up with you here.");
    else if (pending.length) parts.push("Let me know if you'd like me to go ahead.");
    return parts.join(" ");
  }
}

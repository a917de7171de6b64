import { formatCents } from "@/lib/money";
import { findOrderNumbers, findReason, type ParsedConcern, parseConcerns } from "./intents";
import { SPECIALIST_ROUTES } from "./language/intent-table";
import { resultSentence, statusSentence, type CallView } from "./replies";
import { readTranscript } from "./transcript";
import type { OfflineReply, OfflineRequest } from "./types";

/**
 * Specialists, as the offline model plays them (lib/agents/specialists, lib/runtime/agent-as-tool):
 *  - as the front-line agent, it hands a case to a specialist only when the request OFFERS that specialist's tool,
 *    by the routes of the intent table (`SPECIALIST_ROUTES`), with a self-contained brief (`briefFor`);
 *  - as a specialist (its instructions say which: "You are the returns & refunds specialist …"), it reads the brief,
 *    looks the order up, acts with its own tools and finishes with a report whose "For the customer:" line is built
 *    from its tool results alone (`specialistReply`).
 */

export type SpecialistKey = "returns" | "delivery";

const SPECIALIST_TOOL = /^ask_(\w+?)_specialist$/;

const keyOf = (words: string): SpecialistKey | undefined =>
  /return|refund/i.test(words) ? "returns" : /deliver|shipping|transit|parcel/i.test(words) ? "delivery" : undefined;

/** The specialists the request offers (by their tools), by key: nothing offered, nothing delegated. */
export function offeredSpecialists(request: OfflineRequest): Partial<Record<SpecialistKey, string>> {
  const out: Partial<Record<SpecialistKey, string>> = {};
  for (const tool of request.tools ?? []) {
    const m = tool.name.match(SPECIALIST_TOOL);
    const key = m && keyOf(m[1]!);
    if (key && !out[key]) out[key] = tool.name;
  }
  return out;
}

function systemText(request: OfflineRequest): string {
  const s = request.system;
  return typeof s === "string" ? s : (s ?? []).map((b) => b.text).join("\n");
}

/** Which specialist the model runs as, from its instructions; undefined for the front-line agent. */
export function specialistRole(request: OfflineRequest): SpecialistKey | undefined {
  const m = systemText(request).match(/^\s*You are the ([^.\n]{1,80}?) specialist\b/i);
  return m ? keyOf(m[1]!) : undefined;
}

/** The specialist tool for a concern, by the intent table's routes, among those offered. */
export function specialistToolFor(c: Pick<ParsedConcern, "kind" | "inTransit">, offered: Partial<Record<SpecialistKey, string>>) {
  for (const route of SPECIALIST_ROUTES) {
    if (!route.kinds.includes(c.kind) || (route.when === "in_transit" && !c.inTransit)) continue;
    const tool = offered[route.specialist];
    if (tool) return tool;
  }
  return undefined;
}

const CUSTOMER_WROTE = "The customer wrote:";
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * The task for a specialist, self-contained: what to do (kind, order, amount — or what is still refundable), why,
 * and the customer's own words, quoted last (the specialist acts on the first part, reads the quote as context).
 */
export function briefFor(c: Pick<ParsedConcern, "kind" | "order" | "amountCents" | "reason" | "text">, customerWords?: string) {
  const order = c.order!;
  const what =
    c.kind === "refund"
      ? c.amountCents !== undefined
        ? `Refund ${formatCents(c.amountCents)} on order ${order}.`
        : `Refund what is still refundable on order ${order} (the customer named no amount).`
      : `Send a replacement for order ${order}.`;
  const reason = findReason(c.reason, c.reason);
  const quote = clip((customerWords ?? c.text).replace(/\s+/g, " ").trim(), 600);
  return {
    task: `${what}${reason ? ` Reason: ${reason}.` : ""} ${CUSTOMER_WROTE} "${quote}"`,
    order_number: order,
  };
}

/** What a brief asks the specialist to do: the requests before the quote (or, for a brief in other words, in all of it). */
export function readBrief(task: string): ParsedConcern[] {
  const SPECIALIST_KINDS = new Set(["refund", "replace", "status"]);
  const own = (text: string) => parseConcerns(text).filter((c) => SPECIALIST_KINDS.has(c.kind));
  const instruction = task.split(CUSTOMER_WROTE)[0]!;
  const jobs = own(instruction).length ? own(instruction) : own(task);
  const fallbackOrder = findOrderNumbers(task)[0];
  const reason = findReason(task, task);
  return jobs.map((j) => ({ ...j, order: j.order ?? fallbackOrder, ...(reason ? { reason } : {}) }));
}

// ---- the specialist's turn ------------------------------------------------------------------------------------

interface Call extends CallView {
  id: string;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const orderOf = (input: Record<string, unknown>) => (typeof input.order_number === "string" ? input.order_number.toUpperCase() : "");

function refundableCents(body: Record<string, unknown>): number | undefined {
  const direct = num(body.refundable_cents);
  if (direct !== undefined) return direct;
  const total = num(body.total_cents);
  return total === undefined ? undefined : total - (num(body.refunded_cents) ?? 0);
}

const TITLES: Record<SpecialistKey, string> = { returns: "Returns & refunds specialist", delivery: "Delivery problems specialist" };

type JobStep = { call: { name: string; input: Record<string, unknown> } } | { found?: string; done?: string; customer: string };

/**
 * The specialist's next response: tool calls, or its report. Stateless like the front-line model: it replays the
 * task, its calls and their results. It never verifies anyone (it has no such tool) and never asks the customer
 * anything (it does not speak to them): what it cannot do, it reports.
 */
export function specialistReply(request: OfflineRequest, role: SpecialistKey): OfflineReply {
  const { events } = readTranscript(request);
  const offered = new Set((request.tools ?? []).map((t) => t.name));
  const context = events.flatMap((e) => (e.kind === "context" ? [e.text] : [])).join(" ");
  const verified = /\bverified as\b/i.test(context) && !/\bnot verified\b/i.test(context);
  const task = events.find((e) => e.kind === "customer")?.text ?? "";
  const calls: Call[] = [];
  for (const e of events) {
    if (e.kind === "tool_use") calls.push({ id: e.id, name: e.name, input: e.input });
    if (e.kind === "tool_result") {
      const call = calls.find((c) => c.id === e.toolUseId);
      if (call) call.result = { isError: e.isError, body: e.body };
    }
  }
  const latest = (name: string, order: string) => calls.filter((c) => c.name === name && orderOf(c.input) === order).at(-1);
  const returns = [...offered].find((t) => SPECIALIST_TOOL.test(t) && keyOf(t) === "returns");

  const stepOf = (job: ParsedConcern): JobStep => {
    const order = job.order;
    if (!order) return { customer: "I need the order number to look into this; nothing was done." };
    if (!verified) return { customer: `I can't act on order ${order} until you're verified; nothing was done.` };
    const lookup = latest("lookup_order", order);
    if (!lookup) return { call: { name: "lookup_order", input: { order_number: order } } };
    if (!lookup.result) return { customer: "" }; // cannot happen: every call is answered before the next turn
    if (lookup.result.isError) return { customer: resultSentence(lookup) };
    const found = statusSentence(lookup.result.body);
    if (job.kind === "status") return { found, customer: found };
    const reason = job.reason || (role === "delivery" ? "delivery problem" : "return");
    if (job.kind === "replace") {
      const replaced = latest("create_replacement", order);
      if (!replaced) return { call: { name: "create_replacement", input: { order_number: order, reason } } };
      return outcome(found, replaced);
    }
    // Money back: the delivery specialist consults the returns & refunds specialist, as its instructions say.
    if (role === "delivery" && returns) {
      const asked = latest(returns, order);
      if (!asked) return { call: { name: returns, input: briefFor({ ...job, order, reason }, task.split(CUSTOMER_WROTE)[1]?.trim()) } };
      return outcome(found, asked);
    }
    if (!offered.has("refund_order")) return { found, customer: `I can't refund order ${order} from here; nothing was refunded.` };
    const refunded = latest("refund_order", order);
    if (refunded) return outcome(found, refunded);
    const refundable = refundableCents(lookup.result.body);
    if (refundable !== undefined && refundable <= 0)
      return { found, customer: `Order ${order} has no refundable balance left, so there is nothing more to refund on it.` };
    // Never more than is still refundable.
    const amount = Math.min(job.amountCents ?? refundable ?? 0, refundable ?? Number.POSITIVE_INFINITY);
    if (!amount) return { found, customer: `I couldn't tell how much is refundable on order ${order}; nothing was refunded.` };
    return { call: { name: "refund_order", input: { order_number: order, amount_cents: amount, reason } } };
  };

  const jobs = readBrief(task);
  const steps = jobs.map(stepOf);
  const next = steps.flatMap((s) => ("call" in s ? [s.call] : []));
  const unique = next.filter((c, i) => next.findIndex((d) => JSON.stringify(d) === JSON.stringify(c)) === i);
  if (unique.length)
    return { content: unique.map((c) => ({ type: "tool_use" as const, name: c.name, input: c.input })), stop_reason: "tool_use" };

  const done = steps.filter((s): s is Exclude<JobStep, { call: unknown }> => !("call" in s));
  const lines = [`${TITLES[role]} report.`];
  if (!jobs.length) lines.push("I could not tell what the task asks me to do; nothing was done.");
  const found = done.flatMap((s) => (s.found ? [s.found] : []));
  if (found.length) lines.push(`Found: ${found.join(" ")}`);
  const acted = done.flatMap((s) => (s.done ? [s.done] : []));
  lines.push(`Done: ${acted.length ? acted.join(" ") : "nothing."}`);
  const customer = done.map((s) => s.customer).filter(Boolean);
  lines.push(`For the customer: ${customer.length ? customer.join(" ") : "Nothing was changed on the account."}`);
  return { content: [{ type: "text", text: lines.join("\n") }], stop_reason: "end_turn" };
}

/** What one action came to: what was done (by its result alone), and the sentence for the customer. */
function outcome(found: string, call: Call): JobStep {
  const body = call.result?.body ?? {};
  const succeeded = call.result && !call.result.isError && !SPECIALIST_TOOL.test(call.name);
  const review = typeof body.review === "object" && body.review ? (body.review as { decision?: string }).decision : undefined;
  const done = succeeded ? `${call.name} ${JSON.stringify(call.input)} succeeded${review ? ` (a reviewer ${review} it)` : ""}.` : undefined;
  return { found, ...(done ? { done } : {}), customer: resultSentence(call) };
}

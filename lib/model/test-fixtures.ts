/**
 * Test-only: a small in-memory demo shop answering tool calls in the shapes lib/tools returns, and a
 * runner that plays a conversation through the real SDK client with the offline model. The shop's
 * facts live here, never in the model: it must learn them from these results.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { presentOrder } from "@/lib/tools/order-helpers";
import { maskAddress } from "@/lib/identity/mask-address";
import { ToolError } from "@/lib/tools/types";
import { formatCents } from "@/lib/money";
import { ADDRESS_CHANGE_LEVEL, verificationShortfall, type VerificationLevel } from "@/lib/identity/levels";
import { notVerified } from "@/lib/identity/verification";
import { createModelClient } from "./client";
import { createOfflineFetch, OfflineScript } from "./offline";
import type { MessageParam, ModelClient } from "./types";

export const TOOLS = [
  "verify_customer",
  "send_verification_code",
  "lookup_order",
  "list_orders",
  "refund_order",
  "create_replacement",
  "cancel_order",
  "update_shipping_address",
  "escalate_to_human",
].map((name) => ({ name, description: `The ${name} tool.`, input_schema: { type: "object" as const, properties: {} } }));

export const SYSTEM = "You are the customer support agent of an online shop.";

interface DemoOrder {
  number: string;
  totalCents: number;
  refundedCents: number;
  status: string;
  /** Omitted: the usual UPS shipment for the status; null: no shipment yet. */
  shipment?: { carrier: string; tracking: string; status: string } | null;
}

/** The lookup_order body for an order, built by the real tool's presenter. */
export function lookupBody(o: Pick<DemoOrder, "number" | "totalCents" | "status"> & Partial<DemoOrder>): Record<string, unknown> {
  return presentOrder({
    number: o.number,
    status: o.status,
    placedAt: new Date("2025-05-01T10:00:00Z"),
    totalCents: o.totalCents,
    refundedCents: o.refundedCents ?? 0,
    note: null,
    shipments:
      o.shipment === null
        ? []
        : [
            o.shipment ?? {
              carrier: "UPS",
              tracking: `1Z${o.number.replace("-", "")}`,
              status: o.status === "lost" ? "lost" : o.status === "processing" ? "label_created" : "delivered",
            },
          ],
    shippingAddress: { line1: "214 Alder Street", city: "Portland", postalCode: "97204", country: "US" },
  } as unknown as Parameters<typeof presentOrder>[0]);
}

export type ToolOutcome = { isError: boolean; body: Record<string, unknown> };

/** An in-memory shop with the demo customers; stateful like the database it stands for. */
export class FakeShop {
  readonly calls: Array<{ name: string; input: Record<string, unknown> }> = [];
  verifiedEmail: string | null = null;
  verifiedLevel: VerificationLevel | null = null;
  /** The one-time code "mailed" to each email (FakeShop's codes are fixed, so a test can type them). */
  static readonly CODE = "246810";
  readonly codesSent = new Set<string>();
  readonly customers = [
    { id: "c_dana", email: "dana@example.com", name: "Dana Reyes", postcode: "97204", orders: ["A-1001", "A-1002", "A-1003", "A-1004"] },
    { id: "c_sam", email: "sam@example.com", name: "Sam Okafor", postcode: "98101", orders: ["A-2001", "A-2002", "A-2003"] },
    { id: "c_alex1", email: "alex.kim@example.com", name: "Alex Kim", postcode: "73301", orders: ["A-3001"] },
    { id: "c_alex2", email: "akim@example.org", name: "Alex Kim", postcode: "60610", orders: ["A-3002"] },
  ];
  readonly orders = new Map<string, DemoOrder>(
    (
      [
        ["A-1001", 4250, "delivered"],
        ["A-1002", 25000, "delivered"],
        ["A-1003", 82000, "lost"],
        ["A-1004", 46000, "delivered"],
        ["A-2001", 12900, "processing"],
        ["A-2002", 7500, "processing"],
        ["A-2003", 18000, "delivered"],
        ["A-3001", 6000, "delivered"],
        ["A-3002", 48000, "delivered"],
      ] as const
    ).map(([number, totalCents, status]) => [number, { number, totalCents, status, refundedCents: 0 }]),
  );

  constructor(signedInAs?: string) {
    this.verifiedEmail = signedInAs ?? null;
    this.verifiedLevel = signedInAs ? "shop_signed" : null;
  }

  private owned(orderNumber: unknown): DemoOrder {
    const customer = this.customers.find((c) => c.email === this.verifiedEmail);
    if (!customer) throw new ToolError("permission", "The customer is not verified. Call verify_customer first.", true);
    const number = String(orderNumber).toUpperCase();
    const order = this.orders.get(number);
    if (!order || !customer.orders.includes(number)) {
      throw new ToolError(
        "business_rule",
        `No order ${number} was found on this customer's account. Ask the customer to check the order number.`,
        true,
      );
    }
    return order;
  }

  run(name: string, input: Record<string, unknown>): ToolOutcome {
    this.calls.push({ name, input });
    try {
      return { isError: false, body: this.execute(name, input) };
    } catch (err) {
      if (err instanceof ToolError) return { isError: true, body: err.toBody() as unknown as Record<string, unknown> };
      throw err;
    }
  }

  private execute(name: string, input: Record<string, unknown>): Record<string, unknown> {
    switch (name) {
      case "verify_customer": {
        // As lib/tools/verify-customer: the email with an order number on it (+ postcode), or with the code sent; never a name.
        if (typeof input.email !== "string")
          throw new ToolError(
            "business_rule",
            "Invalid arguments for verify_customer: email: Invalid input. Fix them and call again.",
            true,
          );
        const email = input.email.trim().toLowerCase();
        const customer = this.customers.find((c) => c.email === email);
        const str = (v: unknown) => (typeof v === "string" ? v.trim().toUpperCase() : undefined);
        const [order, postcode, code] = [str(input.order_number), str(input.postcode), str(input.code)];
        if (!order && !code) return { status: "needs_more", message: "The email alone proves nothing. Ask for an order number." };
        const ok = code
          ? code === FakeShop.CODE && this.codesSent.has(email) && !!customer
          : !!customer && customer.orders.includes(order!) && (postcode === undefined || postcode === customer.postcode);
        if (!ok || !customer) return notVerified(!!code);
        const level: VerificationLevel = code ? "email_code" : postcode ? "order_email_postcode" : "order_email";
        this.verifiedEmail = customer.email;
        this.verifiedLevel = level;
        return { status: "verified", customer_id: customer.id, name: customer.name, email: customer.email, level };
      }
      case "send_verification_code": {
        const email = String(input.email ?? "")
          .trim()
          .toLowerCase();
        if (this.customers.some((c) => c.email === email)) this.codesSent.add(email);
        return {
          status: "code_requested",
          expires_in_minutes: 10,
          message: "If an account exists for that email address, a 6-digit code was sent to it.",
        };
      }
      case "lookup_order":
        return lookupBody(this.owned(input.order_number));
      case "refund_order": {
        const order = this.owned(input.order_number);
        const amount = Number(input.amount_cents);
        const refundable = order.totalCents - order.refundedCents;
        if (amount > refundable)
          throw new ToolError("business_rule", `Only ${formatCents(refundable)} of ${order.number} is still refundable.`, false, {
            refundable_cents: refundable,
          });
        order.refundedCents += amount;
        return {
          status: "refunded",
          refund_id: `rf_${this.calls.length}`,
          order_number: order.number,
          amount_cents: amount,
          amount: formatCents(amount),
        };
      }
      case "create_replacement": {
        const order = this.owned(input.order_number);
        if (order.status !== "delivered" && order.status !== "lost")
          throw new ToolError("business_rule", `${order.number} is ${order.status}; only delivered or lost orders can be replaced.`, false);
        return { status: "replacement_created", order_number: order.number, value: formatCents(order.totalCents), tracking: "1ZRABC123" };
      }
      case "cancel_order": {
        const order = this.owned(input.order_number);
        if (order.status !== "processing")
          throw new ToolError("business_rule", `${order.number} is ${order.status} and can no longer be cancelled.`, false);
        const refund = order.totalCents - order.refundedCents;
        order.status = "cancelled";
        order.refundedCents = order.totalCents;
        return { status: "cancelled", order_number: order.number, refunded_cents: refund, refunded: formatCents(refund) };
      }
      case "update_shipping_address": {
        const order = this.owned(input.order_number);
        const shortfall = verificationShortfall(this.verifiedLevel, ADDRESS_CHANGE_LEVEL);
        if (shortfall) {
          const { message, ...extra } = shortfall;
          throw new ToolError("permission", `Nothing was changed. ${message}`, true, extra);
        }
        if (order.status !== "processing")
          throw new ToolError("business_rule", `${order.number} is ${order.status}; its address can no longer be changed.`, false);
        return { status: "address_updated", order_number: order.number, address: maskAddress(input.address) };
      }
      case "list_orders": {
        const customer = this.customers.find((c) => c.email === this.verifiedEmail);
        if (!customer) throw new ToolError("permission", "The customer is not verified. Call verify_customer first.", true);
        return {
          orders: customer.orders
            .map((n) => this.orders.get(n)!)
            .map((o) => ({
              order_number: o.number,
              status: o.status,
              total_cents: o.totalCents,
              total: formatCents(o.totalCents),
              note: null,
            })),
        };
      }
      case "escalate_to_human":
        return {
          status: "escalated",
          handoff_id: "ho_1",
          message: "A person from the team will take over this conversation. Tell the customer honestly; do not promise an outcome.",
        };
      default:
        throw new ToolError("permission", `The tool ${name} is not available in this shop.`, false);
    }
  }
}

export const toolUses = (m: Anthropic.Message) => m.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
export const replyText = (m: Anthropic.Message) =>
  m.content
    .filter((b): b is Anthropic.TextBlock => b.type === "text")
    .map((b) => b.text)
    .join(" ");

/** A model client on a fresh offline fetch; the script is exposed for scripted steps and recorded requests. */
export function offlineClient(opts: { script?: OfflineScript; maxRetries?: number; timeoutMs?: number } = {}) {
  const script = opts.script ?? new OfflineScript();
  const client = createModelClient({
    fetch: createOfflineFetch({ script }),
    maxRetries: opts.maxRetries ?? 0,
    timeoutMs: opts.timeoutMs,
    apiKey: undefined,
  });
  return { client, script };
}

/**
 * A conversation played the way the runtime plays it: send; for tool_use run every call against the
 * shop and answer them all in one user message; until the model ends its turn (bounded).
 */
export class Conversation {
  readonly messages: MessageParam[] = [];
  readonly toolCalls: Array<{ name: string; input: Record<string, unknown> }> = [];

  constructor(
    readonly shop: FakeShop,
    readonly client: ModelClient = offlineClient().client,
    readonly context?: string,
  ) {}

  /** The customer writes; returns the final reply text and the messages the model produced on the way. */
  async say(text: string, opts: { stream?: boolean } = {}): Promise<{ reply: string; turns: Anthropic.Message[] }> {
    const blocks: Anthropic.TextBlockParam[] = [];
    if (this.context && this.messages.length === 0) blocks.push({ type: "text", text: this.context });
    blocks.push({ type: "text", text });
    this.messages.push({ role: "user", content: blocks });
    const turns: Anthropic.Message[] = [];
    for (let i = 0; i < 10; i++) {
      const { message } = await this.client.send({ system: SYSTEM, tools: TOOLS, messages: this.messages, maxTokens: 1024 }, opts);
      turns.push(message);
      this.messages.push({ role: "assistant", content: message.content as Anthropic.ContentBlockParam[] });
      if (message.stop_reason !== "tool_use") return { reply: replyText(message), turns };
      const results = toolUses(message).map((use) => {
        const input = use.input as Record<string, unknown>;
        this.toolCalls.push({ name: use.name, input });
        const out = this.shop.run(use.name, input);
        return {
          type: "tool_result" as const,
          tool_use_id: use.id,
          content: JSON.stringify(out.body),
          ...(out.isError ? { is_error: true } : {}),
        };
      });
      this.messages.push({ role: "user", content: results });
    }
    throw new Error("conversation did not end within 10 model turns");
  }
}

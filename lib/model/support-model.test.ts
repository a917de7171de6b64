import { describe, expect, it } from "vitest";
import type Anthropic from "@anthropic-ai/sdk";
import { ToolError } from "@/lib/tools/types";
import { Conversation, FakeShop, lookupBody, offlineClient, replyText, SYSTEM, TOOLS, toolUses } from "./test-fixtures";
import { OfflineScript } from "./offline";
import { notVerified } from "@/lib/identity/verification";
import type { MessageParam } from "./types";

const DANA = "[context] The shop signed the customer in as dana@example.com (Dana Reyes).";
const SAM = "[context] The shop signed the customer in as sam@example.com (Sam Okafor).";

type Call = [name: string, input: Record<string, unknown>, body: Record<string, unknown>, isError?: boolean];

/** Builds a transcript by hand: customer texts, assistant replies, and tool calls with the results a real tool returns. */
function conversation() {
  const messages: MessageParam[] = [];
  let n = 0;
  const api = {
    messages,
    user(...texts: string[]) {
      messages.push({ role: "user", content: texts.map((text) => ({ type: "text" as const, text })) });
      return api;
    },
    assistant(text: string) {
      messages.push({ role: "assistant", content: [{ type: "text", text }] });
      return api;
    },
    /** One assistant turn with these calls, answered in ONE user message (plus customer text that arrived meanwhile). */
    tools(calls: Call[], lateCustomerText?: string) {
      const ids = calls.map(() => `toolu_test${++n}`);
      messages.push({
        role: "assistant",
        content: calls.map(([name, input], i) => ({ type: "tool_use" as const, id: ids[i]!, name, input })),
      });
      messages.push({
        role: "user",
        content: [
          ...calls.map(([, , body, isError], i) => ({
            type: "tool_result" as const,
            tool_use_id: ids[i]!,
            content: JSON.stringify(body),
            ...(isError ? { is_error: true } : {}),
          })),
          ...(lateCustomerText ? [{ type: "text" as const, text: lateCustomerText }] : []),
        ],
      });
      return api;
    },
  };
  return api;
}

async function next(messages: MessageParam[], stream = false): Promise<Anthropic.Message> {
  const { client } = offlineClient();
  return (await client.send({ system: SYSTEM, tools: TOOLS, messages, maxTokens: 1024 }, { stream })).message;
}

const errorBody = (err: ToolError) => err.toBody() as unknown as Record<string, unknown>;
const refunded = (order: string, cents: number, amount: string) => ({
  status: "refunded",
  refund_id: "rf_1",
  order_number: order,
  amount_cents: cents,
  amount,
});
const lookup = (number: string, totalCents: number, status: string, refundedCents = 0) =>
  lookupBody({ number, totalCents, status, refundedCents });

// The claims the runtime's stop check looks for; a reply may only make them when a tool result shows the effect.
const CLAIMS_REFUND =
  /\b(i(?:'ve| have)\s+(?:just\s+)?(?:issued|processed|refunded|sent)|has been refunded|have been refunded|refund (?:has been|was|is) (?:issued|processed|completed|done)|refunded \$)/i;
const CLAIMS_ANY =
  /\b(i(?:'ve| have)\s+(?:just\s+)?(?:issued|processed|refunded|sent|cancell?ed|arranged|created|shipped|updated|changed)|has been (?:refunded|cancell?ed)|refunded \$)/i;

type NextTools = { tools: Array<[name: string, input?: Record<string, unknown>]> };
type NextReply = { reply: RegExp[]; not?: RegExp[] };

const CASES: Array<[string, MessageParam[], NextTools | NextReply]> = [
  // greeting / unclear
  ["greeting → ask how to help", conversation().user("hi").messages, { reply: [/How can I help/] }],
  ["unclear → ask how to help", conversation().user("blorp zzz").messages, { reply: [/not sure I understood/, /What can I do for you/] }],
  [
    "thanks after a reply (even one written without tools) → anything else",
    conversation().user("where is A-1001?", "dana@example.com").assistant("Order A-1001 was delivered.").user("thanks!").messages,
    { reply: [/You're welcome/] },
  ],

  // identity
  [
    "email + order number in one message → verify",
    conversation().user("Where is my order A-1001? My email is Dana@Example.com").messages,
    { tools: [["verify_customer", { email: "dana@example.com", order_number: "A-1001" }]] },
  ],
  [
    "email and order number across messages → verify",
    conversation()
      .user("refund A-1002, it arrived damaged")
      .assistant("To verify your account, could you tell me the email address you used for order A-1002?")
      .user("sure, it's dana@example.com").messages,
    { tools: [["verify_customer", { email: "dana@example.com", order_number: "A-1002" }]] },
  ],
  [
    "signed in by the shop → no verification",
    conversation().user(DANA, "where is my order A-1001").messages,
    { tools: [["lookup_order", { order_number: "A-1001" }]] },
  ],
  [
    "signed in, in the runtime's own [context] wording → no verification",
    conversation().user(
      "[context] The shop signed this customer in: Sam Okafor <sam@example.com>. Their identity is verified.",
      "please cancel A-2002",
    ).messages,
    { tools: [["cancel_order", { order_number: "A-2002" }]] },
  ],
  [
    "account action without identity → ask email and order number",
    conversation().user("I want a refund").messages,
    { reply: [/email address/, /order number/] },
  ],
  [
    "order number but no email → ask for the email",
    conversation().user("cancel A-2001").messages,
    { reply: [/email address you used for order A-2001/] },
  ],
  [
    "email but no order number → ask for one",
    conversation().user("where is my stuff? I'm dana@example.com").messages,
    { reply: [/order number/] },
  ],
  [
    "name only with an order request → ask for the email and an order number, never verify by name",
    conversation().user("Hi, I'm Alex Kim. I want a refund for my last order.").messages,
    { reply: [/email address/, /order number/] },
  ],
  [
    "a name and an order number → still ask for the email",
    conversation().user("this is Dana Reyes, order A-1001. Where is it?").messages,
    { reply: [/email address you used for order A-1001/] },
  ],
  [
    "not_verified → the same words whatever was wrong, and the code offered",
    conversation()
      .user("where is A-1001? I'm nobody@example.com")
      .tools([["verify_customer", { email: "nobody@example.com", order_number: "A-1001" }, notVerified(false)]]).messages,
    { reply: [/don't match our records/, /double-check/, /one-time code/] },
  ],

  // order status
  [
    "status → reply with status, carrier and tracking",
    conversation()
      .user(DANA, "where is my order A-1001")
      .tools([["lookup_order", { order_number: "A-1001" }, lookup("A-1001", 4250, "delivered")]]).messages,
    { reply: [/A-1001 was delivered/, /UPS/, /1ZA1001/] },
  ],
  [
    "lost order → say so and offer options",
    conversation()
      .user(DANA, "Where is A-1003??")
      .tools([["lookup_order", { order_number: "A-1003" }, lookup("A-1003", 82000, "lost")]]).messages,
    { reply: [/A-1003 was lost in transit/, /replacement or refund/], not: [CLAIMS_ANY] },
  ],

  // refunds
  [
    "refund without amount → look the order up first",
    conversation().user(DANA, "refund A-1002, it arrived damaged").messages,
    { tools: [["lookup_order", { order_number: "A-1002" }]] },
  ],
  [
    "refund after lookup → refund what is refundable, with the customer's reason",
    conversation()
      .user(DANA, "refund A-1002, it arrived damaged")
      .tools([["lookup_order", { order_number: "A-1002" }, lookup("A-1002", 25000, "delivered")]]).messages,
    { tools: [["refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }]] },
  ],
  [
    "refund learns the amount from the result, never hard-coded",
    conversation()
      .user(DANA, "I want my money back for A-1004")
      .tools([["lookup_order", { order_number: "A-1004" }, lookup("A-1004", 46000, "delivered", 6000)]]).messages,
    { tools: [["refund_order", { order_number: "A-1004", amount_cents: 40000 }]] },
  ],
  [
    "explicit amount → refund directly",
    conversation().user(DANA, "refund $150 of A-1002").messages,
    { tools: [["refund_order", { order_number: "A-1002", amount_cents: 15000 }]] },
  ],
  [
    "refund result → say exactly what was refunded",
    conversation()
      .user(DANA, "refund $42.50 of A-1001")
      .tools([
        [
          "refund_order",
          { order_number: "A-1001", amount_cents: 4250, reason: "refund $42.50 of A-1001" },
          refunded("A-1001", 4250, "$42.50"),
        ],
      ]).messages,
    { reply: [/I've refunded \$42\.50 on order A-1001 to your original payment method/] },
  ],
  [
    "nothing left to refund → say so, no refund call",
    conversation()
      .user(DANA, "refund A-1001 please")
      .tools([["lookup_order", { order_number: "A-1001" }, lookup("A-1001", 4250, "delivered", 4250)]]).messages,
    { reply: [/A-1001 has no refundable balance/], not: [CLAIMS_REFUND] },
  ],

  // replacement, cancellation, address
  [
    "replacement",
    conversation().user(DANA, "send me a replacement for A-1002").messages,
    { tools: [["create_replacement", { order_number: "A-1002" }]] },
  ],
  [
    "'replace it' refers to the order discussed",
    conversation()
      .user(DANA, "my order A-1002 arrived damaged")
      .assistant("I'm sorry to hear that. Would you like a refund or a replacement?")
      .user("replace it").messages,
    { tools: [["create_replacement", { order_number: "A-1002", reason: "arrived damaged" }]] },
  ],
  ["cancellation", conversation().user(SAM, "cancel A-2001").messages, { tools: [["cancel_order", { order_number: "A-2001" }]] }],
  [
    "cancellation result → cancelled, without claiming a separate refund",
    conversation()
      .user(SAM, "cancel A-2001")
      .tools([
        [
          "cancel_order",
          { order_number: "A-2001", reason: "cancel A-2001" },
          { status: "cancelled", order_number: "A-2001", refunded_cents: 12900, refunded: "$129.00" },
        ],
      ]).messages,
    { reply: [/I've cancelled order A-2001/, /\$129\.00/], not: [CLAIMS_REFUND] },
  ],
  [
    "address change → parsed address",
    conversation().user(SAM, "change the address of A-2002 to 12 New Street, Springfield, 12345, US").messages,
    {
      tools: [
        [
          "update_shipping_address",
          { order_number: "A-2002", address: { line1: "12 New Street", city: "Springfield", postalCode: "12345", country: "US" } },
        ],
      ],
    },
  ],
  [
    "address change without the address → ask for it",
    conversation().user(SAM, "I need to change the delivery address of A-2002").messages,
    { reply: [/new delivery address for A-2002/] },
  ],

  // a person
  ...["I want to talk to a human", "agent please", "can I speak to a real person?"].map((text): [string, MessageParam[], NextTools] => [
    `"${text}" → escalate at once, no verification`,
    conversation().user(text).messages,
    { tools: [["escalate_to_human", { trigger: "customer_request" }]] },
  ]),
  [
    "after escalating → a person will take over",
    conversation()
      .user("agent please")
      .tools([
        [
          "escalate_to_human",
          { trigger: "customer_request", summary: "x" },
          { status: "escalated", handoff_id: "ho_1", message: "A person from the team will take over this conversation." },
        ],
      ]).messages,
    { reply: [/person from our team to take over/] },
  ],

  // policy gaps
  ...[
    "can you price match",
    "refund my shipping on an order from two years ago",
    "I want compensation for my time",
    "pay me for the damage to my table",
  ].map((text): [string, MessageParam[], NextTools] => [
    `"${text}" → policy gap`,
    conversation().user(DANA, text).messages,
    { tools: [["escalate_to_human", { trigger: "policy_gap" }]] },
  ]),

  // several concerns in one message
  [
    "two concerns → parallel calls in one reply",
    conversation().user(DANA, "Where is A-1003? Also please refund A-1001").messages,
    {
      tools: [
        ["lookup_order", { order_number: "A-1003" }],
        ["lookup_order", { order_number: "A-1001" }],
      ],
    },
  ],
  [
    "two concerns with an explicit amount → status lookup and refund in parallel",
    conversation().user(DANA, "Where is A-1003? Also please refund $20 of A-1001").messages,
    {
      tools: [
        ["lookup_order", { order_number: "A-1003" }],
        ["refund_order", { order_number: "A-1001", amount_cents: 2000 }],
      ],
    },
  ],

  // tool errors
  [
    "permission 'verify first' with identity at hand → verify",
    conversation()
      .user(DANA, "where is A-1001")
      .tools([
        [
          "lookup_order",
          { order_number: "A-1001" },
          errorBody(
            new ToolError("permission", "The customer's verification expired. Call verify_customer again before any account action.", true),
          ),
          true,
        ],
      ]).messages,
    { tools: [["verify_customer", { email: "dana@example.com", order_number: "A-1001" }]] },
  ],
  [
    "permission 'verify first' without identity → ask",
    conversation()
      .user("where is A-1001")
      .tools([
        [
          "lookup_order",
          { order_number: "A-1001" },
          errorBody(new ToolError("permission", "The customer is not verified. Call verify_customer first.", true)),
          true,
        ],
      ]).messages,
    { reply: [/email address you used for order A-1001/] },
  ],
  [
    "business rule → explain the message, no retry",
    conversation()
      .user(SAM, "cancel A-2003")
      .tools([
        [
          "cancel_order",
          { order_number: "A-2003", reason: "cancel A-2003" },
          errorBody(
            new ToolError("business_rule", "A-2003 is delivered and can no longer be cancelled. Explain this to the customer.", false),
          ),
          true,
        ],
      ]).messages,
    { reply: [/couldn't cancel A-2003: A-2003 is delivered and can no longer be cancelled\./], not: [/Explain this/] },
  ],
  [
    "a result that was escalated → a person will follow up",
    conversation()
      .user(DANA, "refund $900 of A-1003")
      .tools([
        [
          "refund_order",
          { order_number: "A-1003", amount_cents: 90000, reason: "x" },
          {
            error_category: "business_rule",
            is_retryable: false,
            message:
              "Refunds above $500.00 cannot be made by the agent or approved in the queue. A person has been asked to review this case; tell the customer so and do not retry.",
            escalated: true,
            handoff_id: "ho_9",
          },
          true,
        ],
      ]).messages,
    { reply: [/passed it to our team/, /person will follow up/], not: [CLAIMS_ANY] },
  ],
  [
    "transient error → retry once with the same call",
    conversation()
      .user(DANA, "refund $100 of A-1002")
      .tools([
        [
          "refund_order",
          { order_number: "A-1002", amount_cents: 10000, reason: "r" },
          { error_category: "transient", is_retryable: true, message: "The payment provider timed out." },
          true,
        ],
      ]).messages,
    { tools: [["refund_order", { order_number: "A-1002", amount_cents: 10000, reason: "r" }]] },
  ],
  [
    "transient error twice → escalate no_progress",
    conversation()
      .user(DANA, "refund $100 of A-1002")
      .tools([
        [
          "refund_order",
          { order_number: "A-1002", amount_cents: 10000, reason: "r" },
          { error_category: "transient", is_retryable: true, message: "The payment provider timed out." },
          true,
        ],
      ])
      .tools([
        [
          "refund_order",
          { order_number: "A-1002", amount_cents: 10000, reason: "r" },
          { error_category: "transient", is_retryable: true, message: "The payment provider timed out." },
          true,
        ],
      ]).messages,
    { tools: [["escalate_to_human", { trigger: "no_progress", order_number: "A-1002", amount_cents: 10000 }]] },
  ],
  [
    "transient exhausted by the harness → escalate at once",
    conversation()
      .user(DANA, "refund $100 of A-1002")
      .tools([
        [
          "refund_order",
          { order_number: "A-1002", amount_cents: 10000, reason: "r" },
          {
            error_category: "transient",
            is_retryable: false,
            exhausted: true,
            message: "Provider down. Gave up after 3 attempts; nothing was done. Escalate to a person.",
          },
          true,
        ],
      ]).messages,
    { tools: [["escalate_to_human", { trigger: "no_progress" }]] },
  ],
  [
    "after a no_progress escalation → apologise, a person follows up",
    conversation()
      .user(DANA, "refund $100 of A-1002")
      .tools([
        [
          "refund_order",
          { order_number: "A-1002", amount_cents: 10000, reason: "r" },
          { error_category: "transient", is_retryable: false, message: "Provider down." },
          true,
        ],
      ])
      .tools([
        [
          "escalate_to_human",
          { trigger: "no_progress", summary: "s", order_number: "A-1002" },
          { status: "escalated", handoff_id: "ho_2", message: "A person will take over." },
        ],
      ]).messages,
    { reply: [/sorry/i, /person from our team who will follow up/], not: [CLAIMS_REFUND] },
  ],

  // a reviewer's decision on a parked call
  [
    "approved → good news, what was done",
    conversation()
      .user(DANA, "refund A-1002, it arrived damaged")
      .tools([["lookup_order", { order_number: "A-1002" }, lookup("A-1002", 25000, "delivered")]])
      .tools([
        [
          "refund_order",
          { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" },
          { ...refunded("A-1002", 25000, "$250.00"), review: { decision: "approved", by: "Raj", amount_cents: 25000 } },
        ],
      ]).messages,
    { reply: [/Good news: our team approved it — I've refunded \$250\.00 on order A-1002/] },
  ],
  [
    "edited → what was executed versus what was asked",
    conversation()
      .user(DANA, "refund A-1002, it arrived damaged")
      .tools([
        [
          "refund_order",
          { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" },
          {
            ...refunded("A-1002", 15000, "$150.00"),
            review: {
              decision: "edited",
              by: "Rita",
              original_input: { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" },
              executed_input: { order_number: "A-1002", amount_cents: 15000, reason: "arrived damaged" },
              amount_cents: 15000,
              note: null,
            },
          },
        ],
      ]).messages,
    {
      reply: [/instead of the \$250\.00 you asked for, they approved \$150\.00/, /I've refunded \$150\.00 on order A-1002/],
      not: [/refunded \$250/],
    },
  ],
  [
    "denied → the denial and its reason, no action",
    conversation()
      .user(DANA, "refund A-1004")
      .tools([
        [
          "refund_order",
          { order_number: "A-1004", amount_cents: 46000, reason: "refund A-1004" },
          {
            error_category: "permission",
            is_retryable: false,
            message:
              "A reviewer (Rita) denied this request: outside the 30-day window. Nothing was done. Explain this to the customer; do not retry.",
            review: { decision: "denied", by: "Rita", reason: "outside the 30-day window" },
          },
          true,
        ],
      ]).messages,
    { reply: [/declined it: outside the 30-day window/, /Nothing was changed/], not: [CLAIMS_ANY, /expired/] },
  ],
  [
    "expired → nothing done, not a denial",
    conversation()
      .user(DANA, "refund A-1003")
      .tools([
        [
          "refund_order",
          { order_number: "A-1003", amount_cents: 82000, reason: "refund A-1003" },
          {
            error_category: "business_rule",
            is_retryable: false,
            message:
              "The approval request expired without a decision. Nothing was done. This is not a denial: tell the customer a person will follow up.",
            review: { decision: "expired" },
          },
          true,
        ],
      ]).messages,
    {
      reply: [/expired before anyone decided/, /nothing was done/, /isn't a refusal/, /\$820\.00 on A-1003/],
      not: [/declined/, CLAIMS_ANY],
    },
  ],

  // the harness stop check
  [
    "[harness] false claim → rewrite saying only what results show",
    conversation()
      .user(DANA, "refund A-1002")
      .assistant("I've refunded $250.00 to your card!")
      .user(
        "[harness] stop-check: Your reply says a refund was done, but no refund was executed in this run. Say only what the tool results show was done.",
      ).messages,
    { reply: [/correct my last message/, /nothing has been done yet about order A-1002/], not: [CLAIMS_ANY] },
  ],
  [
    "[harness] correction keeps what was really done",
    conversation()
      .user(DANA, "Where is A-1003? Also please refund $20 of A-1001")
      .tools([
        ["lookup_order", { order_number: "A-1003" }, lookup("A-1003", 82000, "lost")],
        ["refund_order", { order_number: "A-1001", amount_cents: 2000, reason: "x" }, refunded("A-1001", 2000, "$20.00")],
      ])
      .assistant("All done, I've cancelled A-1003 too.")
      .user(
        "[harness] stop-check: Your reply says a cancellation was done, but no cancellation was executed in this run. Say only what the tool results show was done.",
      ).messages,
    { reply: [/correct my last message/, /A-1003 was lost in transit/, /I've refunded \$20\.00 on order A-1001/], not: [/cancelled/] },
  ],

  // customer text that arrived while tools ran
  [
    "late customer text → finish the pending concern first",
    conversation()
      .user(DANA, "refund A-1002, it arrived damaged")
      .tools([["lookup_order", { order_number: "A-1002" }, lookup("A-1002", 25000, "delivered")]], "oh and where is A-1004?").messages,
    { tools: [["refund_order", { order_number: "A-1002", amount_cents: 25000 }]] },
  ],
  [
    "late customer text → then the new concern",
    conversation()
      .user(DANA, "refund A-1002, it arrived damaged")
      .tools([["lookup_order", { order_number: "A-1002" }, lookup("A-1002", 25000, "delivered")]], "oh and where is A-1004?")
      .tools([
        ["refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }, refunded("A-1002", 25000, "$250.00")],
      ]).messages,
    { tools: [["lookup_order", { order_number: "A-1004" }]] },
  ],

  [
    "'yes, go ahead' after a corrected reply → act on what it left undone",
    conversation()
      .user(DANA, "refund $100 of A-1002")
      .assistant("I've refunded $100.00 to your card!")
      .user(
        "[harness] stop-check: Your reply says a refund was done, but no refund was executed in this run. Say only what the tool results show was done.",
      )
      .assistant(
        "Sorry, I need to correct my last message: nothing has been done yet about order A-1002. Let me know if you'd like me to go ahead.",
      )
      .user("yes please go ahead").messages,
    { tools: [["refund_order", { order_number: "A-1002", amount_cents: 10000 }]] },
  ],

  // pause_turn
  [
    "a paused turn is continued to the end",
    conversation()
      .user(DANA, "where is A-1001")
      .tools([["lookup_order", { order_number: "A-1001" }, lookup("A-1001", 4250, "delivered")]])
      .assistant("Let me check that for you.").messages,
    { reply: [/A-1001 was delivered/] },
  ],
];

describe("the offline support model, one step at a time", () => {
  it.each(CASES)("%s", async (_name, messages, expected) => {
    const message = await next(messages);
    if ("tools" in expected) {
      expect(message.stop_reason).toBe("tool_use");
      const uses = toolUses(message);
      expect(uses.map((u) => u.name)).toEqual(expected.tools.map(([name]) => name));
      expected.tools.forEach(([, input], i) => {
        if (input) expect(uses[i]!.input).toMatchObject(input);
      });
      expect(new Set(uses.map((u) => u.id)).size).toBe(uses.length);
    } else {
      expect(message.stop_reason).toBe("end_turn");
      expect(toolUses(message)).toHaveLength(0);
      const text = replyText(message);
      for (const re of expected.reply) expect(text).toMatch(re);
      for (const re of expected.not ?? []) expect(text).not.toMatch(re);
    }
  });

  it("answers the same in streaming mode", async () => {
    for (const [, messages] of CASES.slice(0, 12)) {
      const a = await next(messages);
      const b = await next(messages, true);
      expect(b.content).toEqual(a.content);
      expect(b.stop_reason).toBe(a.stop_reason);
    }
  });

  it("writes a self-contained escalation record", async () => {
    const message = await next(conversation().user(DANA, "pay me for the damage to my table, order A-1002").messages);
    const input = toolUses(message)[0]!.input as Record<string, string>;
    expect(input).toMatchObject({ trigger: "policy_gap", order_number: "A-1002" });
    expect(input.summary).toContain("pay me for the damage to my table");
    for (const k of ["summary", "tried", "root_cause", "recommended_action"]) expect(input[k]!.length).toBeGreaterThan(0);
  });
});

describe("whole conversations against the demo shop", () => {
  it("a refund from a customer who is not signed in: ask, verify, look up, refund, confirm", async () => {
    const convo = new Conversation(new FakeShop());
    expect((await convo.say("hi")).reply).toMatch(/How can I help/);
    const ask = await convo.say("My order A-1002 arrived damaged and I want a refund");
    expect(ask.reply).toMatch(/email address you used for order A-1002/);
    expect(convo.toolCalls).toHaveLength(0);
    const done = await convo.say("dana@example.com", { stream: true });
    expect(convo.toolCalls).toEqual([
      { name: "verify_customer", input: { email: "dana@example.com", order_number: "A-1002" } },
      { name: "lookup_order", input: { order_number: "A-1002" } },
      { name: "refund_order", input: { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" } },
    ]);
    expect(done.reply).toBe("I've refunded $250.00 on order A-1002 to your original payment method.");
    expect(done.turns.map((t) => t.stop_reason)).toEqual(["tool_use", "tool_use", "tool_use", "end_turn"]);
    expect(convo.shop.orders.get("A-1002")!.refundedCents).toBe(25000);
    // Asking again: the model looks again and finds nothing left, instead of refunding twice.
    const again = await convo.say("refund A-1002 again please");
    expect(again.reply).toMatch(/no refundable balance/);
    expect(convo.toolCalls.filter((c) => c.name === "refund_order")).toHaveLength(1);
  });

  it("the two Alex Kims: a name never verifies → asked for email and order → verified by email → refund", async () => {
    const convo = new Conversation(new FakeShop());
    const first = await convo.say("Hi, I'm Alex Kim. I want a refund for my last order.");
    expect(convo.toolCalls).toEqual([]);
    expect(first.reply).toMatch(/email address/);
    const second = await convo.say("it's alex.kim@example.com");
    expect(convo.toolCalls).toHaveLength(0); // still no order number: asked, not guessed
    expect(second.reply).toMatch(/order number/);
    const third = await convo.say("A-3001");
    expect(convo.toolCalls.map((c) => c.name)).toEqual(["verify_customer", "lookup_order", "refund_order"]);
    expect(convo.toolCalls[0]!.input).toEqual({ email: "alex.kim@example.com", order_number: "A-3001" });
    expect(convo.toolCalls[2]!.input).toMatchObject({ order_number: "A-3001", amount_cents: 6000 });
    expect(third.reply).toMatch(/refunded \$60\.00 on order A-3001/);
  });

  it("two concerns in one message: parallel calls, then one reply answering both", async () => {
    const convo = new Conversation(new FakeShop("dana@example.com"), undefined, DANA);
    const { reply, turns } = await convo.say("Where is A-1003? Also please refund A-1001");
    expect(toolUses(turns[0]!).map((u) => [u.name, u.input])).toEqual([
      ["lookup_order", { order_number: "A-1003" }],
      ["lookup_order", { order_number: "A-1001" }],
    ]);
    expect(toolUses(turns[1]!).map((u) => u.name)).toEqual(["refund_order"]);
    expect(reply).toMatch(/A-1003 was lost in transit/);
    expect(reply).toMatch(/I've refunded \$42\.50 on order A-1001/);
  });

  it("a person on request, at once, whatever else was going on", async () => {
    const convo = new Conversation(new FakeShop());
    await convo.say("refund A-1002 please");
    const { reply } = await convo.say("ugh. real person please");
    expect(convo.toolCalls.map((c) => [c.name, c.input.trigger])).toEqual([["escalate_to_human", "customer_request"]]);
    expect(reply).toMatch(/person from our team to take over/);
  });

  it("cancellation and address change for a signed-in customer, learning the facts from results", async () => {
    const convo = new Conversation(new FakeShop("sam@example.com"), undefined, SAM);
    const cancel = await convo.say("please cancel A-2001, I ordered it by mistake");
    expect(convo.toolCalls[0]).toEqual({ name: "cancel_order", input: { order_number: "A-2001", reason: "ordered it by mistake" } });
    expect(cancel.reply).toMatch(/I've cancelled order A-2001, and the \$129\.00 you paid goes back/);
    const address = await convo.say("and change the address of A-2002 to 12 New Street, Springfield, 12345, US");
    expect(address.reply).toBe("I've changed the delivery address of order A-2002 to …reet, Springfield 12…, US.");
    const refused = await convo.say("can you change the address of A-2003 to 1 Main St, Boston, 02108, US");
    expect(refused.reply).toMatch(
      /couldn't change the delivery address of A-2003: A-2003 is delivered; its address can no longer be changed/,
    );
  });

  it("a scripted pause_turn is continued and the run finishes with end_turn", async () => {
    const script = new OfflineScript([
      { reply: { content: [{ type: "text", text: "Let me look into that." }], stop_reason: "pause_turn" } },
    ]);
    const { client } = offlineClient({ script });
    const messages: MessageParam[] = [{ role: "user", content: "hi there" }];
    const paused = (await client.send({ system: SYSTEM, tools: TOOLS, messages, maxTokens: 100 })).message;
    expect(paused.stop_reason).toBe("pause_turn");
    messages.push({ role: "assistant", content: paused.content as Anthropic.ContentBlockParam[] });
    const resumed = (await client.send({ system: SYSTEM, tools: TOOLS, messages, maxTokens: 100 })).message;
    expect(resumed.stop_reason).toBe("end_turn");
    expect(replyText(resumed)).toMatch(/How can I help/);
  });
});

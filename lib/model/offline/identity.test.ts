import { describe, expect, it } from "vitest";
import type Anthropic from "@anthropic-ai/sdk";
import { ToolError } from "@/lib/tools/types";
import { verificationShortfall } from "@/lib/identity/levels";
import { Conversation, FakeShop, offlineClient, replyText, SYSTEM, TOOLS, toolUses } from "../test-fixtures";
import type { MessageParam } from "../types";
import { asksForCode, findCode, findPostcode } from "./identity";

// The offline model's identity dialogue: email + order number, a code when asked for (or no order number at
// hand), the postcode before an address change — and never a name.

describe("reading identity from text", () => {
  it.each([
    ["my code is 123456", false, "123456"],
    ["Code: 123 456", false, "123456"],
    ["the verification code I got is 004211, thanks", false, "004211"],
    ["123456", true, "123456"],
    ["123456", false, undefined],
    ["order A-123456", true, undefined],
    ["I paid $123456 for it and it broke and I am really not happy about this", true, undefined],
  ])("findCode(%j, awaited %s) → %s", (text, awaited, code) => {
    expect(findCode(text, awaited)).toBe(code);
  });

  it.each([
    ["my postcode is 97204", false, "97204"],
    ["zip: 98101", false, "98101"],
    ["postal code SW1A 2AA", false, "SW1A 2AA"],
    ["98101", true, "98101"],
    ["98101", false, undefined],
    ["sure, go ahead", true, undefined],
  ])("findPostcode(%j, awaited %s) → %s", (text, awaited, postcode) => {
    expect(findPostcode(text, awaited)).toBe(postcode);
  });

  it.each([
    ["can you send me a code?", true],
    ["please email me a verification code", true],
    ["I don't have my order number", true],
    ["I lost my order number", true],
    ["where is my order A-1001", false],
    ["the discount code didn't work", false],
  ])("asksForCode(%j) → %s", (text, asks) => {
    expect(asksForCode(text)).toBe(asks);
  });
});

async function next(messages: MessageParam[]): Promise<Anthropic.Message> {
  const { client } = offlineClient();
  return (await client.send({ system: SYSTEM, tools: TOOLS, messages, maxTokens: 1024 })).message;
}

describe("the identity dialogue", () => {
  it("a name and an order number never verify: the model asks for the email and calls nothing", async () => {
    const convo = new Conversation(new FakeShop());
    const { reply } = await convo.say("this is Dana Reyes, order A-1001. Where is it? What's the tracking number?");
    expect(convo.toolCalls).toEqual([]);
    expect(reply).toMatch(/email address you used for order A-1001/);
  });

  it("a code instead of an order number: send it, read it from the customer, verify, then answer", async () => {
    const shop = new FakeShop();
    const convo = new Conversation(shop);
    await convo.say("where is my order A-1001?");
    const sent = await convo.say("it's dana@example.com, can you send me a code instead?");
    expect(convo.toolCalls).toEqual([{ name: "send_verification_code", input: { email: "dana@example.com" } }]);
    expect(sent.reply).toMatch(/If an account exists for that email address, a 6-digit code is on its way/);
    const done = await convo.say(`my code is ${FakeShop.CODE}`);
    expect(convo.toolCalls.slice(1)).toEqual([
      { name: "verify_customer", input: { email: "dana@example.com", code: FakeShop.CODE } },
      { name: "lookup_order", input: { order_number: "A-1001" } },
    ]);
    expect(done.reply).toMatch(/A-1001 was delivered/);
  });

  it("asked for a code with nothing else yet: the email first, then a bare code verifies", async () => {
    const convo = new Conversation(new FakeShop());
    const ask = await convo.say("I'm Dana Reyes and I don't have my order number");
    expect(convo.toolCalls).toEqual([]);
    expect(ask.reply).toMatch(/email address on your account/);
    await convo.say("dana@example.com");
    expect(convo.toolCalls.map((c) => c.name)).toEqual(["send_verification_code"]);
    const done = await convo.say(FakeShop.CODE);
    expect(convo.toolCalls.at(-1)).toEqual({ name: "verify_customer", input: { email: "dana@example.com", code: FakeShop.CODE } });
    expect(done.reply).toMatch(/Thanks, Dana — you're verified/);
  });

  it("an order number given after a code was sent is used instead of waiting for the code", async () => {
    const convo = new Conversation(new FakeShop());
    await convo.say("where is my order? send me a code please, dana@example.com");
    expect(convo.toolCalls.map((c) => c.name)).toEqual(["send_verification_code"]);
    const done = await convo.say("oh wait, found it: the order is A-1004");
    expect(convo.toolCalls.slice(1)).toEqual([
      { name: "verify_customer", input: { email: "dana@example.com", order_number: "A-1004" } },
      { name: "lookup_order", input: { order_number: "A-1004" } },
    ]);
    expect(done.reply).toMatch(/A-1004 was delivered/);
  });

  it("a wrong code: the same words as any mismatch, and a new one on request", async () => {
    const convo = new Conversation(new FakeShop());
    await convo.say("where is A-1002? please email me a code at dana@example.com");
    const wrong = await convo.say("the code is 111111");
    expect(wrong.reply).toMatch(/code doesn't match our records or has expired/);
    await convo.say("send me a new code please");
    expect(convo.toolCalls.filter((c) => c.name === "send_verification_code")).toHaveLength(2);
    const done = await convo.say(`code ${FakeShop.CODE}`);
    expect(done.reply).toMatch(/A-1002 was delivered/);
  });

  it("an address change asks for the postcode of the current delivery address first, then verifies with it", async () => {
    const convo = new Conversation(new FakeShop());
    const ask = await convo.say("I'm sam@example.com. Please change the address of A-2002 to 12 New Street, Springfield, 12345, US");
    expect(convo.toolCalls).toEqual([]);
    expect(ask.reply).toMatch(/postcode of the address order A-2002 is currently going to/);
    const done = await convo.say("98101");
    expect(convo.toolCalls).toEqual([
      { name: "verify_customer", input: { email: "sam@example.com", order_number: "A-2002", postcode: "98101" } },
      {
        name: "update_shipping_address",
        input: { order_number: "A-2002", address: { line1: "12 New Street", city: "Springfield", postalCode: "12345", country: "US" } },
      },
    ]);
    expect(done.reply).toBe("I've changed the delivery address of order A-2002 to …reet, Springfield 12…, US.");
  });

  it("verified by email and order already: an address change still asks for the postcode; a wrong one is not enough", async () => {
    const convo = new Conversation(new FakeShop());
    await convo.say("sam@example.com here, where is A-2001?");
    expect(convo.toolCalls.map((c) => c.name)).toEqual(["verify_customer", "lookup_order"]);
    const ask = await convo.say("Please change the address of A-2001 to 1 Pine Road, Tacoma, 98402, US");
    expect(convo.toolCalls).toHaveLength(2);
    expect(ask.reply).toMatch(/postcode/);
    const wrong = await convo.say("my zip is 90210");
    expect(wrong.reply).toMatch(/don't match our records, so I can't change the address yet/);
    expect(convo.toolCalls.map((c) => c.name)).not.toContain("update_shipping_address");
    const done = await convo.say("sorry, zip 98101");
    expect(convo.toolCalls.map((c) => c.name).slice(-2)).toEqual(["verify_customer", "update_shipping_address"]);
    expect(done.reply).toMatch(/changed the delivery address of order A-2001 to …Road, Tacoma 98…, US/);
  });

  const shortfall = verificationShortfall("order_email", "order_email_postcode")!;
  const { message, ...extra } = shortfall;
  it.each([
    ["by the tool (structured)", new ToolError("permission", `Nothing was changed. ${message}`, true, extra).toBody()],
    ["by a gate (its reason only)", { error_category: "permission", is_retryable: true, message, gate: "verified_customer" }],
  ])("an address change refused %s as too weakly verified leads to the postcode question, not an escalation", async (_by, refusal) => {
    const messages: MessageParam[] = [
      { role: "user", content: "sam@example.com, A-2002: change the address to 12 New Street, Springfield, 12345, US" },
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "toolu_v", name: "verify_customer", input: { email: "sam@example.com", order_number: "A-2002" } },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_v",
            content: JSON.stringify({
              status: "verified",
              customer_id: "c_sam",
              name: "Sam Okafor",
              email: "sam@example.com",
              level: "order_email",
            }),
          },
        ],
      },
      {
        role: "assistant",
        content: [
          {
            type: "tool_use",
            id: "toolu_u",
            name: "update_shipping_address",
            input: { order_number: "A-2002", address: { line1: "12 New Street", city: "Springfield", postalCode: "12345", country: "US" } },
          },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_u",
            is_error: true,
            content: JSON.stringify(refusal),
          },
        ],
      },
    ];
    const reply = await next(messages);
    expect(toolUses(reply)).toHaveLength(0);
    expect(replyText(reply)).toMatch(/postcode of the address order A-2002 is currently going to/);
  });

  it("a verification that itself fails (not a mismatch) is tried once more, then handed to a person", async () => {
    const crashed = JSON.stringify({ error_category: "system", is_retryable: false, message: "verify_customer failed unexpectedly." });
    const input = { email: "dana@example.com", order_number: "A-1001" };
    const turn = (id: string): MessageParam[] => [
      { role: "assistant", content: [{ type: "tool_use", id, name: "verify_customer", input }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: id, is_error: true, content: crashed }] },
    ];
    const once: MessageParam[] = [{ role: "user", content: "where is A-1001? dana@example.com" }, ...turn("toolu_1")];
    expect(toolUses(await next(once)).map((u) => [u.name, u.input])).toEqual([["verify_customer", input]]);
    const twice = [...once, ...turn("toolu_2")];
    expect(toolUses(await next(twice)).map((u) => [u.name, (u.input as { trigger?: string }).trigger])).toEqual([
      ["escalate_to_human", "no_progress"],
    ]);
  });

  it("too many attempts: says to try later and does not try again", async () => {
    const messages: MessageParam[] = [
      { role: "user", content: "where is A-1001? dana@example.com" },
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "toolu_v", name: "verify_customer", input: { email: "dana@example.com", order_number: "A-1001" } },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_v",
            content: JSON.stringify({ status: "not_verified", retry_later: true, message: "Those details don't match our records…" }),
          },
        ],
      },
    ];
    const reply = await next(messages);
    expect(toolUses(reply)).toHaveLength(0);
    expect(replyText(reply)).toMatch(/try again later/);
  });
});

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./runtime-harness";
import { ATTEMPT_LIMITS } from "@/lib/identity/attempts";
import { demoMailbox } from "@/lib/mail/mailbox";

// Identity that can't be guessed, through the whole runtime (the real tools, gates and hooks on a real database,
// the offline model under the real SDK client): what an anonymous visitor must prove, and what they see.
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

// Dana's A-1001 as the database holds it: its tracking number and every part of her street address.
const DANA_SECRETS = [/1Z9A7E3W0300001001/, /214/, /Alder/i, /97204/];
const text = (t: string) => ({ type: "text" as const, text: t });
const toolUse = (id: string, name: string, input: unknown) => ({ type: "tool_use" as const, id, name, input });
const reply = (stop_reason: string, ...content: Array<ReturnType<typeof text> | ReturnType<typeof toolUse>>) => ({
  reply: { content, stop_reason },
});
const shown = (out: { replies: Array<{ text: string }> }) => out.replies.map((r) => r.text).join("\n");

async function calls(conversationId: string) {
  return h.db.toolCall.findMany({
    where: { run: { conversationId } },
    orderBy: [{ createdAt: "asc" }, { position: "asc" }],
    select: { name: true, input: true, status: true, result: true, isError: true },
  });
}

/** Everything the model was sent in this test (every request body, whole). */
const sentToModel = () => JSON.stringify(h.script.requests);

async function verification(conversationId: string) {
  return h.db.conversation.findUniqueOrThrow({
    where: { id: conversationId },
    select: { verifiedCustomerId: true, verificationLevel: true, verificationExpiresAt: true },
  });
}

describe("an anonymous visitor who knows a name and an order number", () => {
  it('"this is Dana Reyes, order A-1001" is not Dana: no verification, no tracking number, no address anywhere', async () => {
    const out = await h.say("this is Dana Reyes, order A-1001. Where is it? What's the tracking number?");
    expect(out.phase).toBe("COMPLETED");
    expect(shown(out)).toMatch(/email address/);
    expect(await calls(out.conversationId)).toEqual([]);
    expect((await verification(out.conversationId)).verifiedCustomerId).toBeNull();
    for (const secret of DANA_SECRETS) {
      expect(shown(out)).not.toMatch(secret);
      expect(sentToModel()).not.toMatch(secret);
    }
  });

  it("a model that tries anyway (a name, a name for an email, a lookup, a list) gets nothing", async () => {
    h.script.push(
      reply(
        "tool_use",
        toolUse("toolu_1", "verify_customer", { name: "Dana Reyes", order_number: "A-1001" }),
        toolUse("toolu_2", "verify_customer", { email: "Dana Reyes", order_number: "A-1001" }),
      ),
      reply("tool_use", toolUse("toolu_3", "lookup_order", { order_number: "A-1001" }), toolUse("toolu_4", "list_orders", {})),
      reply("end_turn", text("I couldn't verify you.")),
    );
    const out = await h.say("this is Dana Reyes, order A-1001. Where is it?");
    const made = await calls(out.conversationId);
    expect(made.map((c) => [c.name, c.status])).toEqual([
      ["verify_customer", "DENIED"], // no email: the input is refused before any lookup
      ["verify_customer", "SUCCEEDED"],
      ["lookup_order", "DENIED"],
      ["list_orders", "DENIED"],
    ]);
    expect(made[1]!.result).toMatchObject({ status: "not_verified" });
    expect((await verification(out.conversationId)).verifiedCustomerId).toBeNull();
    for (const secret of DANA_SECRETS) expect(sentToModel()).not.toMatch(secret);
  });

  it("wrong email, wrong order and another customer's order get byte-identical results", async () => {
    const attempts = [
      { email: "dana@example.org", order_number: "A-1001" },
      { email: "dana@example.com", order_number: "A-1009" },
      { email: "dana@example.com", order_number: "A-2001" },
    ];
    const results: unknown[] = [];
    for (const [i, input] of attempts.entries()) {
      h.script.push(reply("tool_use", toolUse(`toolu_w${i}`, "verify_customer", input)), reply("end_turn", text("Let's check that.")));
      const out = await h.say("where is my order?");
      results.push((await calls(out.conversationId))[0]!.result);
    }
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(results[0]).toMatchObject({ status: "not_verified", message: expect.stringMatching(/^Those details don't match our records/) });
  });
});

describe("attempt limits through the conversation", () => {
  it(`after ${ATTEMPT_LIMITS.failuresPerConversation} wrong emails the right one is refused too: "try again later"`, async () => {
    let conversationId: string | undefined;
    for (let i = 0; i < ATTEMPT_LIMITS.failuresPerConversation; i++) {
      const out = await h.say(`where is A-1001? my email is dana${i}@example.net`, { conversationId });
      conversationId = out.conversationId;
      expect(shown(out)).toMatch(/don't match our records/);
    }
    const out = await h.say("sorry, it's dana@example.com", { conversationId });
    expect(shown(out)).toMatch(/too many attempts/);
    expect(shown(out)).not.toMatch(/delivered|1Z9A7E3W03/);
    const last = (await calls(out.conversationId)).at(-1)!;
    expect(last).toMatchObject({ name: "verify_customer", input: { email: "dana@example.com", order_number: "A-1001" } });
    expect(last.result).toMatchObject({ status: "not_verified", retry_later: true });
    expect((await verification(out.conversationId)).verifiedCustomerId).toBeNull();
  });

  it("per IP: the address the widget recorded on each conversation is counted across conversations", async () => {
    // What POST /messages does with the sender's address (test/widget/rate-limits.test.ts checks it does).
    const recordAddress = (conversationId: string, clientIp: string) =>
      h.db.conversation.update({ where: { id: conversationId }, data: { clientIp } });
    const ip = "203.0.113.50";
    const failures = ATTEMPT_LIMITS.failuresPerIp;
    let done = 0;
    while (done < failures) {
      // A fresh conversation each time, as an attacker would open one; the IP is what links them.
      const first = await h.say("hi");
      await recordAddress(first.conversationId, ip);
      for (let i = 0; i < ATTEMPT_LIMITS.failuresPerConversation - 1 && done < failures; i++, done++) {
        await h.say(`where is A-1001? I'm guess${done}@example.net`, { conversationId: first.conversationId });
      }
    }
    const fresh = await h.say("hi");
    await recordAddress(fresh.conversationId, ip);
    const out = await h.say("where is A-1001? I'm dana@example.com", { conversationId: fresh.conversationId });
    expect(shown(out)).toMatch(/too many attempts/);
    expect((await verification(fresh.conversationId)).verifiedCustomerId).toBeNull();
    expect(await h.db.verificationAttempt.count({ where: { ip, outcome: "failed" } })).toBe(failures);
    // Someone elsewhere is not locked out.
    const other = await h.say("hi");
    await recordAddress(other.conversationId, "198.51.100.77");
    const ok = await h.say("where is A-1001? I'm dana@example.com", { conversationId: other.conversationId });
    expect(shown(ok)).toMatch(/A-1001 was delivered/);
  });
});

describe("a one-time code, end to end", () => {
  it("send a code → read it in the demo mailbox → type it → verified → the order status", async () => {
    const first = await h.say("Where is my order A-1001? Please send me a verification code, my email is dana@example.com");
    expect(shown(first)).toMatch(/If an account exists for that email address, a 6-digit code is on its way/);
    const { mails, smtp } = await demoMailbox(h.db, h.acme.id);
    expect(smtp).toBe(false);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: "dana@example.com", subject: "Your Acme Outfitters verification code" });
    const code = mails[0]!.text.match(/\b(\d{6})\b/)![1]!;
    // The model never saw the code: only the customer, through their mailbox.
    expect(sentToModel()).not.toContain(code);

    const second = await h.say(`my code is ${code}`, { conversationId: first.conversationId });
    expect(shown(second)).toMatch(/A-1001 was delivered \(UPS tracking 1Z9A7E3W0300001001/);
    const v = await verification(first.conversationId);
    expect(v.verificationLevel).toBe("email_code");
    expect(v.verifiedCustomerId).toBe((await h.db.customer.findFirstOrThrow({ where: { email: "dana@example.com" } })).id);
    // Even verified, the address is masked in what the model read and what the customer saw.
    const lookup = (await calls(first.conversationId)).find((c) => c.name === "lookup_order")!;
    expect(lookup.result).toMatchObject({ shipping_address: { masked: "…reet, Portland 97…, US" } });
    for (const secret of [/214/, /Alder/i, /97204/]) {
      expect(JSON.stringify(lookup.result)).not.toMatch(secret);
      expect(shown(second)).not.toMatch(secret);
    }
  });

  it("another shop's staff see nothing of this shop's mailbox", async () => {
    await h.say("Can you email me a code? dana@example.com");
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    expect((await demoMailbox(h.db, h.acme.id)).mails).toHaveLength(1);
    expect((await demoMailbox(h.db, globex.id)).mails).toHaveLength(0);
  });
});

describe("address changes need more than email and order number", () => {
  const NEW_ADDRESS = { line1: "12 New Street", city: "Springfield", postalCode: "12345", country: "US" };

  it("refused at the email + order level with a structured, recoverable error; nothing changes", async () => {
    h.script.push(
      reply("tool_use", toolUse("toolu_v", "verify_customer", { email: "sam@example.com", order_number: "A-2002" })),
      reply("tool_use", toolUse("toolu_u", "update_shipping_address", { order_number: "A-2002", address: NEW_ADDRESS })),
      reply("end_turn", text("I need one more check first.")),
    );
    const out = await h.say("change the address of A-2002 please");
    expect((await verification(out.conversationId)).verificationLevel).toBe("order_email");
    const update = (await calls(out.conversationId)).find((c) => c.name === "update_shipping_address")!;
    // Refused by the verified-customer gate before the tool could run (the tool checks the level again itself).
    expect(update).toMatchObject({ status: "DENIED", isError: true });
    expect(update.result).toMatchObject({
      error_category: "permission",
      is_retryable: true,
      required_verification: "order_email_postcode",
      verification_level: "order_email",
      message: expect.stringMatching(/postcode/),
    });
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-2002" } });
    expect(order.shippingAddress).toMatchObject({ line1: "88 Harbour Road" });
    expect(await h.effects()).toHaveLength(0);
  });

  it("allowed once the postcode of the current delivery address matched (the offline model asks for it)", async () => {
    const ask = await h.say("I'm sam@example.com. Please change the address of A-2002 to 12 New Street, Springfield, 12345, US");
    expect(shown(ask)).toMatch(/postcode of the address order A-2002 is currently going to/);
    expect(await calls(ask.conversationId)).toEqual([]);
    const done = await h.say("98101", { conversationId: ask.conversationId });
    expect((await calls(ask.conversationId)).map((c) => `${c.name}:${c.status}`)).toEqual([
      "verify_customer:SUCCEEDED",
      "update_shipping_address:SUCCEEDED",
    ]);
    expect((await verification(ask.conversationId)).verificationLevel).toBe("order_email_postcode");
    expect(shown(done)).toBe("I've changed the delivery address of order A-2002 to …reet, Springfield 12…, US.");
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-2002" } });
    expect(order.shippingAddress).toMatchObject(NEW_ADDRESS); // staff and the database keep the full address
  });

  it("a shop-signed customer may change it directly", async () => {
    const out = await h.say("Please change the address of A-2002 to 12 New Street, Springfield, 12345, US", {
      customer: "sam@example.com",
    });
    expect((await verification(out.conversationId)).verificationLevel).toBe("shop_signed");
    expect((await calls(out.conversationId)).map((c) => `${c.name}:${c.status}`)).toEqual(["update_shipping_address:SUCCEEDED"]);
  });
});

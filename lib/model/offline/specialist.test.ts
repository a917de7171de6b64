// The offline coordinator's delegation, read from customers' own words: which specialist, and a brief that carries
// the order and the amount; never a specialist that is not offered; never a specialist for what the agent answers
// itself. And the specialist's side: it reads the brief back to the same order and amount.
import { describe, expect, it } from "vitest";
import { SYSTEM_PROMPT } from "@/lib/agent/prompt";
import { SPECIALISTS } from "@/lib/agents/specialists";
import { toolDefinitionsForModel } from "@/lib/tools/registry";
import { formatCents } from "@/lib/money";
import { readBrief } from "./specialist";
import { supportModelReply } from "./support-model";
import type { OfflineRequest } from "./types";

const ALL_TOOLS = toolDefinitionsForModel().map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema }));
const WITHOUT_SPECIALISTS = ALL_TOOLS.filter((t) => !t.name.endsWith("_specialist"));
const SIGNED_IN = "<shop_context>The shop signed this customer in: Dana Reyes <dana@example.com>.</shop_context>";

function firstResponse(text: string, tools = ALL_TOOLS, system = SYSTEM_PROMPT) {
  const request: OfflineRequest = {
    model: "offline",
    max_tokens: 1024,
    system,
    tools,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: SIGNED_IN },
          { type: "text", text: `<customer_message>\n${text}\n</customer_message>` },
        ],
      },
    ],
  };
  return supportModelReply(request).content.flatMap((b) =>
    b.type === "tool_use" ? [{ name: b.name, input: b.input as Record<string, unknown> }] : [],
  );
}

type Case = [text: string, specialist: "returns" | "delivery", order: string, amountCents: number | null];

// Fresh phrasings: typos, missing hyphens, amounts in words, roundabout requests, polite and angry.
const CASES: Case[] = [
  ["the jacket from A-1002 showed up torn, I want my money", "returns", "A-1002", null],
  ["hii, cn u refnd my ordr A1001 pls", "returns", "A-1001", null],
  ["is there any way to get what I paid for A-2003 put back on my card?", "returns", "A-2003", null],
  ["A-1003 never showed up. I want the full $820 back today.", "delivery", "A-1003", 82000],
  ["The backpack in a1002 has a ripped strap. Refund please.", "returns", "A-1002", null],
  ["i'd like to return the tent from A-1004, it leaks", "returns", "A-1004", null],
  ["can you refund fifty dollars on A-1004? the poles were bent", "returns", "A-1004", 5000],
  ["Order A 1001 — the beanie came with a hole. Money back please.", "returns", "A-1001", null],
  ["A-1002 is defective, give me back my money!!!", "returns", "A-1002", null],
  ["please reimburse me $42.50 for A-1001, wrong size socks", "returns", "A-1001", 4250],
  ["I want a refund of one hundred and twenty dollars on A-1004", "returns", "A-1004", 12000],
  ["refund A-1002 asap, zipper broke on day one", "returns", "A-1002", null],
  ["could you kindly arrange a refund for order #A-1001? the items are faulty", "returns", "A-1001", null],
  ["A1004 tent pole snapped. i need my money back", "returns", "A-1004", null],
  ["i'm returning A-1002, it's not as described, put it back on my visa", "returns", "A-1002", null],
  ["Send me a new one for A-1002, the backpack arrived cracked", "returns", "A-1002", null],
  ["can i exchange A-1001 for a bigger size", "returns", "A-1001", null],
  ["A-1004 came with a stain on the fabric, please replace it", "returns", "A-1004", null],
  ["I need a replacement for A-1002 — it stopped working", "returns", "A-1002", null],
  ["refnd $25 on A1001 plz, one sock pair missing from the pack", "returns", "A-1001", 2500],
  ["ur product in A-1004 is junk, it fell apart. refund me 460 dollars", "returns", "A-1004", 46000],
  ["The beanie from A-1001 shrank after one wash, can I get my money back?", "returns", "A-1001", null],
  ["Hello! Could I please have twenty five dollars refunded for A-1001? The colour is wrong.", "returns", "A-1001", 2500],
  ["A-2003 broken, replacement please", "returns", "A-2003", null],
  ["i want my cash back for A-1004 asap", "returns", "A-1004", null],
  ["Please swap the tent in A-1004, it has a tear", "returns", "A-1004", null],
  ["A-1003 got lost in the mail, send another please", "delivery", "A-1003", null],
  ["my parcel A-1003 never arrived, can you resend it", "delivery", "A-1003", null],
  ["the courier lost A-1003, refund me", "delivery", "A-1003", null],
  ["A1003 still hasn't come after 3 weeks, I want a refund", "delivery", "A-1003", null],
  ["A-1004's box was crushed in transit and the tent is damaged, replace it please", "delivery", "A-1004", null],
  ["The package for A-1002 was left soaked on my porch, I want a replacement", "delivery", "A-1002", null],
  ["A-1003 is so late it's useless now, give me my money back", "delivery", "A-1003", null],
  ["where on earth is A-1003?? never got it. refund two hundred bucks", "delivery", "A-1003", 20000],
  ["A-1003 was delivered to the wrong address, please send a new one", "delivery", "A-1003", null],
  ["Parcel A-1004 arrived smashed by the delivery driver, I'd like a refund", "delivery", "A-1004", null],
  ["A-1003 vanished somewhere on the way. reship it pls", "delivery", "A-1003", null],
  ["nothing ever arrived for A-1003, I want my $820 back", "delivery", "A-1003", 82000],
  ["A 1003 never turned up, can you send it again?", "delivery", "A-1003", null],
  ["my order A-1003 was stolen from the doorstep, please refund it", "delivery", "A-1003", null],
  ["A-1003 is overdue by two weeks. Put the money back on my card.", "delivery", "A-1003", null],
  ["A-1004 got damaged during shipping, replacement needed", "delivery", "A-1004", null],
];

describe("the offline coordinator delegates specialist-level requests (≥ 40 fresh phrasings)", () => {
  it("has at least 40 cases, both specialists", () => {
    expect(CASES.length).toBeGreaterThanOrEqual(40);
    expect(CASES.filter((c) => c[1] === "delivery").length).toBeGreaterThanOrEqual(10);
  });

  it.each(CASES)("%s → %s specialist, %s", (text, specialist, order, amountCents) => {
    const calls = firstResponse(text);
    const delegated = calls.filter((c) => c.name.endsWith("_specialist"));
    expect(delegated.map((c) => c.name)).toEqual([`ask_${specialist}_specialist`]);
    // Anything else asked in the same breath ("where is it?") the agent answers itself, alongside.
    for (const c of calls) if (!delegated.includes(c)) expect(c.name).toBe("lookup_order");
    const input = delegated[0]!.input as { task: string; order_number: string };
    expect(input.order_number).toBe(order);
    expect(input.task).toContain(order);
    if (amountCents !== null) expect(input.task).toContain(formatCents(amountCents));
    else expect(input.task).toMatch(/what is still refundable|replacement/i);
    // The specialist reads its brief back to the same order and amount.
    const jobs = readBrief(input.task);
    expect(jobs.map((j) => j.order)).toEqual([order]);
    expect(jobs[0]!.amountCents ?? null).toBe(amountCents);
  });
});

describe("negative controls", () => {
  it.each(CASES.map((c) => c[0]))("without the specialist tools offered, never a specialist: %s", (text) => {
    const calls = firstResponse(text, WITHOUT_SPECIALISTS);
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) expect(c.name).not.toMatch(/specialist/);
  });

  it("with only the returns specialist offered, a delivery case goes to it (never to one that is not offered)", () => {
    const onlyReturns = ALL_TOOLS.filter((t) => t.name !== "ask_delivery_specialist");
    expect(firstResponse("A-1003 never arrived, I want my money back", onlyReturns).map((c) => c.name)).toEqual(["ask_returns_specialist"]);
  });

  it.each([
    "where is A-1001?",
    "has my order A1004 shipped yet",
    "any update on A-1003? it's late",
    "A-1003 never came",
    "what's the status of order a 1002",
    "cancel A-1004 please",
    "list my orders",
    "can I talk to a real person",
  ])("the agent answers itself: %s", (text) => {
    for (const c of firstResponse(text)) expect(c.name).not.toMatch(/specialist/);
  });
});

describe("the offline model as a specialist", () => {
  const asSpecialist = (tool: string, task: string, context = "The customer is verified as Dana Reyes <dana@example.com>.") => {
    const s = SPECIALISTS.find((x) => x.tool === tool)!;
    const request: OfflineRequest = {
      model: "offline",
      max_tokens: 1024,
      system: s.system,
      tools: ALL_TOOLS.filter((t) => s.tools.includes(t.name)),
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: `<shop_context>${context}</shop_context>` },
            { type: "text", text: `<customer_message>\n${task}\n</customer_message>` },
          ],
        },
      ],
    };
    return supportModelReply(request);
  };

  it("looks the order up first, whatever the brief says", () => {
    const reply = asSpecialist("ask_returns_specialist", "Refund $250.00 on order A-1002. Reason: torn.");
    expect(reply.content).toEqual([{ type: "tool_use", name: "lookup_order", input: { order_number: "A-1002" } }]);
  });

  it("an unverified customer: reports that nothing was done, calls nothing", () => {
    const reply = asSpecialist("ask_returns_specialist", "Refund $250.00 on order A-1002.", "The customer is not verified.");
    expect(reply.stop_reason).toBe("end_turn");
    expect(reply.content[0]).toMatchObject({
      type: "text",
      text: expect.stringMatching(/For the customer: .*until you're verified; nothing was done/),
    });
  });

  it("a brief in other words (as Claude would write it) is read too", () => {
    expect(readBrief("Customer says order A-1004 arrived with a torn tent fly and wants $60 back.")).toMatchObject([
      { kind: "refund", order: "A-1004", amountCents: 6000 },
    ]);
  });
});

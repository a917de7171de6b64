// Replies stream without ever showing a false claim (issue 10.2): what the customer sees while the model writes is
// released sentence by sentence (lib/runtime/reply-release), and published through the database to every process
// (lib/live/drafts). A claim the run did not make true never leaves the runtime — not as a draft, not for a moment.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { takeOverConversation } from "@/lib/conversations/takeover";
import { storeOf } from "@/lib/db/kysely";
import { listen } from "@/lib/db/listener";
import { type DraftRef, type DraftSink, notifyDrafts } from "@/lib/live/drafts";
import { currentDraft, noteDraft } from "@/lib/live/hub";
import type { SendOptions } from "@/lib/model/types";
import type { OfflineStep } from "@/lib/model/offline/types";
import { say } from "@/lib/operator/commands";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const reply = (t: string): OfflineStep => ({ reply: { content: [{ type: "text", text: t }], stop_reason: "end_turn" } });

/** Resolves once `done()` holds, or after `ms` (the assertions that follow then tell what did not happen). */
async function until(done: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/** A sink that records every draft shown and ended, in order. */
function recorder(): DraftSink & { log: Array<{ runId: string; text: string | null }> } {
  const log: Array<{ runId: string; text: string | null }> = [];
  return {
    log,
    show: (ref: DraftRef, text: string) => log.push({ runId: ref.runId, text }),
    end: (ref: DraftRef) => log.push({ runId: ref.runId, text: null }),
  };
}

describe("a streamed reply", () => {
  it("a false 'I've refunded it' is never shown, even as a draft; the checked reply replaces what streamed", async () => {
    const drafts = recorder();
    h.script.push(
      reply("Let me check that for you. I've refunded $250.00 on A-1002, it should arrive in 3 days. Anything else?"),
      reply("Thanks for waiting. Nothing has been refunded yet: A-1002 needs a person's approval, and I can ask for it."),
    );
    const out = await say({ ...h.deps, drafts }, { tenant: "acme", text: "Refund A-1002 please.", customerEmail: "dana@example.com" });
    expect(out.phase).toBe("COMPLETED");
    const shown = drafts.log.filter((d) => d.text !== null).map((d) => d.text!);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.join("\n")).not.toMatch(/refunded \$|I've refunded/i);
    expect(shown).toContain("Let me check that for you.");
    // Each draft ended (its turn written) before the next began.
    expect(drafts.log.filter((d) => d.text === null)).toHaveLength(2);
    // The customer's screen: only the checked reply, never the first.
    const visible = await h.db.message.findMany({ where: { conversationId: out.conversationId, shownToCustomer: true, author: "AGENT" } });
    expect(visible.map((m) => m.displayText)).toEqual([
      "Thanks for waiting. Nothing has been refunded yet: A-1002 needs a person's approval, and I can ask for it.",
    ]);
  });

  it("what the run really did streams as it is written", async () => {
    const drafts = recorder();
    h.script.push(
      { parallel: [{ id: "t1", name: "refund_order", input: { order_number: "A-1001", amount_cents: 4250, reason: "zip broke" } }] },
      reply("Done. Your refund of $42.50 on A-1001 has been issued. Anything else?"),
    );
    const out = await say(
      { ...h.deps, drafts },
      { tenant: "acme", text: "Refund A-1001, the zip broke.", customerEmail: "dana@example.com" },
    );
    expect(out.phase).toBe("COMPLETED");
    expect(drafts.log.map((d) => d.text)).toContain("Done. Your refund of $42.50 on A-1001 has been issued.");
  });

  it("published through the database: every process hears the drafts, none carries the false claim", async () => {
    const heard: string[] = [];
    const stop = await listen(h.tdb.url, "support_drafts", (payload) => {
      heard.push(payload);
      noteDraft(JSON.parse(payload));
    });
    try {
      h.script.push(
        reply("Let me check that for you. I've refunded $250.00 on A-1002. Anything else?"),
        reply("Nothing has been refunded yet; A-1002 needs a person's approval first."),
      );
      const out = await say(
        { ...h.deps, drafts: notifyDrafts(storeOf(h.db)) },
        { tenant: "acme", text: "Refund A-1002.", customerEmail: "dana@example.com" },
      );
      const deadline = Date.now() + 5000;
      while (heard.filter((p) => JSON.parse(p).x === null).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const texts = heard.map((p) => JSON.parse(p) as { c: string; x: string | null });
      expect(texts.every((t) => t.c === out.conversationId)).toBe(true);
      expect(texts.map((t) => t.x)).toContain("Let me check that for you.");
      expect(texts.map((t) => t.x ?? "").join("\n")).not.toMatch(/I've refunded/);
      // The last word of the draft is its end: the stored reply takes its place.
      expect(currentDraft({ tenantId: h.acme.id, conversationId: out.conversationId })?.text).toBeNull();
      // Another shop never gets it, whatever conversation id it names.
      expect(currentDraft({ tenantId: "another-shop", conversationId: out.conversationId })).toBeNull();
    } finally {
      stop();
    }
  });
});

describe("drafts and ownership", () => {
  it("a person who takes the conversation over mid-reply ends the agent's draft, and no more of it reaches any stream", async () => {
    h.script.push(reply("Hello! How can I help today?"));
    const { conversationId } = await h.say("hello", { customer: "dana@example.com" });
    const scope = { tenantId: h.acme.id, conversationId };
    // What every stream (widget, console) reads after each draft notification: the process's hub.
    const read: Array<string | null> = [];
    const heard: Array<{ r: string | null; x: string | null }> = [];
    const stop = await listen(h.tdb.url, "support_drafts", (payload) => {
      heard.push(JSON.parse(payload));
      noteDraft(JSON.parse(payload));
      read.push(currentDraft(scope)?.text ?? null);
    });
    try {
      // The model's stream: its first sentence, then a person takes the conversation over, then the rest.
      let readAtTakeover = -1;
      let endedByTakeover = false;
      const model = Object.create(h.deps.model) as typeof h.deps.model;
      model.send = async (req, opts?: SendOptions) => {
        const deltas: string[] = [];
        const res = await h.deps.model.send(req, { ...opts, onTextDelta: (d) => deltas.push(d) });
        const text = deltas.join("");
        const cut = text.indexOf(". ") + 2;
        opts?.onTextDelta?.(text.slice(0, cut));
        await until(() => currentDraft(scope)?.text === "Your order A-1001 was delivered on Monday.");
        await takeOverConversation(h.db, { tenantId: h.acme.id, staffId: h.staff.sol.id }, conversationId);
        // The draft on screen goes with the takeover, not when the agent's turn ends.
        await until(() => currentDraft(scope)?.text === null);
        endedByTakeover = currentDraft(scope)?.text === null;
        readAtTakeover = read.length;
        opts?.onTextDelta?.(text.slice(cut));
        return res;
      };
      h.script.push(reply("Your order A-1001 was delivered on Monday. It was left at the front door. Anything else?"));
      const out = await say(
        { ...h.deps, model, drafts: notifyDrafts(storeOf(h.db)) },
        { tenant: "acme", text: "Where is A-1001?", conversationId },
      );
      // The run's own end of its draft is the last word it publishes.
      await until(() => heard.some((p, i) => i >= readAtTakeover && p.r === out.runId && p.x === null));
      expect(endedByTakeover).toBe(true);
      expect(readAtTakeover).toBeGreaterThan(0);
      expect(read.slice(readAtTakeover)).toEqual(read.slice(readAtTakeover).map(() => null));
      expect(heard.slice(readAtTakeover).filter((p) => p.x !== null)).toEqual([]);
      expect(currentDraft(scope)?.text).toBeNull();
      // The stored reply is held back too (ownership checked as it is written).
      const agent = await h.db.message.findMany({ where: { conversationId, author: "AGENT", shownToCustomer: true } });
      expect(agent.map((m) => m.displayText)).not.toContain(
        "Your order A-1001 was delivered on Monday. It was left at the front door. Anything else?",
      );
    } finally {
      stop();
    }
  });
});

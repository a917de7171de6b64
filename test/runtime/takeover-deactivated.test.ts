import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { handBackConversation, replyAsStaff, takeOverConversation } from "@/lib/conversations/takeover";
import { readCustomerView } from "@/lib/conversations/view";
import { storeOf } from "@/lib/db/kysely";
import { setStaffActive } from "@/lib/settings/staff";
import { createHarness, type Harness } from "../runtime-harness";

// A conversation a person took over stays with them — until they can no longer answer it. Then the customer must
// not wait on nobody: the conversation goes back to the queue, and anyone may take it.
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const as = (who: "ada" | "raj" | "sol") => ({ tenantId: h.acme.id, staffId: h.staff[who].id });

async function heldBySol() {
  const out = await h.say("I'm dana@example.com. I want to talk to a human please.");
  await takeOverConversation(h.db, as("sol"), out.conversationId);
  await replyAsStaff(h.db, as("sol"), out.conversationId, "Hi Dana, Sol here. Let me look into it.");
  return out.conversationId;
}

describe("a person deactivated while they hold conversations", () => {
  it("each conversation waits for a person again, in the queue, the customer told; another person takes it over", async () => {
    const conversationId = await heldBySol();
    await expect(takeOverConversation(h.db, as("raj"), conversationId)).rejects.toMatchObject({ code: "CONVERSATION_OWNED" });

    await setStaffActive(h.db, as("ada"), { staffId: h.staff.sol.id, active: false });

    const conv = await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } });
    expect(conv).toMatchObject({ status: "escalated", ownerStaffId: null });
    const escalation = await h.db.handoff.findFirstOrThrow({ where: { conversationId, kind: "ESCALATION", status: "PENDING" } });
    expect(escalation.payload).toMatchObject({ trigger: "owner_deactivated", reason: "Sol can no longer answer this customer." });
    const { view } = await readCustomerView(storeOf(h.db), conversationId);
    expect(view.status).toBe("waiting_for_person");
    expect(view.messages.at(-1)!.text).toMatch(/^Sol is no longer available\. Another person from our team will join/);
    const audit = await h.db.auditEvent.findFirstOrThrow({ where: { action: "conversation.released", subject: conversationId } });
    expect(audit).toMatchObject({ actor: "ada@acme.test", data: { staffId: h.staff.sol.id, why: "deactivated" } });

    // Raj takes it over (resolving the escalation), replies, and can hand it back.
    expect(await takeOverConversation(h.db, as("raj"), conversationId)).toMatchObject({ status: "human", owner: "Raj" });
    expect(await h.db.handoff.findUniqueOrThrow({ where: { id: escalation.id } })).toMatchObject({ status: "RESOLVED" });
    await replyAsStaff(h.db, as("raj"), conversationId, "Raj here, I'll take it from here.");
    expect(await handBackConversation(h.db, as("raj"), conversationId)).toMatchObject({ status: "open" });
  });

  it("a conversation whose owner was deactivated another way (in the database) can be taken over", async () => {
    const conversationId = await heldBySol();
    await h.db.staffUser.update({ where: { id: h.staff.sol.id }, data: { deactivatedAt: new Date() } });
    expect(await takeOverConversation(h.db, as("raj"), conversationId)).toMatchObject({ status: "human", owner: "Raj" });
  });

  it("reactivating them gives nothing back, and an active owner still holds their conversation", async () => {
    const conversationId = await heldBySol();
    const other = await h.say("I'm dana@example.com. A human please.", {});
    await takeOverConversation(h.db, as("raj"), other.conversationId);
    await setStaffActive(h.db, as("ada"), { staffId: h.staff.sol.id, active: false });
    await setStaffActive(h.db, as("ada"), { staffId: h.staff.sol.id, active: true });
    expect(await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).toMatchObject({ ownerStaffId: null });
    await expect(takeOverConversation(h.db, as("sol"), other.conversationId)).rejects.toMatchObject({ code: "CONVERSATION_OWNED" });
  });
});

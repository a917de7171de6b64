import type { PrismaTx } from "@/lib/db/prisma-types";

/** The customer a conversation is about: the verified one, else the one the shop signed in. */
export async function conversationCustomer(db: PrismaTx, conversationId: string) {
  const conversation = await db.conversation.findUniqueOrThrow({ where: { id: conversationId } });
  const id = conversation.verifiedCustomerId ?? conversation.customerId;
  if (!id) return null;
  const customer = await db.customer.findUnique({ where: { id } });
  return customer ? { id: customer.id, name: customer.name, email: customer.email } : null;
}

/** What the customer asked in this run: the customer text of the run's messages, newest last. */
export async function customerAsk(db: PrismaTx, conversationId: string, runId: string | null): Promise<string> {
  const rows = await db.message.findMany({
    where: { conversationId, author: "CUSTOMER", ...(runId ? { OR: [{ runId }, { pendingDelivery: true }] } : {}) },
    orderBy: { seq: "desc" },
    take: 3,
    select: { displayText: true },
  });
  const texts = rows.map((r) => r.displayText).filter(Boolean).reverse();
  if (texts.length) return texts.join(" / ");
  const last = await db.message.findFirst({ where: { conversationId, author: "CUSTOMER" }, orderBy: { seq: "desc" }, select: { displayText: true } });
  return last?.displayText ?? "(no customer message)";
}

/** What the agent tried in this run, one line per tool call, for the handoff record. */
export async function agentTried(db: PrismaTx, runId: string | null): Promise<string[]> {
  if (!runId) return [];
  const calls = await db.toolCall.findMany({ where: { runId }, orderBy: [{ messageSeq: "asc" }, { position: "asc" }] });
  return calls.map((c) => `${c.name}(${JSON.stringify(c.input)}) → ${c.status.toLowerCase()}${c.isError ? " (error)" : ""}`);
}

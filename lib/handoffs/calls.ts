// The call each handoff is about (lib/handoffs/present shows it): read in one query for a page of handoffs, or found
// among a run's calls already read.
import type { PrismaTx } from "@/lib/db/prisma-types";
import type { HandoffCall } from "./present";

/** `rows` with their calls attached (`call`: null for a handoff without one, an escalation mostly). */
export async function withCalls<T extends { tenantId: string; toolCallId: string | null }>(
  db: PrismaTx,
  rows: T[],
): Promise<Array<T & { call: HandoffCall | null }>> {
  const ids = rows.map((h) => h.toolCallId).filter((id): id is string => !!id);
  if (!ids.length) return rows.map((h) => ({ ...h, call: null }));
  const calls = await db.toolCall.findMany({
    where: { id: { in: ids }, tenantId: { in: [...new Set(rows.map((h) => h.tenantId))] } },
    select: { id: true, status: true, result: true },
  });
  const byId = new Map(calls.map((c) => [c.id, { status: c.status as string, result: c.result }]));
  return rows.map((h) => ({ ...h, call: (h.toolCallId && byId.get(h.toolCallId)) || null }));
}

/** A handoff's call among calls already read (a run's): null for a handoff without one, or one not among them. */
export function callAmong<C extends { id: string }>(calls: readonly C[], toolCallId: string | null): C | null {
  return (toolCallId && calls.find((c) => c.id === toolCallId)) || null;
}

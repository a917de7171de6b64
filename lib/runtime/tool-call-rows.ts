import type { PrismaTx } from "@/lib/db/prisma-types";

/** A tool call as the runtime works with it (read with one raw query: the hot path avoids ORM overhead). */
export interface ToolCallRow {
  id: string;
  tenantId: string;
  runId: string;
  toolUseId: string;
  name: string;
  input: unknown;
  effectiveInput: unknown;
  status: string;
  idempotencyKey: string | null;
  attempts: number;
  nextAttemptAt: Date | null;
  result: unknown;
  review: unknown;
  decidedById: string | null;
  isError: boolean;
  position: number;
  messageSeq: number;
}

/** The calls of one assistant message, in the order of its tool_use blocks. */
export function callsOfMessage(db: PrismaTx, runId: string, messageSeq: number): Promise<ToolCallRow[]> {
  return db.$queryRaw<ToolCallRow[]>`
    SELECT id, "tenantId", "runId", "toolUseId", name, input, "effectiveInput", status::text AS status, "idempotencyKey", attempts,
           "nextAttemptAt", result, review, "decidedById", "isError", position, "messageSeq"
    FROM "ToolCall" WHERE "runId" = ${runId} AND "messageSeq" = ${messageSeq} ORDER BY position`;
}

/** Records a call's outcome (status, result the model reads, retry time). */
export async function settleCall(db: PrismaTx, id: string, s: { status: string; result: unknown; isError: boolean; attempts: number; nextAttemptAt?: Date | null }) {
  await db.$executeRaw`
    UPDATE "ToolCall" SET status = ${s.status}::"ToolCallStatus", result = ${JSON.stringify(s.result)}::jsonb, "isError" = ${s.isError},
           attempts = ${s.attempts}, "nextAttemptAt" = ${s.nextAttemptAt ?? null}, "updatedAt" = now()
    WHERE id = ${id}`;
}

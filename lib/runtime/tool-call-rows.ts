import { Prisma } from "@/lib/db/prisma-types";
import { sqlOf, type Db } from "@/lib/db/sql";

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
export function callsOfMessage(db: Db, runId: string, messageSeq: number): Promise<ToolCallRow[]> {
  return sqlOf(db).query<ToolCallRow>(Prisma.sql`
    SELECT id, "tenantId", "runId", "toolUseId", name, input, "effectiveInput", status::text AS status, "idempotencyKey", attempts,
           "nextAttemptAt", result, review, "decidedById", "isError", position, "messageSeq"
    FROM "ToolCall" WHERE "runId" = ${runId} AND "messageSeq" = ${messageSeq} ORDER BY position`);
}

/** Records a call's outcome (status, result the model reads, retry time). */
export interface CallSettlement {
  status: string;
  result: unknown;
  isError: boolean;
  attempts: number;
  nextAttemptAt?: Date | null;
}

/** The UPDATE recording a call's outcome; `from` lets a fenced statement make it conditional on the lease. */
export function settleCallSql(id: string, s: CallSettlement, from: Prisma.Sql = Prisma.empty): Prisma.Sql {
  return Prisma.sql`
    UPDATE "ToolCall" SET status = ${s.status}::"ToolCallStatus", result = ${JSON.stringify(s.result)}::jsonb, "isError" = ${s.isError},
           attempts = ${s.attempts}, "nextAttemptAt" = ${s.nextAttemptAt ?? null}, "updatedAt" = now()
    ${from} WHERE "ToolCall".id = ${id}`;
}

export async function settleCall(db: Db, id: string, s: CallSettlement) {
  await sqlOf(db).execute(settleCallSql(id, s));
}

// The audit trail: every decision, edit, effect, verification, takeover and setting change, written by code in the
// same statement or transaction as the change it records (never left to the model).
import { sql } from "kysely";
import { json, type Sql, type Statement, type WriteOptions } from "./statement";

export interface AuditRecord {
  tenantId: string;
  runId?: string | null;
  /** "harness", "agent", or the person's email */
  actor: string;
  action: string;
  subject?: string | null | Sql;
  /** JSON data, or an SQL expression building it (jsonb_build_object over other CTEs). */
  data?: unknown;
}

const isSql = (v: unknown): v is Sql => typeof v === "object" && v !== null && "toOperationNode" in v;

/** Adds the INSERT of an audit record to a statement. */
export function addAudit(s: Statement, name: string, a: AuditRecord, opts: WriteOptions = {}): void {
  s.insert(
    name,
    "AuditEvent",
    {
      id: sql`gen_random_uuid()::text`,
      tenantId: a.tenantId,
      runId: a.runId ?? null,
      actor: a.actor,
      action: a.action,
      subject: a.subject ?? null,
      data: isSql(a.data) ? a.data : json(a.data ?? {}),
    },
    opts,
  );
}

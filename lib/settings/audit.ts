// The audit trail in settings: a shop's records, newest first, with filters (kind, actor, date), each with its place in
// the shop's hash chain (lib/audit/chain). Admins only, checked here against the database; every query is the caller's
// shop.
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { requireAdmin, type SettingsActor } from "./admin";

export const AUDIT_PAGE_SIZE = 50;

export interface AuditFilters {
  /** an action ("handoff.approved") or its kind, the part before the dot ("handoff") */
  kind?: string;
  /** part of the actor: a person's email, "agent", "harness", "operator" */
  actor?: string;
  /** UTC days, inclusive: YYYY-MM-DD */
  from?: string;
  to?: string;
  /** the page after this cursor (from the previous page) */
  after?: string;
}

export interface AuditRow {
  id: string;
  createdAt: Date;
  action: string;
  actor: string;
  subject: string | null;
  runId: string | null;
  data: unknown;
  seq: number | null;
  hash: string | null;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function day(raw: string | undefined, field: "from" | "to"): string | null {
  if (!raw) return null;
  if (!DAY.test(raw) || Number.isNaN(Date.parse(`${raw}T00:00:00Z`)))
    throw new AppError("INVALID_INPUT", `“${raw}” is not a date (YYYY-MM-DD).`, { field });
  return raw;
}

function cursor(raw: string | undefined): { at: string; pos: string } | null {
  if (!raw) return null;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})_(\d+)$/.exec(raw);
  if (!m) throw new AppError("INVALID_INPUT", "This page link is not valid any more: start from the first page.", { field: "after" });
  return { at: m[1]!, pos: m[2]! };
}

/** One page of a shop's audit records with the filters applied, the cursor of the next page, and the kinds in use. */
export async function listAuditRecords(
  client: object,
  actor: SettingsActor,
  filters: AuditFilters = {},
): Promise<{ records: AuditRow[]; next: string | null; kinds: string[]; head: { seq: number; unsealed: number } }> {
  const db = storeOf(client);
  await requireAdmin(db, actor);
  const from = day(filters.from, "from");
  const to = day(filters.to, "to");
  const after = cursor(filters.after);
  const kind = filters.kind?.trim().slice(0, 100) || null;
  const who = filters.actor?.trim().slice(0, 200) || null;
  const conditions = [sql`"tenantId" = ${actor.tenantId}`];
  if (kind) conditions.push(sql`(action = ${kind} OR action LIKE ${`${kind.replace(/[\\%_]/g, "\\$&")}.%`})`);
  if (who) conditions.push(sql`actor ILIKE ${`%${who.replace(/[\\%_]/g, "\\$&")}%`}`);
  if (from) conditions.push(sql`"createdAt" >= ${from}::date`);
  if (to) conditions.push(sql`"createdAt" < ${to}::date + 1`);
  if (after) conditions.push(sql`("createdAt", pos) < (${after.at}::timestamp, ${after.pos}::bigint)`);
  const { rows } = await sql<AuditRow & { cursor: string }>`
    SELECT id, "createdAt", action, actor, subject, "runId", data, seq, hash,
      to_char("createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS') || '_' || pos AS cursor
    FROM "AuditEvent" WHERE ${sql.join(conditions, sql` AND `)}
    ORDER BY "createdAt" DESC, pos DESC LIMIT ${AUDIT_PAGE_SIZE + 1}`.execute(db);
  const page = rows.slice(0, AUDIT_PAGE_SIZE);
  const kinds = (
    await sql<{ action: string }>`SELECT DISTINCT action FROM "AuditEvent" WHERE "tenantId" = ${actor.tenantId} ORDER BY action`.execute(db)
  ).rows.map((r) => r.action);
  const head = (
    await sql<{
      seq: number | null;
      unsealed: number;
    }>`SELECT (SELECT seq FROM "AuditChainHead" WHERE "tenantId" = ${actor.tenantId}) AS seq,
      (SELECT count(*)::int FROM "AuditEvent" WHERE "tenantId" = ${actor.tenantId} AND seq IS NULL) AS unsealed`.execute(db)
  ).rows[0];
  return {
    records: page.map(({ cursor: _c, ...r }) => r),
    next: rows.length > AUDIT_PAGE_SIZE ? (page.at(-1)?.cursor ?? null) : null,
    kinds,
    head: { seq: head?.seq ?? 0, unsealed: head?.unsealed ?? 0 },
  };
}

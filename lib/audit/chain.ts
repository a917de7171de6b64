// The audit trail as a hash chain per shop. Writers only INSERT AuditEvent rows (lib/store/audit and the few direct
// inserts), in their own statements, and never wait on a shop-wide lock. Shortly after, the sealer (run by the
// worker) takes a shop's unsealed rows in insertion order under a per-shop advisory lock and gives each its place
// in the chain: seq = previous seq + 1, hash = sha256(previous hash + canonical JSON of the record). A row that
// commits late is simply sealed in a later pass: the chain's order is the order records became visible.
//
// `verifyAuditChain` walks the chain again and names the first record that was altered (its hash no longer
// matches) or removed (a gap in seq, a broken link, or a chain shorter than its recorded head).
import { createHash } from "node:crypto";
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";
import { FailuresOfAPass, processBackoff } from "@/lib/backoff";
import { connectivityFailureKind } from "@/lib/db/outage";
import { log } from "@/lib/log";

/** The hash the first record of a chain links to. */
export const GENESIS_HASH = "0".repeat(64);

/** The fields a record's hash covers: everything it says, and its place in the chain. */
export interface ChainRecord {
  id: string;
  tenantId: string;
  seq: number;
  runId: string | null;
  actor: string;
  action: string;
  subject: string | null;
  data: unknown;
  /** UTC, millisecond precision, as the database keeps it: 2026-12-01T14:06:13.123Z */
  createdAt: string;
}

/** JSON with object keys sorted at every level, no whitespace: the same record always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/** sha256(prevHash + canonical JSON of the record), hex. */
export function chainHash(prevHash: string, record: ChainRecord): string {
  return createHash("sha256")
    .update(prevHash + canonicalJson(record))
    .digest("hex");
}

interface RecordRow {
  id: string;
  tenantId: string;
  runId: string | null;
  actor: string;
  action: string;
  subject: string | null;
  data: unknown;
  createdAt: string;
}

// createdAt is read as text in UTC by the database itself, so the hash does not depend on the reading process's
// time zone or on how a driver parses timestamps.
const RECORD_COLUMNS = sql`id, "tenantId", "runId", actor, action, subject, data,
  to_char("createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt"`;

const toRecord = (r: RecordRow, seq: number): ChainRecord => ({
  id: r.id,
  tenantId: r.tenantId,
  seq,
  runId: r.runId,
  actor: r.actor,
  action: r.action,
  subject: r.subject,
  data: r.data,
  createdAt: r.createdAt,
});

/**
 * Seals up to `limit` unsealed records of one shop into its chain, in insertion order, under the shop's advisory
 * lock (another sealer on the same shop skips it: it is being sealed). Returns how many were sealed.
 */
export async function sealTenant(db: Store, tenantId: string, limit = 500): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const locked = await sql<{
      ok: boolean;
    }>`SELECT pg_try_advisory_xact_lock(hashtextextended(${`audit-chain:${tenantId}`}, 0)) AS ok`.execute(tx);
    if (!locked.rows[0]?.ok) return 0;
    const rows = (
      await sql<RecordRow & { pos: string }>`SELECT ${RECORD_COLUMNS}, pos::text AS pos FROM "AuditEvent"
        WHERE "tenantId" = ${tenantId} AND seq IS NULL ORDER BY pos LIMIT ${limit}`.execute(tx)
    ).rows;
    if (!rows.length) return 0;
    const head = (
      await sql<{ seq: number; hash: string }>`SELECT seq, hash FROM "AuditChainHead" WHERE "tenantId" = ${tenantId}`.execute(tx)
    ).rows[0];
    let seq = head?.seq ?? 0;
    let prev = head?.hash ?? GENESIS_HASH;
    const sealed: Array<{ id: string; seq: number; prevHash: string; hash: string }> = [];
    for (const r of rows) {
      seq += 1;
      const hash = chainHash(prev, toRecord(r, seq));
      sealed.push({ id: r.id, seq, prevHash: prev, hash });
      prev = hash;
    }
    await sql`UPDATE "AuditEvent" a SET seq = s.seq, "prevHash" = s."prevHash", hash = s.hash, "sealedAt" = now()
      FROM jsonb_to_recordset(${JSON.stringify(sealed)}::jsonb) AS s(id text, seq int, "prevHash" text, hash text)
      WHERE a.id = s.id AND a.seq IS NULL`.execute(tx);
    await sql`INSERT INTO "AuditChainHead" ("tenantId", seq, hash, "updatedAt") VALUES (${tenantId}, ${seq}, ${prev}, now())
      ON CONFLICT ("tenantId") DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "updatedAt" = now()`.execute(tx);
    return sealed.length;
  });
}

/** Shops whose sealing failed for a reason of their own, waiting for their next try (lib/backoff). */
export const sealRetries = processBackoff("audit-seal");

/**
 * Seals every shop that has unsealed records (each shop under its own lock). Returns how many records were sealed.
 * A shop whose sealing fails for a reason of its own is logged and tried again later (its records stay unsealed, in
 * order: a chain cannot skip one); the other shops are sealed meanwhile. A database that cannot be reached fails it.
 */
export async function sealAuditChains(db: Store, opts: { limitPerTenant?: number } = {}): Promise<number> {
  const tenants = (await sql<{ tenantId: string }>`SELECT DISTINCT "tenantId" FROM "AuditEvent" WHERE seq IS NULL`.execute(db)).rows;
  sealRetries.forgetAllBut(new Set(tenants.map((t) => t.tenantId)));
  const waiting = new Set(sealRetries.waiting());
  let sealed = 0;
  const failures = new FailuresOfAPass("tenantId", {
    one: "sealing a shop's audit records failed; they stay unsealed and are tried again later",
    many: (n) => `sealing the audit records of ${n} shops failed alike; they stay unsealed and are tried again later`,
  });
  try {
    for (const { tenantId } of tenants) {
      if (waiting.has(tenantId)) continue;
      try {
        sealed += await sealTenant(db, tenantId, opts.limitPerTenant);
        sealRetries.settled(tenantId);
      } catch (err) {
        if (connectivityFailureKind(err)) throw err;
        failures.add(err, { tenantId, ...sealRetries.failed(tenantId) });
      }
    }
  } finally {
    failures.log((fields, msg) => log.error(fields, msg));
  }
  return sealed;
}

export interface ChainProblem {
  kind: "altered" | "removed";
  /** the chain position of the first record that is not as it was sealed */
  seq: number;
  /** the record's id, when the record is still there */
  id: string | null;
  message: string;
}

export interface ChainReport {
  tenantId: string;
  ok: boolean;
  /** sealed records checked */
  checked: number;
  /** records written but not yet sealed (they join the chain within seconds, while a worker runs) */
  unsealed: number;
  head: { seq: number; hash: string } | null;
  firstProblem: ChainProblem | null;
}

/**
 * Walks a shop's chain from its first record: every record must sit at the next seq, link to the hash before it,
 * and hash to what was sealed; the last one must be the recorded head. Reports the first record that fails.
 */
export async function verifyAuditChain(db: Store, tenantId: string, batch = 1000): Promise<ChainReport> {
  const head =
    (await sql<{ seq: number; hash: string }>`SELECT seq, hash FROM "AuditChainHead" WHERE "tenantId" = ${tenantId}`.execute(db)).rows[0] ??
    null;
  const unsealed = Number(
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM "AuditEvent" WHERE "tenantId" = ${tenantId} AND seq IS NULL`.execute(db))
      .rows[0]?.n ?? 0,
  );
  const report = (checked: number, firstProblem: ChainProblem | null): ChainReport => ({
    tenantId,
    ok: firstProblem === null,
    checked,
    unsealed,
    head: head ? { seq: head.seq, hash: head.hash } : null,
    firstProblem,
  });
  let expectedSeq = 1;
  let prev = GENESIS_HASH;
  let checked = 0;
  for (;;) {
    const rows = (
      await sql<RecordRow & { seq: number; prevHash: string | null; hash: string | null }>`SELECT ${RECORD_COLUMNS}, seq, "prevHash", hash
        FROM "AuditEvent" WHERE "tenantId" = ${tenantId} AND seq >= ${expectedSeq} ORDER BY seq LIMIT ${batch}`.execute(db)
    ).rows;
    for (const r of rows) {
      if (r.seq !== expectedSeq) {
        return report(checked, {
          kind: "removed",
          seq: expectedSeq,
          id: null,
          message: `Record ${expectedSeq} of the chain is missing (the next one present is ${r.seq}, id ${r.id}).`,
        });
      }
      if (r.prevHash !== prev) {
        return report(checked, {
          kind: "altered",
          seq: r.seq,
          id: r.id,
          message: `Record ${r.seq} (id ${r.id}) does not link to the record before it.`,
        });
      }
      if (chainHash(prev, toRecord(r, r.seq)) !== r.hash) {
        return report(checked, {
          kind: "altered",
          seq: r.seq,
          id: r.id,
          message: `Record ${r.seq} (id ${r.id}, ${r.action}) was changed after it was sealed: its hash no longer matches.`,
        });
      }
      prev = r.hash;
      expectedSeq += 1;
      checked += 1;
    }
    if (rows.length < batch) break;
  }
  const lastSeq = expectedSeq - 1;
  if (head && (head.seq > lastSeq || (head.seq === lastSeq && head.hash !== prev))) {
    return report(checked, {
      kind: "removed",
      seq: lastSeq + 1,
      id: null,
      message:
        head.seq > lastSeq
          ? `The chain ends at record ${lastSeq} but ${head.seq} were sealed: record ${lastSeq + 1} onwards was removed.`
          : `The last record (${lastSeq}) is not the one that was sealed.`,
    });
  }
  if (!head && lastSeq > 0) {
    return report(checked, { kind: "removed", seq: lastSeq, id: null, message: "The chain's recorded head is missing." });
  }
  if (head && head.seq < lastSeq) {
    return report(checked, {
      kind: "altered",
      seq: head.seq + 1,
      id: null,
      message: `Records after the recorded head (${head.seq}) were added outside the sealer.`,
    });
  }
  return report(checked, null);
}

// One row per model request, as the supervisor inspects it: stop reason, usage, latency, the response as returned.
import { sql } from "kysely";
import { json, type Statement } from "./statement";

export interface ModelCallRecord {
  tenantId: string;
  runId: string;
  turn: number;
  model: string;
  stopReason: string | null;
  error: string | null;
  maxTokens: number;
  latencyMs: number;
  /** the request carried every transcript message up to this seq */
  throughSeq: number;
  /** the request carried the transcript verbatim from this seq on, after the rolling summary (lib/runtime/context) */
  contextFromSeq?: number | null;
  contextSummaryId?: string | null;
  /** the request's size in input tokens (as counted, or as the usage reported) */
  requestTokens?: number | null;
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  /** USD micro-dollars */
  costMicros?: number;
  /** the specialist scope whose model was called (null: the run's own) */
  scope?: string | null;
  /** the response exactly as returned (content, stop_reason, usage), or null for a failed request */
  response: unknown;
}

/** Adds the INSERT of a model call to a statement. */
export function addModelCall(s: Statement, name: string, m: ModelCallRecord): void {
  s.insert(name, "ModelCall", {
    id: sql`gen_random_uuid()::text`,
    tenantId: m.tenantId,
    runId: m.runId,
    turn: m.turn,
    model: m.model,
    stopReason: m.stopReason,
    error: m.error,
    inputTokens: m.inputTokens ?? 0,
    outputTokens: m.outputTokens ?? 0,
    cacheReadTokens: m.cacheReadTokens ?? 0,
    cacheWriteTokens: m.cacheWriteTokens ?? 0,
    costMicros: m.costMicros ?? 0,
    scope: m.scope ?? null,
    maxTokens: m.maxTokens,
    latencyMs: Math.round(m.latencyMs),
    throughSeq: m.throughSeq,
    contextFromSeq: m.contextFromSeq ?? null,
    contextSummaryId: m.contextSummaryId ?? null,
    requestTokens: m.requestTokens ?? null,
    response: m.response === null ? null : json(m.response),
  });
}

/**
 * Adds a model call's cost to its shop's spend of the day (a sharded counter: one of a few rows, chosen at random, so
 * concurrent runs of a shop never wait on one row). Nothing is written for a free call.
 */
export function addShopSpend(s: Statement, name: string, tenantId: string, costMicros: number): void {
  if (costMicros <= 0) return;
  s.insert(
    name,
    "TenantSpend",
    { tenantId, day: sql`(now() AT TIME ZONE 'UTC')::date`, shard: Math.floor(Math.random() * SPEND_SHARDS), costMicros },
    {
      onConflict: sql`("tenantId", day, shard) DO UPDATE SET "costMicros" = "TenantSpend"."costMicros" + excluded."costMicros"`,
      returning: sql`"TenantSpend"."tenantId"`,
    },
  );
}

const SPEND_SHARDS = 8;

/** The shop's model spend today (UTC), in micro-dollars. */
export const shopSpendTodaySql = (tenantId: string | ReturnType<typeof sql>) =>
  sql<number>`(SELECT coalesce(sum("costMicros"), 0)::bigint FROM "TenantSpend" WHERE "tenantId" = ${tenantId} AND day = (now() AT TIME ZONE 'UTC')::date)`;

/**
 * A conversation's model spend (all its runs), in micro-dollars. The runs are aliased: callers pass a reference to an
 * outer "Run" row (`"Run"."conversationId"` in a RETURNING list), which an unaliased inner "Run" would shadow — the
 * sum would then be every conversation's spend.
 */
export const conversationSpendSql = (conversationId: string | ReturnType<typeof sql>) =>
  sql<number>`(SELECT coalesce(sum(spent."costMicros"), 0)::bigint FROM "Run" spent WHERE spent."conversationId" = ${conversationId})`;

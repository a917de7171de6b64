import { randomUUID } from "node:crypto";
import { sql, type Transaction } from "kysely";
import type { DB } from "@/lib/db/kysely";
import type { VerificationAttemptKind, VerificationOutcome } from "@/lib/generated/kysely/enums";

type Tx = Transaction<DB>;
import type { VerificationLevel } from "./levels";

/**
 * Attempt limits for proving identity, over a sliding window. Failures are counted per conversation, per client IP
 * and per email (for every email, whether or not an account exists, so reaching a limit reveals nothing). Over a
 * limit, nothing is examined: even correct details are refused until the window has moved on.
 */
export const ATTEMPT_LIMITS = {
  windowMinutes: 15,
  failuresPerConversation: 5,
  failuresPerIp: 20,
  failuresPerEmail: 10,
  codeRequestsPerConversation: 3,
  codeRequestsPerIp: 10,
  /** Above this, a request is answered as usual but no mail goes out: nobody's inbox can be flooded. */
  codeMailsPerEmail: 3,
} as const;

export interface AttemptScope {
  tenantId: string;
  conversationId: string;
  ip: string | null;
  emailHash: string;
}

/**
 * Serialises identity checks that share a conversation, an IP or an email, so parallel calls (several
 * verify_customer calls in one model turn, several tabs) cannot all pass a limit at once. Transaction-scoped
 * advisory locks, taken in one statement in a fixed order so two checks never wait on each other in a cycle.
 */
export async function lockAttemptScope(tx: Tx, scope: AttemptScope): Promise<void> {
  const keys = [`verify:conversation:${scope.conversationId}`, `verify:email:${scope.tenantId}:${scope.emailHash}`];
  if (scope.ip) keys.push(`verify:ip:${scope.tenantId}:${scope.ip}`);
  await sql`
    SELECT count(pg_advisory_xact_lock(k))::int AS locked
    FROM (SELECT DISTINCT hashtextextended(x, 0) AS k FROM unnest(${keys}::text[]) AS x ORDER BY 1) AS keys`.execute(tx);
}

export interface RecentCounts {
  conversation: number;
  ip: number;
  email: number;
}

/** Rows of these kinds and outcomes in the window, per conversation, per IP (0 when unknown) and per email. */
export async function recentAttempts(
  tx: Tx,
  scope: AttemptScope,
  kinds: VerificationAttemptKind[],
  outcomes: VerificationOutcome[],
  now: Date,
): Promise<RecentCounts> {
  const since = new Date(now.getTime() - ATTEMPT_LIMITS.windowMinutes * 60_000);
  const { rows } = await sql<{ conversation: number; ip: number; email: number }>`
    SELECT count(*) FILTER (WHERE "conversationId" = ${scope.conversationId})::int AS conversation,
           count(*) FILTER (WHERE ip = ${scope.ip})::int AS ip,
           count(*) FILTER (WHERE "emailHash" = ${scope.emailHash})::int AS email
    FROM "VerificationAttempt"
    WHERE "tenantId" = ${scope.tenantId} AND "createdAt" > ${since}
      AND kind::text = ANY(${kinds}::text[]) AND outcome::text = ANY(${outcomes}::text[])
      AND ("conversationId" = ${scope.conversationId} OR ip = ${scope.ip} OR "emailHash" = ${scope.emailHash})`.execute(tx);
  return rows[0] ?? { conversation: 0, ip: 0, email: 0 };
}

/** Whether failed identity checks already reached a limit for this conversation, IP or email. */
export async function overFailureLimit(tx: Tx, scope: AttemptScope, now: Date): Promise<boolean> {
  const failed = await recentAttempts(tx, scope, ["order_email", "email_code"], ["failed"], now);
  return (
    failed.conversation >= ATTEMPT_LIMITS.failuresPerConversation ||
    failed.ip >= ATTEMPT_LIMITS.failuresPerIp ||
    failed.email >= ATTEMPT_LIMITS.failuresPerEmail
  );
}

export interface RecordedAttempt {
  kind: VerificationAttemptKind;
  outcome: VerificationOutcome;
  customerId: string | null;
  level: VerificationLevel | null;
}

/** The attempt a tool call already made (a call run again after a crash returns its first outcome). */
export async function attemptOfCall(tx: Tx, tenantId: string, toolCallId: string): Promise<RecordedAttempt | null> {
  const row = await tx
    .selectFrom("VerificationAttempt")
    .select(["kind", "outcome", "customerId", "level"])
    .where("tenantId", "=", tenantId)
    .where("toolCallId", "=", toolCallId)
    .executeTakeFirst();
  return row ?? null;
}

export async function recordAttempt(
  tx: Tx,
  scope: AttemptScope,
  a: {
    toolCallId: string | null;
    kind: VerificationAttemptKind;
    outcome: VerificationOutcome;
    customerId?: string;
    level?: VerificationLevel;
  },
): Promise<void> {
  await tx
    .insertInto("VerificationAttempt")
    .values({
      id: randomUUID(),
      tenantId: scope.tenantId,
      conversationId: scope.conversationId,
      ip: scope.ip,
      emailHash: scope.emailHash,
      toolCallId: a.toolCallId,
      kind: a.kind,
      outcome: a.outcome,
      customerId: a.customerId ?? null,
      level: a.level ?? null,
    })
    .execute();
}

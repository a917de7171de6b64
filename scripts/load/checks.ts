/**
 * The figures that must be exactly right, computed from the database after the run (never from what the clients
 * believe): every accepted customer message answered, no effect done twice, every tool_use answered by its
 * tool_result in the transcript.
 */
import type pg from "pg";

export interface ExactFigures {
  /** customer messages in the database for the run's conversations (each one was accepted with a 202) */
  customerMessages: number;
  /** messages a client saw accepted (202) that the database does not have */
  acceptedMissing: number;
  /** customer messages with no agent reply shown after them (or still waiting to be delivered) */
  lostMessages: number;
  lostSamples: string[];
  /** runs still not settled (running, waiting) — none should be left once every reply arrived */
  unsettledRuns: number;
  effects: number;
  /** idempotency keys (ledger, refunds, provider requests) and tool calls with more than one effect */
  duplicateEffects: number;
  /** orders whose refunded total differs from the refunds recorded on them */
  refundMismatches: number;
  toolUses: number;
  unansweredToolUse: number;
  unansweredSamples: string[];
}

export async function exactFigures(
  db: pg.Client,
  conversationIds: string[],
  accepted: { conversationId: string; seq: number }[],
): Promise<ExactFigures> {
  const ids = conversationIds;
  const one = async <T>(sql: string, params: unknown[] = []): Promise<T> => (await db.query(sql, params)).rows[0] as T;

  const { customer } = await one<{ customer: number }>(
    `SELECT count(*)::int AS customer FROM "Message" WHERE "conversationId" = ANY($1) AND author = 'CUSTOMER'`,
    [ids],
  );
  // A reply is an agent message shown to the customer after theirs. Counted per customer message: a message the
  // run answered together with later ones (queued while it was busy) is answered by the same reply.
  const lost = await db.query<{ conversationId: string; seq: number }>(
    `SELECT c."conversationId", c.seq FROM "Message" c
      WHERE c."conversationId" = ANY($1) AND c.author = 'CUSTOMER'
        AND (c."pendingDelivery" OR NOT EXISTS (
          SELECT 1 FROM "Message" r
           WHERE r."conversationId" = c."conversationId" AND r.seq > c.seq AND r.author = 'AGENT' AND r."shownToCustomer"))
      ORDER BY 1, 2`,
    [ids],
  );
  const { missing } = await one<{ missing: number }>(
    `SELECT count(*)::int AS missing FROM unnest($1::text[], $2::int[]) AS a(conv, seq)
      WHERE NOT EXISTS (SELECT 1 FROM "Message" m WHERE m."conversationId" = a.conv AND m.seq = a.seq AND m.author = 'CUSTOMER')`,
    [accepted.map((a) => a.conversationId), accepted.map((a) => a.seq)],
  );
  const { unsettled } = await one<{ unsettled: number }>(
    `SELECT count(*)::int AS unsettled FROM "Run" WHERE "conversationId" = ANY($1)
        AND phase NOT IN ('COMPLETED', 'ESCALATED', 'DEAD_LETTER')`,
    [ids],
  );

  const { effects } = await one<{ effects: number }>(`SELECT count(*)::int AS effects FROM "EffectLedger"`);
  const { duplicates } = await one<{ duplicates: number }>(
    `SELECT (
        (SELECT count(*) FROM (SELECT 1 FROM "EffectLedger" GROUP BY "idempotencyKey" HAVING count(*) > 1) a)
      + (SELECT count(*) FROM (SELECT 1 FROM "EffectLedger" GROUP BY "toolCallId" HAVING count(*) > 1) b)
      + (SELECT count(*) FROM (SELECT 1 FROM "Refund" GROUP BY "idempotencyKey" HAVING count(*) > 1) c)
      + (SELECT count(*) FROM (SELECT 1 FROM "ProviderRequest" GROUP BY "tenantId", "idempotencyKey" HAVING count(*) > 1) d)
     )::int AS duplicates`,
  );
  const { mismatches } = await one<{ mismatches: number }>(
    `SELECT count(*)::int AS mismatches FROM "Order" o
      WHERE o."refundedCents" <> COALESCE((SELECT sum(r."amountCents") FROM "Refund" r WHERE r."orderId" = o.id), 0)
        AND o.id LIKE 'load%'`,
  );

  // Transcript pairing: every tool_use block the model wrote is answered by a tool_result with its id, later in the
  // same conversation's transcript.
  const pairing = await db.query<{ conversationId: string; toolUseId: string; answered: boolean }>(
    `SELECT m."conversationId", u.block->>'id' AS "toolUseId",
            EXISTS (
              SELECT 1 FROM "Message" r, jsonb_array_elements(CASE WHEN jsonb_typeof(r.content) = 'array' THEN r.content ELSE '[]' END) AS res(block)
               WHERE r."conversationId" = m."conversationId" AND r.seq > m.seq AND r."inTranscript"
                 AND res.block->>'type' = 'tool_result' AND res.block->>'tool_use_id' = u.block->>'id') AS answered
       FROM "Message" m, jsonb_array_elements(CASE WHEN jsonb_typeof(m.content) = 'array' THEN m.content ELSE '[]' END) AS u(block)
      WHERE m."conversationId" = ANY($1) AND m.role = 'assistant' AND m."inTranscript" AND u.block->>'type' = 'tool_use'`,
    [ids],
  );
  const unanswered = pairing.rows.filter((r) => !r.answered);
  return {
    customerMessages: customer,
    acceptedMissing: missing,
    lostMessages: lost.rowCount ?? 0,
    lostSamples: lost.rows.slice(0, 5).map((r) => `${r.conversationId}#${r.seq}`),
    unsettledRuns: unsettled,
    effects,
    duplicateEffects: duplicates,
    refundMismatches: mismatches,
    toolUses: pairing.rowCount ?? 0,
    unansweredToolUse: unanswered.length,
    unansweredSamples: unanswered.slice(0, 5).map((r) => `${r.conversationId} ${r.toolUseId}`),
  };
}

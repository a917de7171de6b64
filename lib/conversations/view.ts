import type { PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { type RawBuilder, sql } from "kysely";
import { type Store, storeOf } from "@/lib/db/kysely";
import { hashToken } from "./intake";

type RawSql = RawBuilder<unknown>;

/** Finds a widget conversation by its visitor token (constant work: a hash lookup); a wrong token is NOT_FOUND. */
export async function conversationByToken(db: PrismaTx, tenantId: string, token: string) {
  if (typeof token !== "string" || token.length < 16 || token.length > 100)
    throw new AppError("NOT_FOUND", "This conversation was not found.");
  const conversation = await db.conversation.findFirst({ where: { tokenHash: hashToken(token), tenantId } });
  if (!conversation) throw new AppError("NOT_FOUND", "This conversation was not found.");
  return conversation;
}

/**
 * The conversation as the customer sees it: their messages, the agent's replies, notices and a person's
 * replies (with the person's name), plus an honest status: working, waiting for a person, or with a person.
 */
export async function customerView(db: PrismaTx, conversationId: string, afterSeq = 0) {
  return (await readCustomerView(storeOf(db), conversationId, afterSeq)).view;
}

type ViewRow = {
  status: string;
  messageCount: number;
  verifiedCustomerId: string | null;
  verificationExpiresAt: Date | null;
  ownerStaffId: string | null;
  ownerName: string | null;
  runPhase: string | null;
  pending: number;
  cursor: bigint | string;
  messages: { seq: number; author: string; staffId: string | null; staffName: string | null; text: string | null; at: number }[];
};

/**
 * The customer's view (messages after `afterSeq`) and the conversation's newest event id, in one statement — the
 * widget reads it on every live update, so it is one round trip, and its parts are one snapshot.
 */
export async function readCustomerView(store: Store, conversationId: string, afterSeq = 0) {
  const from = sql`FROM "Conversation" c WHERE c.id = ${conversationId}`;
  const c = (await viewStatement(store, sql`c."tenantId"`, from, afterSeq))[0];
  if (!c?.conversationId) throw new AppError("NOT_FOUND", "This conversation was not found.");
  return viewOf(c);
}

/**
 * The same for a widget request, which names a shop and presents a visitor token: the shop, the conversation the
 * token opens in it (null: none) and its view, in one statement. Null when there is no such shop.
 */
export async function readVisitorView(store: Store, slug: string, tokenHash: string, afterSeq = 0) {
  const from = sql`FROM "Tenant" t LEFT JOIN "Conversation" c ON c."tenantId" = t.id AND c."tokenHash" = ${tokenHash}
    WHERE t.slug = ${slug}`;
  const row = (await viewStatement(store, sql`t.id`, from, afterSeq))[0];
  if (!row) return null;
  return { tenantId: row.shopId!, conversation: row.conversationId ? viewOf(row) : null };
}

async function viewStatement(store: Store, shopId: RawSql, from: RawSql, afterSeq: number) {
  // Names are a person's in this shop only; `at` is epoch milliseconds (createdAt is stored as UTC).
  const { rows } = await sql<ViewRow & { conversationId: string | null; shopId: string | null }>`
    SELECT c.id AS "conversationId", ${shopId} AS "shopId", c.status::text AS status, c."messageCount", c."verifiedCustomerId", c."verificationExpiresAt", c."ownerStaffId",
      (SELECT s.name FROM "StaffUser" s WHERE s.id = c."ownerStaffId" AND s."tenantId" = c."tenantId") AS "ownerName",
      (SELECT r.phase::text FROM "Run" r WHERE r.id = c."activeRunId") AS "runPhase",
      (SELECT count(*)::int FROM "Handoff" h
        WHERE h."conversationId" = c.id AND h.kind = 'APPROVAL' AND h.status = 'PENDING') AS pending,
      (SELECT coalesce(max(e.id), 0) FROM "Event" e WHERE e."conversationId" = c.id) AS cursor,
      (SELECT coalesce(json_agg(json_build_object(
          'seq', m.seq, 'author', m.author, 'staffId', m."staffId", 'staffName', s.name, 'text', m."displayText",
          'at', floor(extract(epoch FROM m."createdAt") * 1000)) ORDER BY m.seq), '[]'::json)
        FROM "Message" m LEFT JOIN "StaffUser" s ON s.id = m."staffId" AND s."tenantId" = c."tenantId"
        WHERE m."conversationId" = c.id AND m."shownToCustomer" AND m.seq > ${afterSeq}) AS messages
    ${from}`.execute(store);
  return rows;
}

function viewOf(c: ViewRow & { conversationId: string | null }) {
  const conversationId = c.conversationId!;
  const status =
    c.status === "human"
      ? "with_person"
      : c.runPhase === "WAITING_FOR_APPROVAL"
        ? "waiting_for_approval"
        : c.runPhase === "RUNNING" || c.runPhase === "WAITING_FOR_RETRY"
          ? "working"
          : c.status === "escalated"
            ? "waiting_for_person"
            : "idle";
  const view = {
    conversationId,
    status,
    owner: c.ownerStaffId ? (c.ownerName ?? "A person") : null,
    verified: !!c.verifiedCustomerId && (!c.verificationExpiresAt || c.verificationExpiresAt > new Date()),
    pendingApprovals: c.pending,
    lastSeq: c.messageCount,
    messages: c.messages.map((m) => ({
      seq: m.seq,
      from: m.author === "CUSTOMER" ? "customer" : m.author === "STAFF" ? "person" : m.author === "AGENT" ? "agent" : "system",
      name: m.author === "STAFF" && m.staffId ? (m.staffName ?? "Support") : null,
      text: m.text ?? "",
      at: new Date(m.at),
    })),
  };
  return { cursor: BigInt(c.cursor), view };
}
export type CustomerView = Awaited<ReturnType<typeof customerView>>;

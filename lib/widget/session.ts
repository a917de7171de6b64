import "server-only";
import type { PrismaClient, PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { openConversation } from "@/lib/conversations/intake";
import { conversationByToken, type CustomerView, readCustomerView, readVisitorView } from "@/lib/conversations/view";
import { hashToken } from "@/lib/conversations/intake";
import { loadPolicy } from "@/lib/runtime/policy";
import { storeOf } from "@/lib/db/kysely";
import { verifyCustomerIdentity } from "./identity";
import type { WidgetSession, WidgetView } from "./api-types";
import { addLogContext } from "@/lib/log";

/**
 * The widget's visitor sessions: which shop, which conversation, which verified customer. Everything is
 * scoped by the tenant in the query, so a token from another shop is simply "not found".
 */

const SHOP_SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

export type WidgetTenant = {
  id: string;
  slug: string;
  name: string;
  widgetSecret: string;
  widgetSecretPrevious: string | null;
  widgetSecretPreviousUntil: Date | null;
  allowedOrigins: string[];
  policyVersion: number;
};

const SHOP_NOT_FOUND = "This shop was not found.";
const NO_CONVERSATION = "This chat has no conversation yet. Please reload the chat.";
const CONVERSATION_NOT_FOUND = "This conversation was not found.";

export async function widgetTenant(db: PrismaTx, slug: string): Promise<WidgetTenant> {
  return (await visitorRead(db, slug, null)).tenant;
}

/** A token that cannot be a visitor's (no lookup is made for it): wrong type or length. */
const plausibleToken = (token: string | null): token is string => typeof token === "string" && token.length >= 16 && token.length <= 100;

/**
 * The shop and the conversation a token opens, read in one statement (every widget request starts here). Unknown shop
 * → NOT_FOUND; with `token` a string, no such conversation in this shop → NOT_FOUND.
 */
async function visitorRead(db: PrismaTx, slug: string, token: string | null) {
  const row = SHOP_SLUG.test(slug)
    ? await storeOf(db)
        .selectFrom("Tenant as t")
        // A token from another shop joins nothing: "not found", as an unknown token.
        .leftJoin("Conversation as c", (join) =>
          join.onRef("c.tenantId", "=", "t.id").on("c.tokenHash", "=", plausibleToken(token) ? hashToken(token) : ""),
        )
        .select([
          "t.id",
          "t.slug",
          "t.name",
          "t.widgetSecret",
          "t.widgetSecretPrevious",
          "t.widgetSecretPreviousUntil",
          "t.allowedOrigins",
          "t.policyVersion",
          "c.id as conversationId",
        ])
        .where("t.slug", "=", slug)
        .executeTakeFirst()
    : undefined;
  if (!row) throw new AppError("NOT_FOUND", SHOP_NOT_FOUND);
  const { conversationId, ...tenant } = row;
  addLogContext({ tenantId: tenant.id });
  return { tenant: tenant satisfies WidgetTenant, conversationId };
}

/**
 * The shop, and the visitor's conversation from the token they present, in one read: unknown shop → NOT_FOUND, no
 * token → UNAUTHENTICATED, a token that opens no conversation of this shop → NOT_FOUND.
 */
export async function visitorSession(db: PrismaTx, slug: string, token: string | null) {
  const { tenant, conversationId } = await visitorRead(db, slug, token);
  if (!token) throw new AppError("UNAUTHENTICATED", NO_CONVERSATION);
  if (!conversationId) throw new AppError("NOT_FOUND", CONVERSATION_NOT_FOUND);
  addLogContext({ conversationId });
  return { tenant, conversation: { id: conversationId } };
}

/**
 * A widget read (GET /conversation): the shop, the visitor's conversation from their token and its view after a seq, in
 * one statement — the widget makes it on every live update. Errors as `visitorSession`'s.
 */
export async function visitorView(db: PrismaTx, slug: string, token: string | null, afterSeq: number): Promise<WidgetView> {
  const read = SHOP_SLUG.test(slug)
    ? await readVisitorView(storeOf(db), slug, plausibleToken(token) ? hashToken(token) : "", afterSeq)
    : null;
  if (!read) throw new AppError("NOT_FOUND", SHOP_NOT_FOUND);
  addLogContext({ tenantId: read.tenantId });
  if (!token) throw new AppError("UNAUTHENTICATED", NO_CONVERSATION);
  if (!read.conversation) throw new AppError("NOT_FOUND", CONVERSATION_NOT_FOUND);
  addLogContext({ conversationId: read.conversation.view.conversationId });
  return toWidgetView(read.conversation.view, read.conversation.cursor);
}

/** The customer's view as the widget API sends it; `cursor` is the newest event id of the snapshot it was read in. */
export function toWidgetView(view: CustomerView, cursor: bigint): WidgetView {
  return {
    conversationId: view.conversationId,
    version: cursor.toString(),
    status: view.status as WidgetView["status"],
    owner: view.owner,
    verified: view.verified,
    pendingApprovals: view.pendingApprovals,
    lastSeq: view.lastSeq,
    messages: view.messages.map((m) => ({
      seq: m.seq,
      from: m.from as WidgetView["messages"][number]["from"],
      name: m.name,
      text: m.text,
      at: new Date(m.at).toISOString(),
    })),
  };
}

/**
 * The view after a seq and the newest event id, read in one statement: one snapshot, so every event up to the cursor
 * is in the view and live updates continue after it — nothing landing in between is lost.
 */
export async function viewWithCursor(db: PrismaTx, conversationId: string, afterSeq = 0) {
  const { cursor, view } = await readCustomerView(storeOf(db), conversationId, afterSeq);
  return { cursor, view: toWidgetView(view, cursor) };
}

/**
 * Starts or resumes the visitor's conversation. A stored token resumes only a conversation of the same
 * person: an anonymous token never opens a signed-in customer's chat, and a signed-in customer never
 * resumes someone else's. A valid identity refreshes the conversation's verification (it is fresh proof
 * from the shop). An invalid identity is refused outright (UNAUTHENTICATED); the widget then falls back to
 * an anonymous chat and says so.
 */
export async function startOrResumeConversation(
  db: PrismaClient,
  a: {
    tenant: WidgetTenant;
    token: string | null;
    identity: string | null;
    /** runs before a NEW conversation is opened (not on a resume): where its rate limit is counted */
    beforeOpen?: () => Promise<void>;
  },
): Promise<WidgetSession> {
  const { tenant } = a;
  let customer: { id: string; name: string; email: string } | null = null;
  if (a.identity) {
    const identity = await verifyCustomerIdentity(tenant, a.identity);
    customer =
      (await storeOf(db)
        .selectFrom("Customer")
        .select(["id", "name", "email"])
        .where("tenantId", "=", tenant.id)
        .where("email", "=", identity.email)
        .executeTakeFirst()) ?? null;
    if (!customer)
      throw new AppError(
        "UNAUTHENTICATED",
        "We couldn't confirm your sign-in. Please refresh the page, or continue without signing in.",
        undefined,
        "identity refused: unknown customer",
      );
  }
  // At the version this request read with the shop (a policy version is never changed, only superseded).
  const policy = await loadPolicy(storeOf(db), tenant.id, tenant.policyVersion);
  const ttlMinutes = policy.rules.verificationTtlMinutes;

  if (a.token) {
    const existing = await conversationByToken(db, tenant.id, a.token).catch((err) => {
      if (err instanceof AppError && err.code === "NOT_FOUND") return null;
      throw err;
    });
    if (existing && existing.status !== "closed" && existing.customerId === (customer?.id ?? null)) {
      if (customer) {
        const now = new Date();
        await db.conversation.updateMany({
          where: { id: existing.id, tenantId: tenant.id, customerId: customer.id },
          data: {
            verifiedCustomerId: customer.id,
            verificationLevel: "shop_signed",
            verifiedAt: now,
            verificationExpiresAt: new Date(now.getTime() + ttlMinutes * 60_000),
          },
        });
      }
      const { cursor, view } = await viewWithCursor(db, existing.id);
      return { token: a.token, resumed: true, customer: customer ? { name: customer.name } : null, cursor: cursor.toString(), view };
    }
  }

  await a.beforeOpen?.();
  const { conversation, token } = await openConversation(db, {
    tenantId: tenant.id,
    customer, // read above: not read again
    verificationTtlMinutes: ttlMinutes,
  });
  const { cursor, view } = await viewWithCursor(db, conversation.id);
  return { token, resumed: false, customer: customer ? { name: customer.name } : null, cursor: cursor.toString(), view };
}

import "server-only";
import type { PrismaClient, PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { openConversation } from "@/lib/conversations/intake";
import { conversationByToken, customerView, type CustomerView } from "@/lib/conversations/view";
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

export async function widgetTenant(db: PrismaTx, slug: string): Promise<WidgetTenant> {
  const tenant = SHOP_SLUG.test(slug)
    ? await db.tenant.findUnique({
        where: { slug },
        select: {
          id: true,
          slug: true,
          name: true,
          widgetSecret: true,
          widgetSecretPrevious: true,
          widgetSecretPreviousUntil: true,
          allowedOrigins: true,
          policyVersion: true,
        },
      })
    : null;
  if (!tenant) throw new AppError("NOT_FOUND", "This shop was not found.");
  addLogContext({ tenantId: tenant.id });
  return tenant;
}

/** The visitor's conversation, from the token they present; missing → UNAUTHENTICATED, unknown → NOT_FOUND. */
export async function visitorConversation(db: PrismaTx, tenant: WidgetTenant, token: string | null) {
  if (!token) throw new AppError("UNAUTHENTICATED", "This chat has no conversation yet. Please reload the chat.");
  const conversation = await conversationByToken(db, tenant.id, token);
  addLogContext({ conversationId: conversation.id });
  return conversation;
}

/** The newest event id of a conversation (0 if none): live updates continue after it. */
export async function latestEventId(db: PrismaTx, conversationId: string): Promise<bigint> {
  const last = await db.event.findFirst({ where: { conversationId }, orderBy: { id: "desc" }, select: { id: true } });
  return last?.id ?? 0n;
}

export function toWidgetView(view: CustomerView): WidgetView {
  return {
    conversationId: view.conversationId,
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

/** The view after a seq, with the cursor read FIRST so an event landing in between is delivered, not lost. */
export async function viewWithCursor(db: PrismaTx, conversationId: string, afterSeq = 0) {
  const cursor = await latestEventId(db, conversationId);
  const view = toWidgetView(await customerView(db, conversationId, afterSeq));
  return { cursor, view };
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
  let customer: { id: string; name: string } | null = null;
  if (a.identity) {
    const identity = await verifyCustomerIdentity(tenant, a.identity);
    customer = await db.customer.findUnique({
      where: { tenantId_email: { tenantId: tenant.id, email: identity.email } },
      select: { id: true, name: true },
    });
    if (!customer)
      throw new AppError(
        "UNAUTHENTICATED",
        "We couldn't confirm your sign-in. Please refresh the page, or continue without signing in.",
        undefined,
        "identity refused: unknown customer",
      );
  }
  const policy = await loadPolicy(storeOf(db), tenant.id);
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
    customerId: customer?.id ?? null,
    verificationTtlMinutes: ttlMinutes,
  });
  const { cursor, view } = await viewWithCursor(db, conversation.id);
  return { token, resumed: false, customer: customer ? { name: customer.name } : null, cursor: cursor.toString(), view };
}

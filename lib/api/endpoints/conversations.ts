// /api/v1/conversations: the shop's widget conversations, filtered, oldest first, in keyset pages.
import type { Prisma } from "@/lib/db/prisma-types";
import { afterCursor, committedRows, decodeCursor, pageOf } from "../cursor";
import { defineEndpoint } from "../endpoint";
import { conversationListQuerySchema, conversationListSchema } from "../schemas";

export const listConversationsEndpoint = defineEndpoint(
  {
    operationId: "listConversations",
    method: "GET",
    path: "/conversations",
    summary: "List conversations",
    description:
      "The shop's conversations, oldest first: who the customer is (when verified or signed by the shop), the state, who owns it, its latest run and how many handoffs wait. Filter by status, customer email and creation time; follow `nextCursor` for the next page.",
    scope: "conversations:read",
    query: conversationListQuerySchema,
    response: conversationListSchema,
    errors: [],
    example: { query: "status=escalated" },
  },
  async ({ query }, { db, caller }) => {
    const and: Prisma.ConversationWhereInput[] = [{ tenantId: caller.tenantId }];
    if (query.status) and.push({ status: query.status });
    if (query.since) and.push({ createdAt: { gte: query.since } });
    if (query.until) and.push({ createdAt: { lt: query.until } });
    if (query.customer) {
      const customer = await db.customer.findUnique({
        where: { tenantId_email: { tenantId: caller.tenantId, email: query.customer.toLowerCase() } },
        select: { id: true },
      });
      if (!customer) return { data: [], nextCursor: null };
      and.push({ OR: [{ customerId: customer.id }, { verifiedCustomerId: customer.id }] });
    }
    and.push(afterCursor(decodeCursor(query.cursor)), await committedRows(db));
    const rows = await db.conversation.findMany({
      where: { AND: and },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: query.limit + 1,
      include: {
        runs: { orderBy: { startedAt: "desc" }, take: 1, select: { id: true, phase: true, outcome: true, startedAt: true } },
        _count: { select: { handoffs: { where: { status: "PENDING" } } } },
      },
    });
    const page = pageOf(rows, query.limit);
    const customerIds = [...new Set(page.rows.map((c) => c.verifiedCustomerId ?? c.customerId).filter((id): id is string => !!id))];
    const ownerIds = [...new Set(page.rows.map((c) => c.ownerStaffId).filter((id): id is string => !!id))];
    const [customers, owners] = await Promise.all([
      db.customer.findMany({
        where: { id: { in: customerIds }, tenantId: caller.tenantId },
        select: { id: true, email: true, name: true },
      }),
      db.staffUser.findMany({ where: { id: { in: ownerIds }, tenantId: caller.tenantId }, select: { id: true, name: true } }),
    ]);
    const customerById = new Map(customers.map((c) => [c.id, c]));
    const ownerById = new Map(owners.map((s) => [s.id, s]));
    return {
      data: page.rows.map((c) => {
        const customerId = c.verifiedCustomerId ?? c.customerId;
        return {
          id: c.id,
          status: c.status,
          customer: customerId ? (customerById.get(customerId) ?? null) : null,
          verificationLevel: c.verifiedCustomerId ? c.verificationLevel : null,
          ownedBy: c.ownerStaffId ? { id: c.ownerStaffId, name: ownerById.get(c.ownerStaffId)?.name ?? null } : null,
          messageCount: c.messageCount,
          pendingHandoffs: c._count.handoffs,
          lastRun: c.runs[0] ?? null,
          createdAt: c.createdAt,
          updatedAt: c.updatedAt,
        };
      }),
      nextCursor: page.nextCursor,
    };
  },
);

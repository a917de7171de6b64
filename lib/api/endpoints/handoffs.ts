// /api/v1/handoffs: list, read, decide. Every query carries the token's shop in its `where`: another shop's id is
// NOT_FOUND. A decision goes through resumeRun exactly as the console's does (same rules, versions, refusals), so the
// run continues here before the answer.
import type { z } from "zod";
import type { Prisma, PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { addLogContext } from "@/lib/log";
import { withCalls } from "@/lib/handoffs/calls";
import { type PresentedHandoff, presentHandoff } from "@/lib/handoffs/present";
import { staffNames } from "@/lib/staff-names";
import { resumeRun } from "@/lib/runtime/resume";
import { afterCursor, committedRows, decodeCursor, pageOf } from "../cursor";
import { defineEndpoint } from "../endpoint";
import {
  decisionRequestSchema,
  decisionResultSchema,
  handoffListQuerySchema,
  handoffListSchema,
  apiHandoffSchema,
  idParamsSchema,
} from "../schemas";

type ApiHandoff = z.output<typeof apiHandoffSchema>;

/** The presented handoff with its enums typed as the schema says (the response is checked against it when encoded). */
function asApiHandoff(h: PresentedHandoff): ApiHandoff {
  return { ...h, kind: h.kind as ApiHandoff["kind"], status: h.status as ApiHandoff["status"] };
}

/** One handoff of the shop, as presented; NOT_FOUND for any other id. */
export async function apiHandoff(db: PrismaTx, tenantId: string, handoffId: string): Promise<ApiHandoff> {
  const h = await db.handoff.findFirst({ where: { id: handoffId, tenantId }, include: { approvals: true } });
  if (!h) throw new AppError("NOT_FOUND", "This handoff was not found.");
  const [[withCall], names] = await Promise.all([withCalls(db, [h]), staffNames(db, tenantId)]);
  return asApiHandoff(presentHandoff(withCall!, names));
}

export const listHandoffsEndpoint = defineEndpoint(
  {
    operationId: "listHandoffs",
    method: "GET",
    path: "/handoffs",
    summary: "List handoffs",
    description:
      "The shop's handoffs — approvals waiting for a decision and escalations — oldest first, filtered by status, kind and creation time. Follow `nextCursor` for the next page.",
    scope: "handoffs:read",
    query: handoffListQuerySchema,
    response: handoffListSchema,
    errors: [],
    example: { query: "status=PENDING&kind=APPROVAL" },
  },
  async ({ query }, { db, caller }) => {
    const where: Prisma.HandoffWhereInput = {
      AND: [
        { tenantId: caller.tenantId },
        query.status ? { status: query.status } : {},
        query.kind ? { kind: query.kind } : {},
        query.since ? { createdAt: { gte: query.since } } : {},
        query.until ? { createdAt: { lt: query.until } } : {},
        afterCursor(decodeCursor(query.cursor)),
        await committedRows(db),
      ],
    };
    const rows = await db.handoff.findMany({
      where,
      include: { approvals: true },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: query.limit + 1,
    });
    const page = pageOf(rows, query.limit);
    const [withCall, names] = await Promise.all([withCalls(db, page.rows), staffNames(db, caller.tenantId)]);
    return { data: withCall.map((h) => asApiHandoff(presentHandoff(h, names))), nextCursor: page.nextCursor };
  },
);

export const getHandoffEndpoint = defineEndpoint(
  {
    operationId: "getHandoff",
    method: "GET",
    path: "/handoffs/{id}",
    summary: "Get a handoff",
    description: "One handoff: the self-contained record a reviewer decides from, its version and its state.",
    scope: "handoffs:read",
    params: idParamsSchema,
    response: apiHandoffSchema,
    errors: ["NOT_FOUND"],
  },
  async ({ params }, { db, caller }) => {
    addLogContext({ handoffId: params.id });
    return apiHandoff(db, caller.tenantId, params.id);
  },
);

export const decideHandoffEndpoint = defineEndpoint(
  {
    operationId: "decideHandoff",
    method: "POST",
    path: "/handoffs/{id}/decision",
    summary: "Decide an approval",
    description:
      "Approve, deny or edit-and-approve a pending approval, as the staff member named in `actor` — with their authority, the two-approver rule and claims, exactly as in the console. Quote the `version` you read: if the handoff changed since, the decision is refused (STALE_VERSION) and nothing happens. A decision that settles the run's last pending call continues the run before answering; a repeated decision is refused (ALREADY_DECIDED), never run twice.",
    scope: "handoffs:decide",
    params: idParamsSchema,
    body: decisionRequestSchema,
    response: decisionResultSchema,
    errors: [
      "NOT_FOUND",
      "ALREADY_DECIDED",
      "STALE_VERSION",
      "OVER_AUTHORITY",
      "SAME_APPROVER",
      "EXPIRED",
      "CLAIMED_BY_OTHER",
      "GATE_DENIED",
    ],
    example: { body: { decision: "approve", version: 1, actor: "raj@acme.test" } },
  },
  async ({ params, body }, { db, caller, runtime }) => {
    addLogContext({ handoffId: params.id });
    // Not found before anything else: another shop's id says nothing about that shop's staff.
    const existing = await db.handoff.findFirst({ where: { id: params.id, tenantId: caller.tenantId }, select: { id: true } });
    if (!existing) throw new AppError("NOT_FOUND", "This handoff was not found.");
    const staff = await db.staffUser.findFirst({
      where: { email: body.actor.trim().toLowerCase(), tenantId: caller.tenantId },
      select: { id: true, email: true },
    });
    if (!staff) throw new AppError("FORBIDDEN", "`actor` is not a staff member of this shop.");
    addLogContext({ staffId: staff.id });
    // Who acted through which token: the decision's own audit record names both, in the decision's commit.
    const { outcome, resumeFailed } = await resumeRun(
      await runtime(),
      { tenantId: caller.tenantId, staffId: staff.id, via: { tokenId: caller.tokenId, tokenName: caller.tokenName } },
      { handoffId: params.id, decision: body.decision, version: body.version, reason: body.reason, editedInput: body.editedInput },
    );
    const handoff = await apiHandoff(db, caller.tenantId, params.id);
    const run = handoff.runId
      ? await db.run.findFirst({
          where: { id: handoff.runId, tenantId: caller.tenantId },
          select: { id: true, phase: true, outcome: true },
        })
      : null;
    return { outcome: outcome.kind, resumeFailed, handoff, run };
  },
);

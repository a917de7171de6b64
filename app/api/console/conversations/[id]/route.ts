import { z } from "zod";
import { staffRoute } from "@/lib/actions/safe-action";
import { conversationDetail } from "@/lib/console/queries";

export const dynamic = "force-dynamic";

/** GET /api/console/conversations/:id — the conversation as the customer sees it, with owner and handoffs. */
export const GET = staffRoute({ name: "conversation", input: z.object({ id: z.string().min(1).max(64) }) }, ({ id }, ctx) =>
  conversationDetail(ctx.db, ctx.tenantId, id),
);

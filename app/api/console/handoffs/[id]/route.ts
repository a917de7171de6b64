import { z } from "zod";
import { staffRoute } from "@/lib/actions/safe-action";
import { handoffDetail } from "@/lib/console/queries";

export const dynamic = "force-dynamic";

/** GET /api/console/handoffs/:id — one handoff of the caller's shop (another shop's id → 404). */
export const GET = staffRoute({ name: "handoff", input: z.object({ id: z.string().min(1).max(64) }) }, ({ id }, ctx) =>
  handoffDetail(ctx.db, ctx.tenantId, id),
);

import { z } from "zod";
import { staffRoute } from "@/lib/actions/safe-action";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { runReview } from "@/lib/console/runs";

export const dynamic = "force-dynamic";

/** GET /api/console/runs/:id — a run as the model saw it, with its outcome, final reply and deciders (JSON export too). */
export const GET = staffRoute({ name: "run", input: z.object({ id: z.string().min(1).max(64) }), roles: SUPERVISOR_ROLES }, ({ id }, ctx) =>
  runReview(ctx.db, ctx, id),
);

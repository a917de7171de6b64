import { staffRoute } from "@/lib/actions/safe-action";
import { queueFilterSchema } from "@/lib/console/filters";
import { queueHandoffs } from "@/lib/console/queries";

export const dynamic = "force-dynamic";

/** GET /api/console/queue?status=&kind=&min=&max=&age=&claimed= — the reviewer queue (JSON). */
export const GET = staffRoute({ name: "queue", input: queueFilterSchema }, (filter, ctx) => queueHandoffs(ctx.db, ctx, filter));

import { z } from "zod";
import { httpStatusFor } from "@/lib/errors";
import { staffAction } from "@/lib/actions/safe-action";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { exportRuns, runCsvHeader, runCsvRow, runFilterSchema, runJsonLine } from "@/lib/console/runs";
import { log } from "@/lib/log";

export const dynamic = "force-dynamic";

const exportSchema = runFilterSchema.and(z.object({ format: z.enum(["csv", "jsonl"]) }));

// Authorisation and input go through the one operation chain (session → staff row → role → zod); the rows are
// then streamed page by page, so a large export never sits in memory.
const prepareExport = staffAction({ name: "exportRuns", input: exportSchema, roles: SUPERVISOR_ROLES }, async (input, ctx) => ({
  format: input.format,
  rows: await exportRuns(ctx.db, ctx, input),
}));

/**
 * GET /api/console/runs/export?format=csv|jsonl&q=&from=&to=&outcome= — the filtered runs (same filters as the
 * runs page), newest first, as a CSV or JSON Lines download. Supervisors and admins only.
 */
export async function GET(req: Request): Promise<Response> {
  const prepared = await prepareExport(Object.fromEntries(new URL(req.url).searchParams));
  if (!prepared.ok) {
    return Response.json(prepared, { status: httpStatusFor(prepared.error.code), headers: { "cache-control": "no-store" } });
  }
  const { format, rows } = prepared.data;
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (format === "csv") controller.enqueue(encoder.encode(runCsvHeader()));
    },
    async pull(controller) {
      try {
        const next = await rows.next();
        if (next.done) return controller.close();
        controller.enqueue(encoder.encode(format === "csv" ? runCsvRow(next.value) : runJsonLine(next.value)));
      } catch (err) {
        // Headers are gone: the download ends incomplete (the client sees a failed transfer), the cause is logged.
        log.error({ err }, "exporting runs failed while streaming");
        controller.error(err);
      }
    },
    async cancel() {
      await rows.return(undefined);
    },
  });
  const stamp = new Date().toISOString().slice(0, 16).replace(/[-:]/g, "").replace("T", "-");
  return new Response(body, {
    headers: {
      "content-type": format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8",
      "content-disposition": `attachment; filename="runs-${stamp}.${format}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}

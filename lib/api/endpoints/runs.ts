// /api/v1/runs/{id}: a run with its transcript, as the supervisor's inspector shows it (lib/runs/detail).
import type { z } from "zod";
import { addLogContext } from "@/lib/log";
import { runDetail } from "@/lib/runs/detail";
import { defineEndpoint } from "../endpoint";
import { apiRunDetailSchema, idParamsSchema } from "../schemas";

export const getRunEndpoint = defineEndpoint(
  {
    operationId: "getRun",
    method: "GET",
    path: "/runs/{id}",
    summary: "Get a run with its transcript",
    description:
      "A run exactly as the model saw it: the messages array of its last request, every transcript row, model call (stop reason, tokens, cost, latency, which part of the transcript it carried after which summary, which specialist made it), tool call (input, gate decision, status, result, review), gate decision with its policy version, effect and handoff.",
    scope: "runs:read",
    params: idParamsSchema,
    response: apiRunDetailSchema,
    errors: ["NOT_FOUND"],
  },
  async ({ params }, { db, caller }) => {
    addLogContext({ runId: params.id });
    // The token's shop is in the run's `where`: another shop's run is NOT_FOUND.
    const detail = await runDetail(db, params.id, caller.tenantId);
    // Typed as the schema says; the response is checked against it when encoded.
    return detail as unknown as z.output<typeof apiRunDetailSchema>;
  },
);

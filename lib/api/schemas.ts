// The JSON API's shapes, in zod: requests are validated with them, responses are encoded through them (so nothing
// that is not declared here leaves the server), and the OpenAPI document is generated from them (./openapi.ts).
// Named schemas become components of the document; dates travel as ISO 8601 strings (UTC).
import { z } from "zod";
import { handoffPayloadSchema } from "@/lib/handoffs/record";
import { decisionSchema } from "@/lib/runtime/resume";
import { API_ERROR_CODES } from "./errors";
import { inDateRange } from "./cursor";

/** Every named schema, in the order the document lists them. */
export const API_COMPONENTS: z.ZodType[] = [];

/** Registers a schema as a component of the OpenAPI document under `id`. */
function component<S extends z.ZodType>(id: string, description: string, schema: S): S {
  const named = schema.meta({ id, description });
  API_COMPONENTS.push(named);
  return named;
}

/** A date as the API sends it: an ISO 8601 string in UTC; a Date inside the server. */
export const isoDate = z.codec(z.iso.datetime({ offset: true }), z.date().refine(inDateRange, "a date between the years 1 and 9999"), {
  decode: (s) => new Date(s),
  encode: (d) => d.toISOString(),
});

const json = z.unknown();
const id = z.string().min(1).max(64);

// ── errors ───────────────────────────────────────────────────────────────────────────────────────────────────
export const apiErrorSchema = component(
  "Error",
  "Every refusal and failure: a stable code (the same codes as the console and the CLI), a message fit to show a person, and sometimes details.",
  z.object({
    error: z.object({
      code: z.enum(Object.keys(API_ERROR_CODES) as [keyof typeof API_ERROR_CODES, ...(keyof typeof API_ERROR_CODES)[]]),
      message: z.string(),
      details: z
        .record(z.string(), json)
        .optional()
        .describe("e.g. `currentVersion` with STALE_VERSION, `retryAfterSeconds` with RATE_LIMITED"),
    }),
  }),
);

// ── handoffs ─────────────────────────────────────────────────────────────────────────────────────────────────
export const HANDOFF_STATUSES = ["PENDING", "APPROVED", "DENIED", "EDITED", "EXPIRED", "RESOLVED", "CANCELLED"] as const;
export const HANDOFF_KINDS = ["APPROVAL", "ESCALATION"] as const;

const staffRef = z.object({ id: z.string(), name: z.string().nullable() });

export const apiHandoffSchema = component(
  "Handoff",
  "A handoff as reviewers see it: the self-contained record (who, what was asked, what the agent tried, why, the amount, the recommended action, and for an approval the exact pending call and the rule that asked) and its state.",
  z.object({
    id: z.string(),
    kind: z
      .enum(HANDOFF_KINDS)
      .describe("APPROVAL: a gated call waits for a decision. ESCALATION: a person must take the conversation over."),
    status: z.enum(HANDOFF_STATUSES),
    version: z.number().int().describe("Quote it when deciding: a decision binds to the version it was made on."),
    runId: z.string().nullable(),
    conversationId: z.string(),
    toolName: z.string().nullable().describe("approvals: the tool the agent wants to run"),
    proposedInput: z.record(z.string(), json).nullable().describe("approvals: the exact arguments the agent proposed"),
    editedInput: json.nullable().describe("the arguments a reviewer's edit replaced them with, if any"),
    amountCents: z.number().int().nullable(),
    amount: z.string().nullable().describe("the amount, formatted (e.g. `$250.00`)"),
    customer: handoffPayloadSchema.shape.customer,
    orderNumber: z.string().nullable(),
    summary: z.string().describe("what the customer asked"),
    tried: z.array(z.string()).describe("what the agent tried"),
    rootCause: z.string(),
    recommendedAction: z.string(),
    reason: z.string(),
    trigger: z.string(),
    rule: handoffPayloadSchema.shape.rule.unwrap().nullable().describe("approvals: the gate that asked, and the policy version behind it"),
    requiredApprovals: z.number().int().describe("2 when the amount needs two different reviewers"),
    approvals: z.array(z.object({ staffId: z.string(), name: z.string().nullable() })),
    expiresAt: isoDate.nullable(),
    createdAt: isoDate,
    claimedBy: z.object({ id: z.string(), name: z.string().nullable(), until: isoDate }).nullable(),
    decidedBy: staffRef.nullable(),
    decision: z.string().nullable(),
    decisionReason: z.string().nullable(),
    decidedAt: isoDate.nullable(),
    call: z
      .object({
        status: z
          .string()
          .describe(
            "PARKED while it waits; APPROVED, EXECUTING or RETRY_WAIT while it runs; SUCCEEDED, FAILED, DENIED (by a reviewer, or refused by the policy where it was to act after its approval: `result.escalated` then names the escalation) or EXPIRED once settled",
          ),
        result: json.nullable().describe("the tool_result the agent read, once the call has one"),
      })
      .nullable()
      .describe("approvals: what became of the call — a handoff's `status` is what people decided, this is what happened"),
  }),
);

const limit = z.coerce.number().int().min(1).max(100).default(50).describe("page size (1–100, default 50)");
const cursor = z.string().max(200).optional().describe("`nextCursor` of the previous page");
const since = isoDate.optional().describe("created at or after this time (ISO 8601)");
const until = isoDate.optional().describe("created before this time (ISO 8601)");

export const handoffListQuerySchema = z.strictObject({
  status: z.enum(HANDOFF_STATUSES).optional(),
  kind: z.enum(HANDOFF_KINDS).optional(),
  since,
  until,
  limit,
  cursor,
});

export const handoffListSchema = component(
  "HandoffList",
  "A page of handoffs, oldest first. Follow `nextCursor` until it is null.",
  z.object({ data: z.array(apiHandoffSchema), nextCursor: z.string().nullable() }),
);

export const idParamsSchema = z.strictObject({ id: id.describe("the object's id") });

/** The console's decision (lib/runtime/resume.ts), with the version required and the acting person named. */
export const decisionRequestSchema = component(
  "DecisionRequest",
  "A decision on an approval, as the console makes it: approve, deny (a reason is required) or edit (the new arguments, checked by the gates again). `actor` is the staff member of the shop the decision is made as; their authority, the two-approver rule and claims apply exactly as in the console.",
  z.strictObject({
    ...decisionSchema.omit({ handoffId: true }).shape,
    version: z.number().int().positive().describe("the handoff's version you decided on; another one is refused with STALE_VERSION"),
    actor: z.email().max(254).describe("the email of the staff member deciding (a member of the token's shop)"),
  }),
);

export const RUN_PHASES = ["RUNNING", "WAITING_FOR_APPROVAL", "WAITING_FOR_RETRY", "COMPLETED", "ESCALATED", "DEAD_LETTER"] as const;

export const decisionResultSchema = component(
  "DecisionResult",
  "What the decision did, and the handoff and run as they are after it (the run has already continued when `run.phase` is not WAITING_FOR_APPROVAL).",
  z.object({
    outcome: z
      .enum(["approved", "denied", "expired", "awaiting_second_approval"])
      .describe("`awaiting_second_approval`: recorded; a second, different reviewer must approve"),
    resumeFailed: z.boolean().describe("the decision stands but continuing the run failed here; a worker continues it"),
    handoff: apiHandoffSchema,
    run: z.object({ id: z.string(), phase: z.enum(RUN_PHASES), outcome: z.string().nullable() }).nullable(),
  }),
);

// ── runs ─────────────────────────────────────────────────────────────────────────────────────────────────────
export const apiRunDetailSchema = component(
  "RunDetail",
  "A run exactly as the model saw it: the messages array of its last request, the transcript rows, every model call, tool call, gate decision, effect and handoff.",
  z.object({
    run: z.object({
      id: z.string(),
      conversationId: z.string(),
      phase: z.enum(RUN_PHASES),
      outcome: z.string().nullable(),
      lastStopReason: z.string().nullable(),
      model: z.string(),
      policyVersion: z.number().int(),
      promptVersion: z.string(),
      toolsVersion: z.string(),
      turnsUsed: z.number().int(),
      maxTurns: z.number().int(),
      inputTokens: z.number().int(),
      outputTokens: z.number().int(),
      tokenBudget: z.number().int(),
      costMicros: z.number().int().describe("model cost in millionths of a dollar"),
      activeMs: z.number().int(),
      startedAt: isoDate,
      endedAt: isoDate.nullable(),
      updatedAt: isoDate,
    }),
    messages: z
      .array(z.object({ role: z.enum(["user", "assistant"]), content: json }))
      .describe(
        "the Messages API `messages` array of the run's last model request, as it was sent: after a summary cut, the rolling summary of the older messages first (a user message), then the transcript rows after it",
      ),
    transcript: z.array(
      z.object({
        seq: z.number().int(),
        role: z.enum(["user", "assistant"]),
        author: z.enum(["CUSTOMER", "AGENT", "HARNESS", "STAFF"]),
        content: json.describe("content blocks exactly as sent to / received from the model"),
        runId: z.string().nullable(),
      }),
    ),
    modelCalls: z.array(
      z.object({
        id: z.string(),
        turn: z.number().int(),
        model: z.string(),
        stopReason: z.string().nullable(),
        error: z.string().nullable(),
        inputTokens: z.number().int(),
        outputTokens: z.number().int(),
        cacheReadTokens: z.number().int(),
        cacheWriteTokens: z.number().int(),
        maxTokens: z.number().int(),
        latencyMs: z.number().int(),
        costMicros: z.number().int().describe("this call's cost in millionths of a dollar"),
        scope: z.string().nullable().describe("null: the run's own model; else the specialist (agent-as-tool) scope that called it"),
        requestTokens: z.number().int().nullable().describe("the request's size as counted before it was sent, when it was counted"),
        throughSeq: z.number().int().describe("the request carried every transcript message up to this seq"),
        contextFromSeq: z
          .number()
          .int()
          .nullable()
          .describe("the request carried the transcript verbatim from this seq on, after the summary `contextSummaryId` (null: all of it)"),
        contextSummaryId: z
          .string()
          .nullable()
          .describe("the rolling summary of the messages before `contextFromSeq` that the request carried first (null: none)"),
        response: json.nullable(),
        createdAt: isoDate,
      }),
    ),
    toolCalls: z.array(
      z.object({
        id: z.string(),
        toolUseId: z.string(),
        name: z.string(),
        input: json,
        effectiveInput: json.nullable(),
        status: z.string(),
        gateDecision: z.enum(["allow", "deny", "ask", "defer"]),
        gateReason: z.string(),
        attempts: z.number().int(),
        result: json.nullable(),
        review: json.nullable(),
        isError: z.boolean(),
        createdAt: isoDate,
        updatedAt: isoDate,
      }),
    ),
    gateDecisions: z.array(
      z.object({
        toolUseId: z.string(),
        toolCallId: z.string().nullable(),
        gate: z.string(),
        decision: z.enum(["allow", "deny", "ask", "defer"]),
        reason: z.string(),
        policyVersion: z.number().int(),
        actor: z.string(),
        createdAt: isoDate,
      }),
    ),
    effects: z.array(
      z.object({ id: z.string(), toolCallId: z.string(), toolName: z.string(), input: json, outcome: json, createdAt: isoDate }),
    ),
    handoffs: z.array(apiHandoffSchema),
  }),
);

// ── conversations ────────────────────────────────────────────────────────────────────────────────────────────
export const CONVERSATION_STATUSES = ["open", "escalated", "human", "closed"] as const;

export const conversationListQuerySchema = z.strictObject({
  status: z.enum(CONVERSATION_STATUSES).optional(),
  customer: z.email().optional().describe("only conversations of the customer with this email"),
  since,
  until,
  limit,
  cursor,
});

export const apiConversationSchema = component(
  "Conversation",
  "A conversation of the shop's widget: who (when known), its state, its latest run and how many handoffs wait.",
  z.object({
    id: z.string(),
    status: z.enum(CONVERSATION_STATUSES).describe("open: the agent answers; escalated: waiting for a person; human: a person owns it"),
    customer: z.object({ id: z.string(), email: z.string(), name: z.string() }).nullable(),
    verificationLevel: z.enum(["order_email", "order_email_postcode", "email_code", "shop_signed"]).nullable(),
    ownedBy: staffRef.nullable().describe("the person who took it over"),
    messageCount: z.number().int(),
    pendingHandoffs: z.number().int(),
    lastRun: z.object({ id: z.string(), phase: z.enum(RUN_PHASES), outcome: z.string().nullable(), startedAt: isoDate }).nullable(),
    createdAt: isoDate,
    updatedAt: isoDate,
  }),
);

export const conversationListSchema = component(
  "ConversationList",
  "A page of conversations, oldest first. Follow `nextCursor` until it is null.",
  z.object({ data: z.array(apiConversationSchema), nextCursor: z.string().nullable() }),
);

export const openApiDocumentSchema = z.record(z.string(), json).describe("an OpenAPI 3.1 document");

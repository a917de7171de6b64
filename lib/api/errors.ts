import { type AppErrorCode, httpStatusFor } from "@/lib/errors";

/**
 * What each error code means to an integrator. A Record over every AppErrorCode: a new code does not compile until it
 * is described here, so the reference page and the OpenAPI document never miss one. The HTTP status is the console's
 * (`httpStatusFor`).
 */
export const API_ERROR_CODES: Record<AppErrorCode, string> = {
  INVALID_INPUT:
    "the request is malformed: a parameter, the body or a cursor (the message says which); also a decision the handoff cannot take (e.g. deny without a reason)",
  UNAUTHENTICATED: "no token, or a token that is unknown or revoked",
  FORBIDDEN: "the token lacks the endpoint's scope, or `actor` is not a staff member of the token's shop",
  NOT_FOUND: "no such object in the token's shop (another shop's ids are not found either)",
  ALREADY_DECIDED: "the handoff was decided already; `details.status` and `details.decidedBy` say how and by whom",
  STALE_VERSION: "the handoff changed since the version quoted; `details.currentVersion` is the one to decide on after reading it again",
  OVER_AUTHORITY: "the amount is above the acting staff member's approval authority",
  SAME_APPROVER: "the same person cannot give both approvals a large amount needs",
  EXPIRED: "the approval expired before the decision (the customer was told nothing was done)",
  CLAIMED_BY_OTHER: "another reviewer holds the claim on this handoff in the console",
  CONVERSATION_OWNED: "a person owns the conversation",
  GATE_DENIED: "an edit the policy gates refuse (the message gives the gate's reason)",
  CONFLICT: "the request conflicts with the current state",
  RATE_LIMITED: "too many requests with this token; wait `Retry-After` seconds",
  TOO_LARGE: "the body is larger than 32 kB (reading stops there, whether or not a length was declared)",
  INTERNAL: "something failed on our side; nothing was changed by this request",
};

export const apiStatusFor = httpStatusFor;

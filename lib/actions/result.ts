import type { AppErrorCode } from "@/lib/errors";

/** What a caller may see of a failure: a stable code and a message written for people. */
export interface ActionError {
  code: AppErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Every server action and console route answers with this shape; nothing is thrown at the browser. */
export type ActionResult<T> = { ok: true; data: T } | { ok: false; error: ActionError };

const STATUS: Partial<Record<AppErrorCode, number>> = {
  INVALID_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  ALREADY_DECIDED: 409,
  STALE_VERSION: 409,
  CLAIMED_BY_OTHER: 409,
  CONVERSATION_OWNED: 409,
  SAME_APPROVER: 409,
  CONFLICT: 409,
  EXPIRED: 410,
  OVER_AUTHORITY: 403,
  GATE_DENIED: 422,
  RATE_LIMITED: 429,
  TOO_LARGE: 413,
  INTERNAL: 500,
};

/** The HTTP status a route handler answers an error code with. */
export function httpStatusFor(code: AppErrorCode): number {
  return STATUS[code] ?? 400;
}

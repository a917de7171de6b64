/**
 * The one error type of the product: a stable `code`, an internal message for logs, and a message fit
 * for the person on the other side. Nothing else should reach a browser or a CLI's stderr.
 */
export type AppErrorCode =
  | "INVALID_INPUT"
  | "NOT_FOUND"
  | "FORBIDDEN"
  | "UNAUTHENTICATED"
  | "ALREADY_DECIDED"
  | "STALE_VERSION"
  | "OVER_AUTHORITY"
  | "SAME_APPROVER"
  | "EXPIRED"
  | "CLAIMED_BY_OTHER"
  | "CONVERSATION_OWNED"
  | "GATE_DENIED"
  | "CONFLICT"
  | "RATE_LIMITED"
  | "TOO_LARGE"
  | "INTERNAL";

export class AppError extends Error {
  constructor(
    readonly code: AppErrorCode,
    readonly userMessage: string,
    readonly details?: Record<string, unknown>,
    internalMessage?: string,
  ) {
    super(internalMessage ?? userMessage);
    this.name = "AppError";
  }

  toJSON() {
    return { code: this.code, message: this.userMessage, ...(this.details ? { details: this.details } : {}) };
  }
}

/** Maps anything thrown to something safe to show: AppErrors keep their code, the rest become INTERNAL. */
export function toPublicError(err: unknown): { code: AppErrorCode; message: string; details?: Record<string, unknown> } {
  if (err instanceof AppError) return err.toJSON();
  return { code: "INTERNAL", message: "Something went wrong on our side. Nothing was changed by this request." };
}

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

/** The HTTP status an error code is answered with: by the console's routes and actions, and by the JSON API. */
export function httpStatusFor(code: AppErrorCode): number {
  return STATUS[code] ?? 400;
}

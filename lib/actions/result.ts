import type { AppErrorCode } from "@/lib/errors";

/** What a caller may see of a failure: a stable code and a message written for people. */
export interface ActionError {
  code: AppErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Every server action and console route answers with this shape; nothing is thrown at the browser. */
export type ActionResult<T> = { ok: true; data: T } | { ok: false; error: ActionError };

"use client";
import type { ActionError, ActionResult } from "@/lib/actions/result";

/** A refused or failed console request, with the server's code and its message for people. */
export class ConsoleError extends Error {
  constructor(
    readonly code: ActionError["code"] | "NETWORK",
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "ConsoleError";
  }
}

function toSignIn(): never {
  // The session ended (signed out elsewhere, user removed): go to sign-in and come back here after.
  window.location.assign(`/login?callbackUrl=${encodeURIComponent(window.location.pathname + window.location.search)}`);
  throw new ConsoleError("UNAUTHENTICATED", "Your session ended. Sign in again.");
}

/** Unwraps a server action's result: data, or a ConsoleError carrying the server's code and message. */
export function unwrap<T>(result: ActionResult<T>): T {
  if (result.ok) return result.data;
  if (result.error.code === "UNAUTHENTICATED") toSignIn();
  throw new ConsoleError(result.error.code, result.error.message, result.error.details);
}

/** GETs a console route handler (same ActionResult shape). */
export async function getJson<T>(url: string, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, { cache: "no-store", headers: { accept: "application/json" }, signal });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ConsoleError("NETWORK", "The console lost its connection to the server.");
  }
  let body: ActionResult<T>;
  try {
    body = (await res.json()) as ActionResult<T>;
  } catch {
    throw new ConsoleError("NETWORK", `The server answered ${res.status} without data.`);
  }
  return unwrap(body);
}

/** Calls a server action and maps a thrown transport failure (server down, deploy) to a ConsoleError. */
export async function callAction<T>(action: () => Promise<ActionResult<T>>): Promise<T> {
  let result: ActionResult<T>;
  try {
    result = await action();
  } catch {
    throw new ConsoleError("NETWORK", "The request did not reach the server. Nothing was changed by it; try again.");
  }
  return unwrap(result);
}

export type ModelErrorKind = "rate_limit" | "overloaded" | "server" | "timeout" | "connection" | "bad_request" | "auth" | "unknown";

export interface ModelErrorClass {
  retryable: boolean;
  kind: ModelErrorKind;
  status?: number;
}

/**
 * Says what an error thrown by `ModelClient.send` means for the runtime: whether another attempt can
 * succeed, and why it failed. Works on the SDK's error classes by their name, status and API error type
 * rather than `instanceof`, so a second copy of the SDK (ESM next to CJS) classifies the same.
 * Errors that arrive as an SSE `error` frame have no status; their `error.type` decides.
 */
export function classifyModelError(err: unknown): ModelErrorClass {
  const e = (err ?? {}) as { name?: unknown; status?: unknown; type?: unknown; error?: { error?: { type?: unknown } } };
  const name = typeof e.name === "string" ? e.name : "";
  const status = typeof e.status === "number" ? e.status : undefined;
  const type = typeof e.type === "string" ? e.type : typeof e.error?.error?.type === "string" ? e.error.error.type : undefined;
  const withStatus = (c: Omit<ModelErrorClass, "status">): ModelErrorClass => (status === undefined ? c : { ...c, status });

  // Our own abort is a decision, not a fault: never retry it.
  if (name === "APIUserAbortError") return { retryable: false, kind: "unknown" };
  if (name === "APIConnectionTimeoutError") return { retryable: true, kind: "timeout" };
  if (name === "APIConnectionError") return { retryable: true, kind: "connection" };

  if (status === 429 || type === "rate_limit_error") return withStatus({ retryable: true, kind: "rate_limit" });
  if (status === 529 || type === "overloaded_error") return withStatus({ retryable: true, kind: "overloaded" });
  if (status === 408 || type === "timeout_error") return withStatus({ retryable: true, kind: "timeout" });
  if (status === 401 || status === 403 || type === "authentication_error" || type === "permission_error") {
    return withStatus({ retryable: false, kind: "auth" });
  }
  if ((status !== undefined && status >= 500) || type === "api_error") return withStatus({ retryable: true, kind: "server" });
  if (status === 409) return withStatus({ retryable: true, kind: "server" });
  if (status !== undefined && status >= 400) return withStatus({ retryable: false, kind: "bad_request" });
  if (type === "invalid_request_error" || type === "not_found_error" || type === "request_too_large") {
    return { retryable: false, kind: "bad_request" };
  }
  return withStatus({ retryable: false, kind: "unknown" });
}

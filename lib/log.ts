import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { trace } from "@opentelemetry/api";
import pino, { type DestinationStream, type Logger } from "pino";
import { setting } from "@/lib/env";

/**
 * The product's one logger: JSON lines on stdout (pino), level from LOG_LEVEL. Every line carries the ids of
 * the work it belongs to — `requestId`, `tenantId`, `conversationId`, `runId`, … — taken from the current
 * log context (AsyncLocalStorage), so code deep in the runtime logs with the request's ids without passing
 * them around, and the trace id when a span is recording (lib/telemetry/tracing.ts).
 *
 * Never log credentials, tokens or what customers wrote: log ids, counts and error messages.
 */

export interface LogContext {
  requestId?: string;
  tenantId?: string;
  conversationId?: string;
  runId?: string;
  handoffId?: string;
  staffId?: string;
  /** The route or server action being served. */
  operation?: string;
}

const g = globalThis as typeof globalThis & {
  __supportLog?: Logger;
  __supportLogContext?: AsyncLocalStorage<LogContext>;
  __supportLogTarget?: { write: (line: string) => void };
};
// One store per process, shared by every module copy a bundler makes (instrumentation and routes are separate bundles).
const contextStore = (g.__supportLogContext ??= new AsyncLocalStorage<LogContext>());

/** Runs `fn` with `context` added to the current log context (nested calls inherit and extend it). */
export function withLogContext<T>(context: LogContext, fn: () => T): T {
  return contextStore.run({ ...contextStore.getStore(), ...definedOnly(context) }, fn);
}

/** Adds ids learned along the way (the tenant once the caller is known, the run once it exists). */
export function addLogContext(context: LogContext): void {
  const store = contextStore.getStore();
  if (store) Object.assign(store, definedOnly(context));
}

export function currentLogContext(): LogContext {
  return { ...contextStore.getStore() };
}

/** Runs `fn` with no log context: for work it schedules that belongs to no request (a timer's later line). */
export function outsideLogContext<T>(fn: () => T): T {
  return contextStore.exit(fn);
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/** The caller's `x-request-id` when it is a sane token (a proxy's id), otherwise a new one. */
export function requestIdFrom(headers: Pick<Headers, "get"> | null | undefined): string {
  const given = headers?.get("x-request-id")?.trim();
  return given && REQUEST_ID.test(given) ? given : randomUUID();
}

/** Errors keep their type, code, message and stack — never their other fields, which may hold request bodies. */
function serializeError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  const code = (err as { code?: unknown }).code;
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return {
    type: err.name,
    message: err.message,
    ...(typeof code === "string" || typeof code === "number" ? { code } : {}),
    ...(cause ? { cause } : {}),
    stack: err.stack,
  };
}

function configuredLevel(): string {
  try {
    return setting("LOG_LEVEL");
  } catch {
    return "info"; // the environment check reports the bad LOG_LEVEL itself; logging must still work
  }
}

/** A logger writing to `destination` (stdout by default): what `log` is, and what tests capture lines with. */
export function createLogger(destination?: DestinationStream, level = configuredLevel()): Logger {
  return pino(
    {
      level,
      base: { service: "support-agent" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: serializeError },
      // Belt and braces: fields that carry credentials are never written, whoever passes them.
      redact: {
        paths: [
          "token",
          "*.token",
          "authorization",
          "*.authorization",
          "password",
          "*.password",
          "apiKey",
          "*.apiKey",
          "secret",
          "*.secret",
        ],
        censor: "[redacted]",
      },
      mixin: () => {
        const span = trace.getActiveSpan();
        const traceId = span?.isRecording() ? span.spanContext().traceId : undefined;
        return traceId ? { ...contextStore.getStore(), traceId } : { ...contextStore.getStore() };
      },
    },
    destination,
  );
}

// Where the process's logger writes: stdout, unless the process says otherwise (the CLI keeps stdout for its answer).
const switchable: DestinationStream = { write: (line: string) => (g.__supportLogTarget ?? process.stdout).write(line) };

/** The process's logger (one per process, also across Next.js's module copies). */
export const log: Logger = (g.__supportLog ??= createLogger(switchable));

/**
 * Sends the process's log lines to `stream` from now on: `process.stderr` for a CLI whose stdout is its answer,
 * a capture in tests. Returns a function that restores the previous destination.
 */
export function sendLogsTo(stream: { write: (line: string) => unknown }): () => void {
  const previous = g.__supportLogTarget;
  g.__supportLogTarget = stream as { write: (line: string) => void };
  return () => {
    g.__supportLogTarget = previous;
  };
}

function definedOnly(context: LogContext): LogContext {
  return Object.fromEntries(Object.entries(context).filter(([, v]) => v !== undefined && v !== null && v !== ""));
}

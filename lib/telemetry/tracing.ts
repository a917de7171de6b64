import { type Attributes, type Span, SpanStatusCode, trace } from "@opentelemetry/api";
import { addLogContext, type LogContext, withLogContext } from "@/lib/log";

/**
 * Spans of the product's work through `@opentelemetry/api` alone. Until an SDK is registered
 * (lib/telemetry/sdk.ts, only when OTEL_EXPORTER_OTLP_ENDPOINT is set) the API's tracer is a no-op, so these
 * helpers cost next to nothing. Attribute names: `tenant.id`, `conversation.id`, `run.id`, `handoff.id`,
 * `tool.name`, … — the ids among them also go into the log context, so log lines inside a span carry them.
 */
export const TRACER_NAME = "support-agent";

const tracer = () => trace.getTracer(TRACER_NAME);

const LOG_KEYS: Record<string, keyof LogContext> = {
  "tenant.id": "tenantId",
  "conversation.id": "conversationId",
  "run.id": "runId",
  "handoff.id": "handoffId",
};

function logContextOf(attributes: Attributes): LogContext {
  const out: LogContext = {};
  for (const [attr, key] of Object.entries(LOG_KEYS)) {
    const value = attributes[attr];
    if (typeof value === "string") out[key] = value;
  }
  return out;
}

function definedAttributes(attributes: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes)) {
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") out[k] = v;
  }
  return out;
}

function fail(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * Runs `fn` inside a span named `name`: the span ends when `fn` settles; a throw is recorded as an exception
 * and an error status, then re-thrown unchanged. Undefined attributes are left out.
 */
export function withSpan<T>(name: string, attributes: Record<string, unknown>, fn: (span: Span) => Promise<T>): Promise<T> {
  const attrs = definedAttributes(attributes);
  return withLogContext(logContextOf(attrs), () =>
    tracer().startActiveSpan(name, { attributes: attrs }, async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        fail(span, err);
        throw err;
      } finally {
        span.end();
      }
    }),
  );
}

/** `withSpan` for synchronous work (the gates). */
export function withSyncSpan<T>(name: string, attributes: Record<string, unknown>, fn: (span: Span) => T): T {
  return tracer().startActiveSpan(name, { attributes: definedAttributes(attributes) }, (span) => {
    try {
      return fn(span);
    } catch (err) {
      fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Ids learned inside a span (a run's tenant once its state is loaded): on the span and in the log context. */
export function annotateSpan(attributes: Record<string, unknown>): void {
  const attrs = definedAttributes(attributes);
  trace.getActiveSpan()?.setAttributes(attrs);
  addLogContext(logContextOf(attrs));
}

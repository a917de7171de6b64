import { trace, context, propagation } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { env } from "@/lib/env";
import { log } from "@/lib/log";

/**
 * Starts the OpenTelemetry SDK for this process — only when OTEL_EXPORTER_OTLP_ENDPOINT is set (spans go there
 * over OTLP/HTTP, batched) or a test hands in an exporter. Otherwise nothing is started and the API's no-op
 * tracer stays in place. Called by instrumentation.ts (the web server) and scripts/worker.ts.
 */
export interface Tracing {
  provider: NodeTracerProvider;
  /** Flushes what is buffered and unregisters the SDK. */
  shutdown: () => Promise<void>;
}

const g = globalThis as typeof globalThis & { __supportTracing?: Tracing };

export function startTracing(opts: { exporter?: SpanExporter } = {}): Tracing | null {
  if (g.__supportTracing) return g.__supportTracing;
  const config = env();
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!opts.exporter && !endpoint) return null;
  const processor = opts.exporter
    ? new SimpleSpanProcessor(opts.exporter) // tests read spans as soon as they end
    : new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint!.replace(/\/+$/, "")}/v1/traces` }));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": config.OTEL_SERVICE_NAME }),
    spanProcessors: [processor],
  });
  provider.register();
  const tracing: Tracing = {
    provider,
    shutdown: async () => {
      g.__supportTracing = undefined;
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  g.__supportTracing = tracing;
  if (endpoint) log.info({ endpoint: new URL(endpoint).origin }, "tracing: exporting spans over OTLP/HTTP");
  return tracing;
}

/** The running SDK, if any. */
export function activeTracing(): Tracing | null {
  return g.__supportTracing ?? null;
}

import http from "node:http";
import type { AddressInfo } from "node:net";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { afterEach, describe, expect, it } from "vitest";
import type { GateInput } from "@/lib/gates/types";
import { activeTracing, startTracing } from "@/lib/telemetry/sdk";
import { withSpan } from "@/lib/telemetry/tracing";
import { createHarness } from "./runtime-harness";

// One file, run in order: the OpenTelemetry API's registration is global to the process.
afterEach(async () => {
  await activeTracing()?.shutdown();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

describe("tracing", () => {
  it("starts no SDK when nothing is configured: spans are the API's no-ops and the work still runs", async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    expect(startTracing()).toBeNull();
    expect(activeTracing()).toBeNull();
    const result = await withSpan("run.advance", { "run.id": "r1" }, async (span) => {
      expect(span.isRecording()).toBe(false);
      return 42;
    });
    expect(result).toBe(42);
    expect(trace.getTracer("support-agent").startSpan("probe").isRecording()).toBe(false);
  });

  it("a refund that waits for approval: spans for each advance, model call, gate evaluation, the decision and the effect", async () => {
    const exporter = new InMemorySpanExporter();
    expect(startTracing({ exporter })).not.toBeNull();
    const h = await createHarness();
    try {
      const parked = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
      expect(parked.phase).toBe("WAITING_FOR_APPROVAL");
      const handoffId = parked.handoffs[0]!.id;
      await h.decide(handoffId, "raj@acme.test", "approve");
      expect(await h.effects()).toHaveLength(1);

      const spans = exporter.getFinishedSpans();
      const named = (name: string) => spans.filter((s) => s.name === name);
      const attrs = (s: ReadableSpan) => s.attributes;
      const runId = parked.runId!;

      // The run advanced twice (the customer's message, then the resume after approval), both for this run and tenant.
      const advances = named("run.advance");
      expect(advances.length).toBeGreaterThanOrEqual(2);
      for (const a of advances)
        expect(attrs(a)).toMatchObject({ "run.id": runId, "tenant.id": h.acme.id, "conversation.id": parked.conversationId });

      // Model calls sit inside an advance and carry the model and its usage, never the conversation's text.
      const calls = named("model.call");
      expect(calls.length).toBeGreaterThanOrEqual(2);
      const advanceIds = new Set(advances.map((a) => a.spanContext().spanId));
      for (const c of calls) {
        expect(advanceIds.has(c.parentSpanContext?.spanId ?? "")).toBe(true);
        expect(attrs(c)).toMatchObject({ "gen_ai.system": "anthropic", "model.mode": "offline" });
        expect(attrs(c)["gen_ai.usage.output_tokens"]).toEqual(expect.any(Number));
        expect(JSON.stringify(attrs(c))).not.toContain("A-1002");
      }

      // The refund's gate evaluation: a span with the combined decision, and inside it a span for each gate (its
      // name and what it said: "none" when it had nothing to say); the refund policy asked for approval.
      const refundGates = named("gates.evaluate").filter((s) => attrs(s)["tool.name"] === "refund_order");
      expect(refundGates.length).toBeGreaterThanOrEqual(1);
      expect(attrs(refundGates[0]!)["gate.decision"]).toBe("ask");
      const gateSpans = named("gate.check").filter((g) => g.parentSpanContext?.spanId === refundGates[0]!.spanContext().spanId);
      const { defaultGates } = await import("@/lib/gates/evaluate");
      expect(gateSpans.map((g) => attrs(g)["gate.name"]).sort()).toEqual(defaultGates.map((g) => g.name).sort());
      expect(gateSpans.map((g) => attrs(g))).toContainEqual({ "gate.name": "refund_policy", "gate.decision": "ask" });
      expect(gateSpans.map((g) => attrs(g))).toContainEqual({ "gate.name": "allowlist", "gate.decision": "none" });

      const [decision] = named("handoff.decide");
      expect(attrs(decision!)).toMatchObject({
        "tenant.id": h.acme.id,
        "handoff.id": handoffId,
        "handoff.outcome": "approved",
        "run.id": runId,
      });
      expect(attrs(decision!)["staff.id"]).toBe(h.staff.raj.id);

      const [effect] = named("effect.perform");
      expect(attrs(effect!)).toMatchObject({ "tenant.id": h.acme.id, "run.id": runId, "tool.name": "refund_order" });
      // The effect ran in the advance that resumed the run after the decision.
      expect(advanceIds.has(effect!.parentSpanContext?.spanId ?? "")).toBe(true);
      expect(decision!.endTime[0] * 1e9 + decision!.endTime[1]).toBeLessThanOrEqual(effect!.startTime[0] * 1e9 + effect!.startTime[1]);

      for (const s of spans.filter((s) => s.instrumentationScope.name === "support-agent"))
        expect(s.status.code).not.toBe(SpanStatusCode.ERROR);
    } finally {
      await h.close();
    }
  });

  it("a gate that throws: its span records the error, and the call is denied (fail closed)", async () => {
    const exporter = new InMemorySpanExporter();
    startTracing({ exporter });
    const { evaluateGates } = await import("@/lib/gates/evaluate");
    const broken = {
      name: "broken",
      check: () => {
        throw new Error("bug in a gate");
      },
    };
    const quiet = { name: "quiet", check: () => null };
    const { verdict } = evaluateGates({ toolName: "refund_order", policy: { version: 7 } } as GateInput, [broken, quiet]);
    expect(verdict).toMatchObject({ gate: "broken", decision: "deny" });
    const gates = exporter.getFinishedSpans().filter((s) => s.name === "gate.check");
    expect(gates.map((g) => [g.attributes["gate.name"], g.status.code])).toEqual([
      ["broken", SpanStatusCode.ERROR],
      ["quiet", SpanStatusCode.UNSET],
    ]);
  });

  it("records a failure on its span and re-throws it unchanged", async () => {
    const exporter = new InMemorySpanExporter();
    startTracing({ exporter });
    const failure = new Error("provider unavailable");
    await expect(withSpan("effect.perform", { "tool.name": "refund_order" }, async () => Promise.reject(failure))).rejects.toBe(failure);
    const [span] = exporter.getFinishedSpans();
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "provider unavailable" });
    expect(span!.events.map((e) => e.name)).toEqual(["exception"]);
  });

  it("with OTEL_EXPORTER_OTLP_ENDPOINT set, spans are exported over OTLP/HTTP to <endpoint>/v1/traces", async () => {
    const received: Array<{ url: string; type: string; body: Buffer }> = [];
    const collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ url: req.url ?? "", type: String(req.headers["content-type"]), body: Buffer.concat(chunks) });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    try {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
      const tracing = startTracing();
      expect(tracing).not.toBeNull();
      await withSpan("run.advance", { "run.id": "run-exported-1", "tenant.id": "tenant-1" }, async () => undefined);
      await tracing!.provider.forceFlush();
      expect(received).toHaveLength(1);
      expect(received[0]!.url).toBe("/v1/traces");
      // The body is an OTLP export request: the span's name, its attributes and the service's name are in it.
      const body = received[0]!.body.toString("latin1");
      for (const text of ["run.advance", "run-exported-1", "tenant-1", "support-agent"]) expect(body).toContain(text);
    } finally {
      collector.close();
    }
  });
});

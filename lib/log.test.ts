import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createOperationFactory } from "@/lib/actions/core";
import { AppError } from "@/lib/errors";
import { widgetRoute } from "@/lib/widget/http";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { addLogContext, createLogger, log, requestIdFrom, sendLogsTo, withLogContext } from "./log";

/** Log lines written while `fn` runs, parsed. */
async function captured(fn: () => Promise<unknown> | unknown): Promise<Array<Record<string, unknown>>> {
  const lines: string[] = [];
  const restore = sendLogsTo({ write: (line: string) => lines.push(line) });
  try {
    await fn();
  } finally {
    restore();
  }
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("the logger", () => {
  it("writes JSON lines carrying the ids of the current context, nested contexts extending it", async () => {
    const lines = await captured(() =>
      withLogContext({ requestId: "req-00000001", tenantId: "t1" }, async () => {
        log.error("outer");
        await withLogContext({ runId: "r1" }, async () => {
          addLogContext({ conversationId: "c1" });
          await Promise.resolve();
          log.error({ tool: "refund_order" }, "inner");
        });
        log.error("outer again");
      }),
    );
    expect(lines.map((l) => l.msg)).toEqual(["outer", "inner", "outer again"]);
    expect(lines[0]).toMatchObject({ level: "error", service: "support-agent", requestId: "req-00000001", tenantId: "t1" });
    expect(lines[0]).not.toHaveProperty("runId");
    expect(lines[1]).toMatchObject({ requestId: "req-00000001", tenantId: "t1", runId: "r1", conversationId: "c1", tool: "refund_order" });
    expect(lines[2]).not.toHaveProperty("runId");
    expect(typeof lines[0]!.time).toBe("string");
  });

  it("serialises errors as type, code, message and stack — never their other fields — and redacts credentials", async () => {
    const err = Object.assign(new Error("provider said no"), { code: "E_PROVIDER", request: { body: "customer wrote: my card is 4242" } });
    const lines = await captured(() => log.error({ err, token: "conv-token-secret", headers: { authorization: "Bearer abc" } }, "failed"));
    const line = lines[0]!;
    expect(line.err).toMatchObject({ type: "Error", message: "provider said no", code: "E_PROVIDER" });
    expect(String((line.err as { stack: string }).stack)).toContain("provider said no");
    const text = JSON.stringify(line);
    expect(text).not.toContain("4242");
    expect(text).not.toContain("conv-token-secret");
    expect(text).not.toContain("Bearer abc");
  });

  it("honours the level", async () => {
    const lines: string[] = [];
    const quiet = createLogger({ write: (l: string) => lines.push(l) } as never, "warn");
    quiet.info("not written");
    quiet.warn("written");
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(["written"]);
  });

  it("takes a sane x-request-id and makes one up otherwise", () => {
    expect(requestIdFrom(new Headers({ "x-request-id": "edge-1234abcd" }))).toBe("edge-1234abcd");
    for (const bad of ["short", "has spaces in it", "x".repeat(200), 'quote"injected-0000', "<script>alert(1)</script>"]) {
      const id = requestIdFrom(new Headers({ "x-request-id": bad }));
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(requestIdFrom(null)).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("request ids in the shared request paths", () => {
  let db: TestDatabase;
  let rita: { staffId: string; tenantId: string };
  beforeAll(async () => {
    db = await createTestDatabase();
    const staff = await db.prisma.staffUser.findFirstOrThrow({ where: { email: "rita@acme.test" } });
    rita = { staffId: staff.id, tenantId: staff.tenantId };
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("a widget route answers with its request id and logs an unexpected failure under it, without the details", async () => {
    const route = widgetRoute("test route", async () => {
      throw new Error("database exploded");
    });
    let response: Response | undefined;
    const lines = await captured(async () => {
      response = await route(new Request("http://x/api", { headers: { "x-request-id": "proxy-req-42abc" } }), {});
    });
    expect(response!.status).toBe(500);
    expect(response!.headers.get("x-request-id")).toBe("proxy-req-42abc");
    expect(await response!.text()).not.toContain("exploded");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      requestId: "proxy-req-42abc",
      operation: "test route",
      route: "test route",
      err: { message: "database exploded" },
    });
  });

  it("a refusal (AppError) is answered, not logged; a fresh request id is generated when none is given", async () => {
    const route = widgetRoute("refusing route", async () => {
      throw new AppError("NOT_FOUND", "This shop was not found.");
    });
    let response: Response | undefined;
    const lines = await captured(async () => {
      response = await route(new Request("http://x/api"), {});
    });
    expect(response!.status).toBe(404);
    expect(response!.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines).toEqual([]);
  });

  it("the console operation chain logs a failure with the request id, operation, tenant, staff and input ids", async () => {
    const op = createOperationFactory({
      getClaims: async () => rita,
      getDb: async () => db.prisma,
      requestHeaders: async () => new Headers({ "x-request-id": "action-req-0001" }),
    })({ name: "explode", input: z.object({ handoffId: z.string() }) }, async () => {
      throw new Error("boom");
    });
    let result: unknown;
    const lines = await captured(async () => {
      result = await op({ handoffId: "h9" });
    });
    expect(result).toMatchObject({ ok: false, error: { code: "INTERNAL" } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      requestId: "action-req-0001",
      operation: "explode",
      tenantId: rita.tenantId,
      staffId: rita.staffId,
      handoffId: "h9",
      err: { message: "boom" },
    });
  });
});

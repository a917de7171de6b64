import net from "node:net";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { AppError } from "@/lib/errors";
import { createPrisma } from "./client";
import { connectivityFailureKind, databaseOutageInProgress, noteDatabaseFailure, noteDatabaseReachable, setDatabaseLogger } from "./outage";

// Real errors, as the drivers raise them: a refused connection (pg and Prisma), a connection the server
// terminated, and ordinary errors that must not be mistaken for an outage.
let tdb: TestDatabase;
let closedPort: number;
beforeAll(async () => {
  tdb = await createTestDatabase();
  closedPort = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
});
afterAll(async () => {
  await tdb?.drop();
});

const caught = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: unknown) => err,
  );

describe("connectivityFailureKind", () => {
  it("recognises a refused connection from pg and from Prisma (P1001 and a raw query's P2010)", async () => {
    const client = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${closedPort}/x` });
    expect(connectivityFailureKind(await caught(client.connect()))).toBe("ECONNREFUSED");
    const prisma = createPrisma(`postgresql://postgres@127.0.0.1:${closedPort}/x`, { max: 1 });
    try {
      const modelErr = await caught(prisma.tenant.count());
      expect((modelErr as { code?: string }).code).toBe("P1001");
      expect(connectivityFailureKind(modelErr)).toBe("ECONNREFUSED");
      const rawErr = await caught(prisma.$queryRaw`SELECT 1`);
      expect((rawErr as { code?: string }).code).toBe("P2010");
      expect(connectivityFailureKind(rawErr)).toBe("ECONNREFUSED");
    } finally {
      await prisma.$disconnect();
    }
  });

  it("recognises a connection the server terminated (57P01), and the dead client's next query", async () => {
    const client = new pg.Client({ connectionString: tdb.url });
    const events: unknown[] = [];
    client.on("error", (err) => events.push(err));
    await client.connect();
    const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    await tdb.prisma.$executeRawUnsafe(`SELECT pg_terminate_backend(${rows[0]!.pid})`);
    const next = await caught(client.query("SELECT 1"));
    const kinds = [...events, next].map(connectivityFailureKind);
    expect(kinds.every((k) => k !== null)).toBe(true);
    expect(kinds).toContain("57P01 server shutting down");
    await client.end().catch(() => {});
  });

  it("does not mistake ordinary failures for an outage", async () => {
    const duplicate = await caught(
      tdb.prisma.tenant.create({
        data: { slug: "acme", name: "Acme again", policyVersion: 1, widgetSecret: "x".repeat(32) },
      }),
    );
    expect((duplicate as { code?: string }).code).toBe("P2002");
    expect(connectivityFailureKind(duplicate)).toBeNull();
    expect(connectivityFailureKind(await caught(tdb.prisma.$queryRawUnsafe("SELECT * FROM no_such_table")))).toBeNull();
    expect(connectivityFailureKind(new AppError("NOT_FOUND", "This conversation was not found."))).toBeNull();
    expect(connectivityFailureKind(new Error("boom"))).toBeNull();
    expect(connectivityFailureKind("ECONNREFUSED")).toBeNull();
    expect(connectivityFailureKind(undefined)).toBeNull();
  });
});

describe("an outage is logged once, with a summary", () => {
  const lines: string[] = [];
  const fields: Array<Record<string, unknown> | undefined> = [];
  let restore: ReturnType<typeof setDatabaseLogger>;
  beforeEach(() => {
    lines.length = 0;
    fields.length = 0;
    restore = setDatabaseLogger((_level, line, f) => {
      lines.push(line);
      fields.push(f);
    });
  });
  afterEach(() => {
    noteDatabaseReachable();
    setDatabaseLogger(restore);
  });

  it("one line per kind of failure, none for repeats, one summary when a connection succeeds again", async () => {
    const refused = await caught(new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${closedPort}/x` }).connect());
    const lost = new Error("Connection terminated unexpectedly");
    expect(databaseOutageInProgress()).toBe(false);
    for (let i = 0; i < 40; i++) expect(noteDatabaseFailure(refused, "send message")).toBe(true);
    for (let i = 0; i < 15; i++) expect(noteDatabaseFailure(refused, "health")).toBe(true);
    expect(noteDatabaseFailure(lost, "worker")).toBe(true);
    expect(noteDatabaseFailure(new Error("a bug"), "worker")).toBe(false); // reported by the caller as before
    expect(databaseOutageInProgress()).toBe(true);
    expect(lines).toEqual([
      "database unavailable (ECONNREFUSED) — requests fail with 503 until it returns",
      "database unavailable (connection lost) — requests fail with 503 until it returns",
    ]);
    expect(fields.slice(0, 2)).toEqual([
      { kind: "ECONNREFUSED", firstSeenBy: "send message" },
      { kind: "connection lost", firstSeenBy: "worker" },
    ]);

    noteDatabaseReachable();
    noteDatabaseReachable(); // only the first connection after the outage reports it
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatch(/^database back after \d+\.\d s; 56 requests failed meanwhile \(send message 40, health 15, worker 1\)$/);
    expect(databaseOutageInProgress()).toBe(false);

    noteDatabaseFailure(refused, "health"); // a new outage is told again
    expect(lines[3]).toMatch(/database unavailable \(ECONNREFUSED\)/);
  });
});

import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_SCOPES } from "@/lib/api/scopes";
import { issueApiToken, listApiTokens, revokeApiToken, verifyApiToken } from "@/lib/api/tokens";
import { seedDemo } from "@/lib/setup/seed";
import { AppError } from "@/lib/errors";
import { createTestDatabase, type TestDatabase } from "../db";

let tdb: TestDatabase;
let acmeId: string;
let globexId: string;
beforeAll(async () => {
  tdb = await createTestDatabase();
  acmeId = (await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
  globexId = (await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "globex" } })).id;
});
afterAll(async () => {
  await tdb.drop();
});

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

describe("API token lifecycle", () => {
  it("is shown once: only its hash and first characters are stored, and it identifies its shop and scopes", async () => {
    const { token, apiToken } = await issueApiToken(tdb.prisma, {
      tenantId: acmeId,
      name: "  Helpdesk sync  ",
      scopes: ["handoffs:read", "runs:read", "handoffs:read"],
      issuedBy: { operator: true },
    });
    expect(token).toMatch(/^sa_live_[A-Za-z0-9_-]{43}$/);
    expect(apiToken).toMatchObject({ name: "Helpdesk sync", prefix: token.slice(0, 16), scopes: ["handoffs:read", "runs:read"] });
    expect(JSON.stringify(apiToken)).not.toContain(token);
    const row = await tdb.prisma.apiToken.findUniqueOrThrow({ where: { id: apiToken.id } });
    expect(row.tokenHash).toBe(sha256(token));
    // The token itself is nowhere in the database: not in the row, not in the audit trail.
    const { rows } = await (await import("@/lib/db/sql"))
      .poolOf(tdb.prisma)!
      .query(`SELECT count(*)::int AS n FROM "ApiToken" t, "AuditEvent" a WHERE row_to_json(t)::text LIKE $1 OR a.data::text LIKE $1`, [
        `%${token.slice(16)}%`,
      ]);
    expect(rows[0].n).toBe(0);
    const audit = await tdb.prisma.auditEvent.findFirstOrThrow({ where: { action: "api_token.issued", subject: apiToken.id } });
    expect(audit).toMatchObject({ actor: "operator", tenantId: acmeId });

    expect(await verifyApiToken(tdb.prisma, token)).toEqual({
      tokenId: apiToken.id,
      tokenName: "Helpdesk sync",
      tenantId: acmeId,
      tenantSlug: "acme",
      scopes: ["handoffs:read", "runs:read"],
    });
  });

  it("refuses a bad name or unknown scopes, and stores nothing", async () => {
    const before = await tdb.prisma.apiToken.count();
    for (const input of [
      { name: "", scopes: ["runs:read"] },
      { name: "x".repeat(81), scopes: ["runs:read"] },
      { name: "ok", scopes: [] },
      { name: "ok", scopes: ["admin:everything"] },
    ]) {
      expect((await refusal(issueApiToken(tdb.prisma, { tenantId: acmeId, ...input, issuedBy: { operator: true } }))).code).toBe(
        "INVALID_INPUT",
      );
    }
    expect(await tdb.prisma.apiToken.count()).toBe(before);
  });

  it("is refused once revoked, at once; revoking twice changes nothing; another shop's token is not found", async () => {
    const { token, apiToken } = await issueApiToken(tdb.prisma, {
      tenantId: acmeId,
      name: "to revoke",
      scopes: [...API_SCOPES],
      issuedBy: { operator: true },
    });
    await verifyApiToken(tdb.prisma, token);
    expect((await refusal(revokeApiToken(tdb.prisma, { id: apiToken.id, tenantId: globexId, revokedBy: { operator: true } }))).code).toBe(
      "NOT_FOUND",
    );
    expect((await tdb.prisma.apiToken.findUniqueOrThrow({ where: { id: apiToken.id } })).revokedAt).toBeNull();
    const revoked = await revokeApiToken(tdb.prisma, { id: apiToken.id, tenantId: acmeId, revokedBy: { operator: true } });
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    const again = await revokeApiToken(tdb.prisma, { id: apiToken.id, revokedBy: { operator: true } });
    expect(again.revokedAt).toEqual(revoked.revokedAt);
    expect(await tdb.prisma.auditEvent.count({ where: { action: "api_token.revoked", subject: apiToken.id } })).toBe(1);
    expect((await refusal(verifyApiToken(tdb.prisma, token))).code).toBe("UNAUTHENTICATED");
  });

  it("refuses unknown, malformed and look-alike tokens (same prefix, different secret)", async () => {
    const { token } = await issueApiToken(tdb.prisma, {
      tenantId: acmeId,
      name: "real",
      scopes: ["runs:read"],
      issuedBy: { operator: true },
    });
    const lookAlike = `${token.slice(0, 16)}${"A".repeat(token.length - 16)}`;
    for (const t of [lookAlike, `${token}x`, token.slice(0, -1), "", "sa_live_short", token.replace("sa_live_", "sa_test_"), null]) {
      expect((await refusal(verifyApiToken(tdb.prisma, t))).code).toBe("UNAUTHENTICATED");
    }
  });

  it("records when it was last used, at most once a minute", async () => {
    const { token, apiToken } = await issueApiToken(tdb.prisma, {
      tenantId: acmeId,
      name: "usage",
      scopes: ["runs:read"],
      issuedBy: { operator: true },
    });
    expect(apiToken.lastUsedAt).toBeNull();
    const t0 = new Date("2030-01-01T10:00:00.000Z");
    const lastUsed = async () => (await tdb.prisma.apiToken.findUniqueOrThrow({ where: { id: apiToken.id } })).lastUsedAt;
    await verifyApiToken(tdb.prisma, token, t0);
    expect(await lastUsed()).toEqual(t0);
    await verifyApiToken(tdb.prisma, token, new Date(t0.getTime() + 30_000));
    expect(await lastUsed()).toEqual(t0);
    const t1 = new Date(t0.getTime() + 61_000);
    await verifyApiToken(tdb.prisma, token, t1);
    expect(await lastUsed()).toEqual(t1);
  });

  it("lists a shop's tokens newest first, never the token or its hash, never another shop's", async () => {
    await issueApiToken(tdb.prisma, { tenantId: globexId, name: "globex only", scopes: ["runs:read"], issuedBy: { operator: true } });
    const listed = await listApiTokens(tdb.prisma, acmeId);
    expect(listed.length).toBeGreaterThan(2);
    expect(listed.map((t) => t.name)).not.toContain("globex only");
    const times = listed.map((t) => t.createdAt.getTime());
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const t of listed)
      expect(Object.keys(t).sort()).toEqual(["createdAt", "createdBy", "id", "lastUsedAt", "name", "prefix", "revokedAt", "scopes"]);
  });
});

describe("the demo seed", () => {
  it("stores ACME_API_TOKEN / GLOBEX_API_TOKEN hashed, one token per shop, when set", async () => {
    const empty = await createTestDatabase({ seed: false });
    const acme = `sa_live_${"a".repeat(30)}`;
    const saved = { a: process.env.ACME_API_TOKEN, g: process.env.GLOBEX_API_TOKEN };
    process.env.ACME_API_TOKEN = acme;
    delete process.env.GLOBEX_API_TOKEN;
    try {
      await seedDemo(empty.prisma);
      const tokens = await empty.prisma.apiToken.findMany({ include: { tenant: true } });
      expect(tokens).toHaveLength(1);
      expect(tokens[0]).toMatchObject({ tokenHash: sha256(acme), scopes: [...API_SCOPES], tenant: { slug: "acme" } });
      expect((await verifyApiToken(empty.prisma, acme)).tenantSlug).toBe("acme");
    } finally {
      process.env.ACME_API_TOKEN = saved.a;
      if (saved.g !== undefined) process.env.GLOBEX_API_TOKEN = saved.g;
      if (saved.a === undefined) delete process.env.ACME_API_TOKEN;
      await empty.drop();
    }
  });
});

// The operator CLI, a fresh process per command.
const root = path.resolve(__dirname, "../..");
function agent(...args: string[]): Promise<{ code: number; out: any; err: any }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/agent.ts", ...args],
      { cwd: root, env: { ...process.env, DATABASE_URL: tdb.url, SUPPORT_DB_NAME: "", SUPPORT_SKIP_SEED: "1" }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const parse = (s: string) => {
          try {
            return JSON.parse(s.slice(s.indexOf("{")));
          } catch {
            return s;
          }
        };
        resolve({
          code: error ? ((error as { code?: number }).code ?? 1) : 0,
          out: stdout ? parse(stdout) : null,
          err: stderr ? parse(stderr) : null,
        });
      },
    );
  });
}

describe("npm run agent -- token", () => {
  it("creates (printing the token once), lists and revokes; bad input gets a stable code", { timeout: 180_000 }, async () => {
    const created = await agent("token", "create", "--tenant", "acme", "--name", "cli token", "--scopes", "handoffs:read,handoffs:decide");
    expect(created.code).toBe(0);
    expect(created.out).toMatchObject({ tenant: "acme", name: "cli token", scopes: ["handoffs:read", "handoffs:decide"], revokedAt: null });
    expect(created.out.token).toMatch(/^sa_live_/);
    expect((await verifyApiToken(tdb.prisma, created.out.token)).scopes).toEqual(["handoffs:read", "handoffs:decide"]);

    const listed = await agent("token", "list", "--tenant", "acme");
    expect(listed.code).toBe(0);
    const row = listed.out.tokens.find((t: { id: string }) => t.id === created.out.id);
    expect(row).toMatchObject({ name: "cli token", prefix: created.out.token.slice(0, 16) });
    expect(JSON.stringify(listed.out)).not.toContain(created.out.token);

    const revoked = await agent("token", "revoke", created.out.id);
    expect(revoked.code).toBe(0);
    expect(revoked.out.revoked.revokedAt).toEqual(expect.any(String));
    expect((await refusal(verifyApiToken(tdb.prisma, created.out.token))).code).toBe("UNAUTHENTICATED");

    const [badScope, noShop, noToken] = await Promise.all([
      agent("token", "create", "--tenant", "acme", "--name", "x", "--scopes", "handoffs:write"),
      agent("token", "create", "--tenant", "nowhere", "--name", "x"),
      agent("token", "revoke", "no-such-token"),
    ]);
    expect(badScope).toMatchObject({ code: 1, err: { code: "INVALID_INPUT" } });
    expect(noShop).toMatchObject({ code: 1, err: { code: "NOT_FOUND" } });
    expect(noToken).toMatchObject({ code: 1, err: { code: "NOT_FOUND" } });
  });
});

import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { openConversation } from "@/lib/conversations/intake";
import { noteDraft } from "@/lib/live/hub";
import { createTestDatabase, type TestDatabase } from "../db";

// GET /api/console/events?conversationId=… answers with the conversation's events and the reply being written (its
// draft) — both only within the caller's shop, whatever conversation id another shop's staff name.
const session = vi.hoisted(() => ({ claims: null as null | { staffId: string; tenantId: string }, db: null as unknown }));
vi.mock("@/lib/auth/session", () => ({ getSessionClaims: async () => session.claims }));
vi.mock("@/lib/db/client", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/lib/db/client")>()),
  getPrisma: async () => session.db,
}));

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase();
  session.db = tdb.prisma;
});
afterAll(async () => {
  await tdb.drop();
});

it("staff of another shop do not see the draft reply of this shop's conversation", async () => {
  const acme = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const { conversation } = await openConversation(tdb.prisma, { tenantId: acme.id });
  // What the process hears while the agent writes Acme's reply (lib/live/drafts → hub).
  const secret = "Your refund of $460.00 to card ending 4242 for order A-1002";
  noteDraft({ t: acme.id, c: conversation.id, r: "run-acme-1", x: secret, n: 1 });

  const { GET } = await import("@/app/api/console/events/route");
  const url = `http://localhost/api/console/events?cursor=0&wait=0&conversationId=${conversation.id}`;
  // The shop's own staff see it …
  const raj = await tdb.prisma.staffUser.findFirstOrThrow({ where: { email: "raj@acme.test" } });
  session.claims = { staffId: raj.id, tenantId: raj.tenantId };
  const own = await (await GET(new Request(url))).json();
  expect(own.data.draft).toMatchObject({ runId: "run-acme-1", text: secret });

  const gus = await tdb.prisma.staffUser.findFirstOrThrow({ where: { email: { startsWith: "gus@" } } });
  expect(gus.tenantId).not.toBe(acme.id);
  session.claims = { staffId: gus.id, tenantId: gus.tenantId };
  const res = await GET(new Request(url));
  const body = await res.json();
  expect(res.status).toBe(200);
  expect(body.data.events).toEqual([]); // the events are scoped to the caller's shop …
  expect(JSON.stringify(body)).not.toContain(secret); // … the draft must be too
  expect(body.data.draft).toBeNull();
});

it("refuses a cursor past any event id the database can hold with 400, not a database error", async () => {
  const { GET } = await import("@/app/api/console/events/route");
  const raj = await tdb.prisma.staffUser.findFirstOrThrow({ where: { email: "raj@acme.test" } });
  session.claims = { staffId: raj.id, tenantId: raj.tenantId };
  const at = async (cursor: string) => GET(new Request(`http://localhost/api/console/events?cursor=${cursor}&wait=0`));
  const past = await at("9999999999999999999");
  expect(past.status).toBe(400);
  expect((await past.json()).error).toMatchObject({ code: "INVALID_INPUT" });
  expect((await at("9223372036854775807")).status).toBe(200);
});

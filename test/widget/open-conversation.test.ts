import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countStatements } from "@/bench/peers/scenario";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { signCustomerIdentity } from "@/lib/widget/identity";
import { startOrResumeConversation, widgetTenant } from "@/lib/widget/session";
import { createTestDatabase, type TestDatabase } from "../db";

// Opening a signed-in customer's chat (every new widget conversation of a shop that signs its customers in): the
// customer is read once, and the shop's policy at the version the request read with the shop — each statement here
// is paid for by every conversation a shop opens.
let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb.drop();
});

describe("startOrResumeConversation", () => {
  it("a signed-in customer's new chat: the customer read once, no second read of the shop's policy version", async () => {
    const db = tdb.prisma as unknown as PrismaClient;
    const tenant = await widgetTenant(db, "acme");
    const identity = await signCustomerIdentity(tenant.widgetSecret, "dana@example.com", 600, { shop: "acme" });
    const counter = countStatements(pg.Client);
    counter.sent = [];
    let session: Awaited<ReturnType<typeof startOrResumeConversation>>;
    try {
      session = await startOrResumeConversation(db, { tenant, token: null, identity });
    } finally {
      counter.restore();
    }
    expect(session.customer).toEqual({ name: expect.any(String) });
    expect(session.view.verified).toBe(true);
    expect(session.view.messages).toEqual([]); // the shop's sign-in note is context for the model, never shown
    const texts = counter.sent!.map((s) => s.text);
    expect(texts.filter((t) => /from "(public"\.")?Customer"/i.test(t))).toHaveLength(1);
    expect(texts.filter((t) => /select "policyVersion" from "Tenant"/i.test(t))).toHaveLength(0);
    // The shop-signed context message names the customer read once.
    const [context] = (
      await tdb.prisma.message.findMany({ where: { conversationId: session.view.conversationId }, select: { content: true } })
    ).map((m) => JSON.stringify(m.content));
    expect(context).toContain("dana@example.com");
  });

  it("an identity for an email the shop does not know is refused, and nothing is opened", async () => {
    const db = tdb.prisma as unknown as PrismaClient;
    const tenant = await widgetTenant(db, "acme");
    const before = await tdb.prisma.conversation.count();
    const identity = await signCustomerIdentity(tenant.widgetSecret, "nobody@example.com", 600, { shop: "acme" });
    await expect(startOrResumeConversation(db, { tenant, token: null, identity })).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect(await tdb.prisma.conversation.count()).toBe(before);
  });

  it("an identity whose email only case-folds to a customer's (a Kelvin sign for the k) opens nobody's account", async () => {
    // The shop signs ITS customer "a\u212Aim@example.org" — another address, an attacker's account at the shop. Full
    // Unicode lower-casing folds U+212A KELVIN SIGN into an ASCII "k", which named akim@example.org: the chat opened
    // verified as Alex Kim, at the strongest level there is.
    const db = tdb.prisma as unknown as PrismaClient;
    const tenant = await widgetTenant(db, "acme");
    const before = await tdb.prisma.conversation.count();
    const identity = await signCustomerIdentity(tenant.widgetSecret, "a\u212Aim@example.org", 600, { shop: "acme" });
    await expect(startOrResumeConversation(db, { tenant, token: null, identity })).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect(await tdb.prisma.conversation.count()).toBe(before);
  });
});

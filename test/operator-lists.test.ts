import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "@/lib/errors";
import { dispatchCli, parseCli } from "@/lib/operator/cli";
import { createHarness, type Harness, statementsSentDuring } from "./runtime-harness";
import { runColumns } from "./rows";

// The operator CLI's lists (`handoffs`, `effects`) come a page at a time, oldest first, as the JSON API's do: a shop
// with 100,000 handoffs asked for its handoffs used to get every one of them in one answer — read, presented and
// printed whole. Run in process (dispatchCli); test/cli.test.ts runs the same commands as fresh processes.
const COPIES = 130; // handoffs and effects copied from the real ones: more than two default pages

let h: Harness;
let parked: { handoffId: string; conversationId: string };
beforeAll(async () => {
  h = await createHarness();
  // The offline model's own answer to a damaged order: a refund over the automatic limit, parked for a person.
  const out = await h.say("My order A-1002 arrived damaged, please refund it.", { customer: "dana@example.com" });
  expect(out.phase).toBe("WAITING_FOR_APPROVAL");
  parked = { handoffId: out.handoffs[0]!.id, conversationId: out.conversationId };
  await h.decide(parked.handoffId, "raj@acme.test", "approve");
  // Copies of the decided handoff and of its effect, one a second apart, some of them with the same createdAt (the
  // keyset's id breaks the tie), inserted by SQL as the load test's queue phase does. All in the past (the originals
  // moved ten minutes back first): a list shows nothing dated after the moment it is read (lib/api/cursor).
  await h.db.$executeRaw`UPDATE "Handoff" SET "createdAt" = "createdAt" - interval '10 minutes' WHERE id = ${parked.handoffId}`;
  await h.db.$executeRaw`UPDATE "EffectLedger" SET "createdAt" = "createdAt" - interval '10 minutes' WHERE "tenantId" = ${h.acme.id}`;
  const copy = `'copy-' || lpad(n::text, 4, '0')`;
  const later = `t."createdAt" + (n / 2) * interval '1 second'`;
  // (The copies' toolCallId is null: a call has one handoff.)
  await copyRows("Handoff", `t.id = $1`, parked.handoffId, { id: copy, toolCallId: "NULL", createdAt: later });
  await copyRows("EffectLedger", `t."tenantId" = $1`, h.acme.id, {
    id: copy,
    idempotencyKey: `t."idempotencyKey" || ':copy-' || n`,
    createdAt: later,
  });
}, 60_000);
afterAll(async () => {
  await h.close();
});

/** COPIES copies of `table`'s rows matching `where` (as `t`; the n-th copy's columns replaced as `overrides` say). */
async function copyRows(table: string, where: string, param: string, overrides: Record<string, string>) {
  const columns = await h.db.$queryRawUnsafe<Array<{ column_name: string }>>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position`,
    table,
  );
  const names = columns.map((c) => c.column_name);
  await h.db.$executeRawUnsafe(
    `INSERT INTO "${table}" (${names.map((c) => `"${c}"`).join(", ")})
     SELECT ${names.map((c) => overrides[c] ?? `t."${c}"`).join(", ")} FROM "${table}" t, generate_series(1, ${COPIES}) n WHERE ${where}`,
    param,
  );
}

const cli = async (...argv: string[]) => (await dispatchCli(parseCli(argv), h.deps)) as Record<string, any>;

/** Every page of a list, following nextCursor: the ids in the order they came, and how many pages. */
async function everyPage(list: "handoffs" | "effects", ...options: string[]) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await cli(list, "--tenant", "acme", ...options, ...(cursor ? ["--cursor", cursor] : []));
    ids.push(...page[list].map((x: { id: string }) => x.id));
    cursor = page.nextCursor;
    pages += 1;
    if (pages > 1000) throw new Error("nextCursor never ran out");
  } while (cursor);
  return { ids, pages };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof AppError)) throw new Error(`expected an AppError, got ${String(err)}`);
  return err;
}

describe("npm run agent -- handoffs: a page at a time", () => {
  it("answers with the first 50, oldest first, and a cursor for the next page", async () => {
    const page = await cli("handoffs", "--tenant", "acme");
    expect(page.handoffs).toHaveLength(50);
    const oldest = await h.db.handoff.findMany({
      where: { tenantId: h.acme.id },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: 50,
    });
    expect(page.handoffs.map((x: { id: string }) => x.id)).toEqual(oldest.map((x) => x.id));
    expect(page.handoffs.map((x: { id: string }) => x.id)).toContain(parked.handoffId);
    expect(page.nextCursor).toEqual(expect.any(String));
  });

  it("visits every handoff exactly once, in (createdAt, id) order, whatever the page size", async () => {
    const all = await h.db.handoff.findMany({ where: { tenantId: h.acme.id }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
    expect(all).toHaveLength(COPIES + 1);
    for (const limit of ["1", "7", "50", "500"]) {
      const { ids, pages } = await everyPage("handoffs", "--limit", limit);
      expect(ids, `--limit ${limit}`).toEqual(all.map((x) => x.id));
      expect(pages, `--limit ${limit}`).toBe(Math.max(1, Math.ceil(all.length / Number(limit))));
    }
  }, 60_000);

  it("keeps its filters from page to page", async () => {
    const approved = await everyPage("handoffs", "--status", "approved", "--conversation", parked.conversationId, "--limit", "40");
    expect(approved.ids).toHaveLength(COPIES + 1);
    expect((await everyPage("handoffs", "--status", "pending")).ids).toEqual([]);
  });

  it("asks the database for one page, not for every handoff", async () => {
    const texts = await statementsSentDuring(() => cli("handoffs", "--tenant", "acme", "--limit", "10"));
    const handoffReads = texts.filter((t) => /^select [\s\S]* from "public"\."Handoff"/i.test(t));
    expect(handoffReads).toHaveLength(1);
    expect(handoffReads[0]).toMatch(/LIMIT \$\d+/i);
  });

  it("refuses a limit or a cursor it cannot use, saying what it takes", async () => {
    for (const limit of ["0", "501", "1.5", "ten", "", "0x10"]) {
      const err = await refusal(cli("handoffs", "--tenant", "acme", "--limit", limit));
      expect(err.code, `--limit ${limit}`).toBe("INVALID_INPUT");
      expect(err.message, `--limit ${limit}`).toBe("--limit must be a whole number from 1 to 500.");
    }
    // A value that looks like an option is the argument parser's to refuse.
    expect((await refusal(cli("handoffs", "--tenant", "acme", "--limit", "-1"))).code).toBe("INVALID_INPUT");
    const forged = Buffer.from("not a date|x", "utf8").toString("base64url");
    for (const cursor of ["nope", forged]) {
      const err = await refusal(cli("handoffs", "--tenant", "acme", "--cursor", cursor));
      expect(err.code, `--cursor ${cursor}`).toBe("INVALID_INPUT");
      expect(err.message, `--cursor ${cursor}`).toMatch(/^--cursor: not a cursor a page of this list gave out/);
    }
    const empty = await refusal(cli("handoffs", "--tenant", "acme", "--cursor", ""));
    expect(empty.message).toMatch(/^--cursor is empty/);
  });
});

describe("npm run agent -- effects: a page at a time", () => {
  it("answers with the first 50 and a cursor; the pages visit every effect of the shop once, oldest first", async () => {
    const first = await cli("effects", "--tenant", "acme");
    expect(first.effects).toHaveLength(50);
    expect(first.nextCursor).toEqual(expect.any(String));

    const all = await h.db.effectLedger.findMany({ where: { tenantId: h.acme.id }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
    expect(all).toHaveLength(COPIES + 1);
    const { ids, pages } = await everyPage("effects", "--limit", "60");
    expect(ids).toEqual(all.map((x) => x.id));
    expect(pages).toBe(3);
    expect((await cli("effects", "--tenant", "globex")).effects).toEqual([]);
  });

  it("with --run, only that run's effects, a page at a time; a run the shop does not have is not found", async () => {
    const original = await h.db.effectLedger.findFirstOrThrow({ where: { tenantId: h.acme.id, NOT: { id: { startsWith: "copy-" } } } });
    // A second run of the conversation, and two of the copied effects moved to it.
    const other = await h.db.run.create({
      data: {
        tenantId: h.acme.id,
        conversationId: parked.conversationId,
        phase: "COMPLETED",
        ...runColumns,
      },
    });
    const moved = ["copy-0001", "copy-0002"];
    await h.db.effectLedger.updateMany({ where: { id: { in: moved } }, data: { runId: other.id } });
    try {
      const mine = await cli("effects", "--tenant", "acme", "--run", other.id);
      expect(mine.effects.map((e: { id: string }) => e.id)).toEqual(moved);
      expect(mine.nextCursor).toBeNull();
      const { ids, pages } = await everyPage("effects", "--run", original.runId, "--limit", "100");
      expect(ids).toHaveLength(COPIES + 1 - moved.length);
      expect(ids).not.toContain("copy-0001");
      expect(pages).toBe(2);

      const elsewhere = await refusal(cli("effects", "--tenant", "globex", "--run", other.id));
      expect([elsewhere.code, elsewhere.message]).toEqual(["NOT_FOUND", `This shop has no run ${other.id}.`]);
      expect((await refusal(cli("effects", "--tenant", "acme", "--run", ""))).code).toBe("INVALID_INPUT");
    } finally {
      await h.db.effectLedger.updateMany({ where: { id: { in: moved } }, data: { runId: original.runId } });
      await h.db.run.delete({ where: { id: other.id } });
    }
  });

  it("refuses a bad limit or cursor, saying what it takes", async () => {
    const limit = await refusal(cli("effects", "--tenant", "acme", "--limit", "0"));
    expect([limit.code, limit.message]).toEqual(["INVALID_INPUT", "--limit must be a whole number from 1 to 500."]);
    const cursor = await refusal(cli("effects", "--tenant", "acme", "--cursor", "nope"));
    expect(cursor.code).toBe("INVALID_INPUT");
    expect(cursor.message).toMatch(/^--cursor: not a cursor/);
  });
});

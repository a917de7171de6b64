// Fault injection on a real database: a trigger refuses some writes to one table — as a row that a bug, or a
// constraint added later, left unwritable would be refused — and counts the refused tries in a sequence, which is not
// rolled back with the statement that failed.

interface RawClient {
  $executeRawUnsafe(query: string): Promise<unknown>;
  $queryRawUnsafe<T>(query: string): Promise<T>;
}

export interface RefusedWrites {
  /** How many writes were refused so far. */
  tries(): Promise<number>;
  /** Writes go through again. */
  stop(): Promise<void>;
}

/**
 * Refuses every `op` on `table` whose row matches `when` (a trigger WHEN condition on OLD or NEW; every row if left
 * out), raising `message`. `name` must be unique in the test's database.
 */
export async function refuseWrites(
  db: RawClient,
  o: { name: string; op: "INSERT" | "UPDATE"; table: string; when?: string; message: string },
): Promise<RefusedWrites> {
  const tries = `${o.name}_tries`;
  await db.$executeRawUnsafe(`CREATE SEQUENCE ${tries}`);
  await db.$executeRawUnsafe(
    `CREATE FUNCTION ${o.name}() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN PERFORM nextval('${tries}'); RAISE EXCEPTION '${o.message.replaceAll("'", "''")}'; END $$`,
  );
  await db.$executeRawUnsafe(
    `CREATE TRIGGER ${o.name} BEFORE ${o.op} ON "${o.table}" FOR EACH ROW ${o.when ? `WHEN (${o.when})` : ""} EXECUTE FUNCTION ${o.name}()`,
  );
  return {
    async tries() {
      const rows = await db.$queryRawUnsafe<Array<{ n: bigint }>>(
        `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM ${tries}`,
      );
      return Number(rows[0]!.n);
    },
    async stop() {
      await db.$executeRawUnsafe(`DROP TRIGGER ${o.name} ON "${o.table}"`);
    },
  };
}

/** A shop's audit records cannot be sealed (the sealer's UPDATE of them is refused). */
export const refuseSealingOf = (db: RawClient, tenantId: string) =>
  refuseWrites(db, {
    name: "refuse_seal",
    op: "UPDATE",
    table: "AuditEvent",
    when: `OLD."tenantId" = '${tenantId}'`,
    message: "this record cannot be sealed (for the test)",
  });

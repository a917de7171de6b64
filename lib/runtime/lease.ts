import type { PrismaClient, PrismaTx } from "@/lib/db/prisma-types";

/** Raised when a worker finds its lease on a run was taken over (it was too slow or presumed dead). */
export class LeaseLostError extends Error {
  constructor(readonly runId: string) {
    super(`lease on run ${runId} was lost`);
    this.name = "LeaseLostError";
  }
}

/**
 * Claims a run for one worker with a conditional update: only a RUNNING run whose lease is free or expired.
 * A crashed worker's lease simply expires and the next claim wins. Returns false when someone else holds it.
 */
export async function claimRun(db: PrismaClient, runId: string, owner: string, leaseMs: number): Promise<boolean> {
  const claimed = await db.$executeRaw`
    UPDATE "Run" SET "leaseOwner" = ${owner}, "leaseExpiresAt" = now() + make_interval(secs => ${leaseMs / 1000}::float8)
    WHERE id = ${runId} AND phase = 'RUNNING' AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now() OR "leaseOwner" = ${owner})`;
  return claimed === 1;
}

/**
 * Fencing: every write of an advancing worker first renews its lease inside the same transaction. If another
 * worker took the run over, the write is refused and nothing of it commits.
 */
export async function assertLease(tx: PrismaTx, runId: string, owner: string, leaseMs: number): Promise<void> {
  const renewed = await tx.$executeRaw`
    UPDATE "Run" SET "leaseExpiresAt" = now() + make_interval(secs => ${leaseMs / 1000}::float8)
    WHERE id = ${runId} AND "leaseOwner" = ${owner}`;
  if (renewed !== 1) throw new LeaseLostError(runId);
}

/** Lets go of a run (after parking, finishing or an error) so another worker may claim it at once. */
export async function releaseRun(db: PrismaTx, runId: string, owner: string): Promise<void> {
  await db.run.updateMany({ where: { id: runId, leaseOwner: owner }, data: { leaseOwner: null, leaseExpiresAt: null } });
}

// npm run db:seed — resolve the database, apply migrations, load the demo data (idempotent), print a
// JSON summary. Exits explicitly: the WASM engine leaves a timer armed.
import "./env-first"; // first: a bad variable stops here, with what to fix
import { createPrisma } from "@/lib/db/client";
import { applyMigrations } from "@/lib/db/migrate";
import { seedDemo } from "@/lib/setup/seed";
import { ensureDatabaseUrl, stopEmbeddedIfOwner } from "@/lib/db/server";

async function main(): Promise<void> {
  const url = await ensureDatabaseUrl();
  const { applied } = await applyMigrations(url);
  const prisma = createPrisma(url);
  try {
    const result = await seedDemo(prisma, { history: true });
    const counts = {
      tenants: await prisma.tenant.count(),
      customers: await prisma.customer.count(),
      orders: await prisma.order.count(),
      shipments: await prisma.shipment.count(),
      staff: await prisma.staffUser.count(),
      policies: await prisma.policyVersion.count(),
      runs: await prisma.run.count(),
    };
    console.log(
      JSON.stringify(
        { migrationsApplied: applied, seeded: result.seeded, created: result.tenants, historyRuns: result.historyRuns ?? 0, counts },
        null,
        2,
      ),
    );
  } finally {
    await prisma.$disconnect();
  }
}

let code = 0;
try {
  await main();
} catch (err) {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  code = 1;
} finally {
  await stopEmbeddedIfOwner().catch((err: unknown) => console.error("stopping embedded PostgreSQL:", err));
}
process.exit(code);

import { systemStatus } from "@/lib/system-status";

export const dynamic = "force-dynamic";

export default async function Home() {
  const status = await systemStatus();
  return (
    <main className="mx-auto max-w-2xl p-8">
      <h1 className="text-2xl font-semibold">Human-in-the-loop support agent</h1>
      <dl className="mt-6 grid grid-cols-[max-content_1fr] gap-x-6 gap-y-2 text-sm">
        <dt className="font-medium">Database</dt>
        <dd data-testid="status-database">{status.database}</dd>
        <dt className="font-medium">Model</dt>
        <dd data-testid="status-model">{status.model}</dd>
        <dt className="font-medium">Shops</dt>
        <dd>{status.tenants}</dd>
        <dt className="font-medium">Pending handoffs</dt>
        <dd>{status.pendingHandoffs}</dd>
      </dl>
    </main>
  );
}

import type { Metadata } from "next";
import Link from "next/link";
import { Button } from "@/components/ui/button";
import { Select } from "@/components/ui/field";
import { PhaseBadge } from "@/components/console/status";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { listRuns, RUN_PHASES } from "@/lib/console/queries";
import { formatDuration } from "@/lib/console/sla";
import { SupervisorsOnly } from "./supervisors-only";

export const metadata: Metadata = { title: "Runs · Support console" };
export const dynamic = "force-dynamic";

function dollarsFromMicros(micros: number) {
  return `$${(micros / 1_000_000).toFixed(4)}`;
}

/** Supervisors' list of recent runs, filterable by phase (a plain GET form: works without JavaScript). */
export default async function RunsPage({ searchParams }: { searchParams: Promise<{ phase?: string }> }) {
  const { phase: rawPhase } = await searchParams;
  const phase = RUN_PHASES.find((p) => p === rawPhase);
  const staff = await requireStaffPage(`/console/runs${phase ? `?phase=${phase}` : ""}`);
  if (!SUPERVISOR_ROLES.includes(staff.role)) return <SupervisorsOnly />;
  const runs = await listRuns(await getPrisma(), staff.tenantId, { phase });
  return (
    <div className="space-y-4">
      <h1 className="text-xl font-semibold">Runs</h1>
      <form method="get" className="flex items-end gap-2" aria-label="Filter runs">
        <div>
          <label htmlFor="phase" className="block text-sm font-medium">
            Phase
          </label>
          <Select id="phase" name="phase" defaultValue={phase ?? ""}>
            <option value="">All phases</option>
            {RUN_PHASES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </Select>
        </div>
        <Button type="submit">Filter</Button>
      </form>
      <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
        <table className="w-full text-sm">
          <caption className="sr-only">Recent runs, newest first</caption>
          <thead className="bg-slate-50 text-left text-xs text-slate-600">
            <tr>
              <th scope="col" className="px-3 py-2 font-medium">Started</th>
              <th scope="col" className="px-3 py-2 font-medium">Phase</th>
              <th scope="col" className="px-3 py-2 font-medium">Outcome</th>
              <th scope="col" className="px-3 py-2 font-medium">Turns</th>
              <th scope="col" className="px-3 py-2 font-medium">Tokens in / out</th>
              <th scope="col" className="px-3 py-2 font-medium">Cost</th>
              <th scope="col" className="px-3 py-2 font-medium">Active</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.id} className="border-t border-slate-100" data-testid="run-row">
                <td className="px-3 py-2">
                  <Link href={`/console/runs/${r.id}`} className="text-blue-700 underline">
                    {new Date(r.startedAt).toLocaleString()}
                  </Link>
                </td>
                <td className="px-3 py-2">
                  <PhaseBadge phase={r.phase} />
                </td>
                <td className="max-w-xs truncate px-3 py-2" title={r.outcome ?? ""}>
                  {r.outcome ?? r.lastStopReason ?? "—"}
                </td>
                <td className="px-3 py-2 tabular-nums">
                  {r.turnsUsed} / {r.maxTurns}
                </td>
                <td className="px-3 py-2 tabular-nums">
                  {r.inputTokens} / {r.outputTokens}
                </td>
                <td className="px-3 py-2 tabular-nums">{dollarsFromMicros(r.costMicros)}</td>
                <td className="px-3 py-2 tabular-nums">{formatDuration(r.activeMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {runs.length === 0 ? <p className="p-6 text-center text-sm text-slate-600">No runs.</p> : null}
      </div>
    </div>
  );
}

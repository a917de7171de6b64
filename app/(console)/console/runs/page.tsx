import type { Metadata } from "next";
import Link from "next/link";
import { Input, Select } from "@/components/ui/field";
import { Notice } from "@/components/ui/notice";
import { RunOutcomeBadge } from "@/components/console/run-outcome-badge";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { LocalTime } from "@/components/ui/local-time";
import { FINAL_RUN_OUTCOMES, RUN_OUTCOME_LABEL } from "@/lib/console/run-outcome";
import { ESCALATION_REASON_LABEL } from "@/lib/console/metrics-labels";
import { DRILL_KEYS, type RunFilter, type RunSearchPage, runFilterSchema, runFilterToParams, searchRuns } from "@/lib/console/runs";
import { AppError } from "@/lib/errors";
import { SupervisorsOnly } from "./supervisors-only";

export const metadata: Metadata = { title: "Runs · Support console" };
export const dynamic = "force-dynamic";

function dollarsFromMicros(micros: number) {
  return `$${(micros / 1_000_000).toFixed(4)}`;
}

const OUTCOME_CHOICES = [...FINAL_RUN_OUTCOMES, "waiting", "running"] as const;

/**
 * Supervisors' runs: search by order number, customer email or conversation id, a date range and the outcome,
 * filtered and paged on the server (a plain GET form: works without JavaScript); the same filters export as CSV
 * or JSON Lines.
 */
export default async function RunsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(await searchParams)) if (typeof v === "string") raw[k] = v;
  const parsed = runFilterSchema.safeParse(raw);
  const filter: RunFilter = parsed.success ? parsed.data : { outcome: "all" };
  const query = runFilterToParams(parsed.success ? filter : {});
  const staff = await requireStaffPage(`/console/runs${query.size ? `?${query}` : ""}`);
  if (!SUPERVISOR_ROLES.includes(staff.role)) return <SupervisorsOnly />;

  let error = parsed.success ? null : parsed.error.issues.map((i) => i.message).join(" ");
  let page: RunSearchPage = { runs: [], nextCursor: null, total: null, reviewerName: null };
  if (!error) {
    try {
      page = await searchRuns(await getPrisma(), staff, filter, { count: !filter.cursor });
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== "INVALID_INPUT") throw err;
      error = err.userMessage;
    }
  }
  const exportQuery = (format: "csv" | "jsonl") => {
    const p = runFilterToParams(parsed.success ? filter : {});
    p.set("format", format);
    return `/api/console/runs/export?${p}`;
  };
  const nextQuery = () => {
    const p = runFilterToParams(filter);
    p.set("cursor", page.nextCursor!);
    return `/console/runs?${p}`;
  };
  const searching = query.size > 0;
  const zone = filter.tz ?? "UTC";
  // Filters that came from a metrics link: named here, kept by the form, cleared with the rest.
  const drill: string[] = [];
  if (filter.reason) drill.push(`escalated because: ${ESCALATION_REASON_LABEL[filter.reason] ?? filter.reason}`);
  if (filter.decision || filter.reviewer)
    drill.push(
      `an approval ${filter.decision === "expired" ? "that expired" : filter.decision && filter.decision !== "decided" ? filter.decision : "decided by a person"}${filter.reviewer ? ` by ${page.reviewerName ?? "this reviewer"}` : ""}`,
    );
  if (filter.refund)
    drill.push(
      filter.refund === "auto"
        ? "a refund that ran automatically"
        : filter.refund === "approved"
          ? "a refund a person approved"
          : "a refund a person denied",
    );

  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <h1 className="text-xl font-semibold">Runs</h1>
        <p className="flex gap-3 text-sm">
          <a href={exportQuery("csv")} className="text-blue-700 underline" data-testid="export-csv">
            Export CSV
          </a>
          <a href={exportQuery("jsonl")} className="text-blue-700 underline" data-testid="export-jsonl">
            Export JSON lines
          </a>
        </p>
      </div>

      <form
        method="get"
        role="search"
        aria-label="Search runs"
        className="grid grid-cols-1 gap-3 rounded-lg border border-slate-200 bg-white p-3 sm:grid-cols-2 lg:grid-cols-[2fr_1fr_1fr_1fr_auto]"
      >
        <div>
          <label htmlFor="runs-q" className="block text-sm font-medium">
            Order number, customer email or conversation id
          </label>
          <Input id="runs-q" name="q" defaultValue={filter.q ?? ""} placeholder="A-1002, dana@example.com …" />
        </div>
        <div>
          <label htmlFor="runs-from" className="block text-sm font-medium">
            From ({zone})
          </label>
          <Input id="runs-from" name="from" type="date" defaultValue={filter.from ?? ""} />
        </div>
        <div>
          <label htmlFor="runs-to" className="block text-sm font-medium">
            To ({zone})
          </label>
          <Input id="runs-to" name="to" type="date" defaultValue={filter.to ?? ""} />
        </div>
        <div>
          <label htmlFor="runs-outcome" className="block text-sm font-medium">
            Outcome
          </label>
          <Select id="runs-outcome" name="outcome" defaultValue={filter.outcome}>
            <option value="all">Any outcome</option>
            {OUTCOME_CHOICES.map((o) => (
              <option key={o} value={o}>
                {RUN_OUTCOME_LABEL[o]}
              </option>
            ))}
          </Select>
        </div>
        {DRILL_KEYS.map((k) => (filter[k] ? <input key={k} type="hidden" name={k} value={filter[k]} /> : null))}
        <div className="flex items-end gap-2">
          <button type="submit" className="rounded-md bg-blue-700 px-3.5 py-2 text-sm font-medium text-white hover:bg-blue-800">
            Search
          </button>
          {searching ? (
            <Link href="/console/runs" className="px-2 py-2 text-sm text-blue-700 underline">
              Clear
            </Link>
          ) : null}
        </div>
      </form>

      {drill.length ? (
        <p className="text-sm text-slate-700" data-testid="runs-drill">
          Only runs with {drill.join(", and ")}.{" "}
          <Link href="/console/runs" className="text-blue-700 underline">
            Show all runs
          </Link>
        </p>
      ) : null}

      {error ? (
        <Notice tone="error" data-testid="runs-error">
          {error}
        </Notice>
      ) : null}

      <p role="status" className="text-sm text-slate-700" data-testid="runs-count" data-total={page.total ?? undefined}>
        {page.runs.length === 0
          ? searching
            ? "No runs match."
            : "No runs yet."
          : page.total !== null
            ? `${page.total} ${page.total === 1 ? "run" : "runs"}${page.total > page.runs.length ? ` (the newest ${page.runs.length} here)` : ""}, newest first`
            : `${page.runs.length}${page.nextCursor ? "+" : ""} ${page.runs.length === 1 ? "run" : "runs"} (older page), newest first`}
      </p>

      {page.runs.length ? (
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="w-full text-sm">
            <caption className="sr-only">Runs, newest first</caption>
            <thead className="bg-slate-50 text-left text-xs text-slate-600">
              <tr>
                {["Started", "Customer", "Orders", "Outcome", "Handoffs", "Cost"].map((h) => (
                  <th key={h} scope="col" className="px-3 py-2 font-medium">
                    {h}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {page.runs.map((r) => (
                <tr key={r.id} className="border-t border-slate-100 align-top" data-testid="run-row" data-run-id={r.id}>
                  <td className="px-3 py-2 whitespace-nowrap">
                    <Link href={`/console/runs/${r.id}`} className="text-blue-700 underline">
                      <LocalTime at={r.startedAt} />
                    </Link>
                  </td>
                  <td className="px-3 py-2" data-testid="run-customer">
                    {r.customer ? (
                      <>
                        {r.customer.name}
                        <br />
                        <span className="text-xs text-slate-600">{r.customer.email}</span>
                      </>
                    ) : (
                      <span className="text-slate-600">Anonymous visitor</span>
                    )}
                  </td>
                  <td className="px-3 py-2 font-mono text-xs" data-testid="run-orders">
                    {r.orders.length ? r.orders.join(", ") : "—"}
                  </td>
                  <td className="px-3 py-2" data-testid="run-outcome">
                    <RunOutcomeBadge outcome={r.outcome} />
                    <div className="mt-0.5 text-xs text-slate-600" title={r.endedBecause ?? ""}>
                      {r.phase.toLowerCase().replace(/_/g, " ")}
                      {r.stopReason ? ` · ${r.stopReason}` : ""}
                    </div>
                  </td>
                  <td className="px-3 py-2" data-testid="run-handoffs">
                    {r.handoffs.length ? (
                      <ul className="space-y-0.5">
                        {r.handoffs.map((h) => (
                          <li key={h.id}>
                            <Link href={`/console/handoffs/${h.id}`} className="text-blue-700 underline">
                              {h.kind === "APPROVAL" ? "Approval" : "Escalation"}
                            </Link>
                            : {h.summary}
                          </li>
                        ))}
                      </ul>
                    ) : (
                      "—"
                    )}
                  </td>
                  <td className="px-3 py-2 tabular-nums whitespace-nowrap">
                    {dollarsFromMicros(r.costMicros)}
                    <div className="text-xs text-slate-600">
                      {r.turnsUsed} turns · {r.inputTokens + r.outputTokens} tokens
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}

      <nav aria-label="Pages" className="flex gap-4 text-sm">
        {filter.cursor ? (
          <Link href={`/console/runs${query.size ? `?${query}` : ""}`} className="text-blue-700 underline">
            ← Newest runs
          </Link>
        ) : null}
        {page.nextCursor ? (
          <Link href={nextQuery()} className="text-blue-700 underline" data-testid="runs-older">
            Older runs →
          </Link>
        ) : null}
      </nav>
    </div>
  );
}

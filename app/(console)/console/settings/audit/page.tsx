import type { Metadata } from "next";
import Link from "next/link";
import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { type AuditFilters, listAuditRecords } from "@/lib/settings/audit";
import { AdminsOnly } from "../admins-only";

export const metadata: Metadata = { title: "Audit · Settings · Support console" };
export const dynamic = "force-dynamic";

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;
const control = "rounded-md border border-slate-300 px-2 py-1 text-sm";

function summary(data: unknown): string {
  const text = JSON.stringify(data ?? {});
  return text === "{}" ? "" : text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

/** The shop's audit trail, newest first, filtered by kind, actor and date; each record with its place in the chain. */
export default async function AuditPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const staff = await requireStaffPage("/console/settings/audit");
  const sp = await searchParams;
  const filters: AuditFilters = {
    kind: first(sp.kind),
    actor: first(sp.actor),
    from: first(sp.from),
    to: first(sp.to),
    after: first(sp.after),
  };
  let page: Awaited<ReturnType<typeof listAuditRecords>> | null = null;
  let refusal: string | null = null;
  try {
    page = await listAuditRecords(await getPrisma(), staff, filters);
  } catch (err) {
    if (err instanceof AppError && err.code === "FORBIDDEN") return <AdminsOnly />;
    if (err instanceof AppError && err.code === "INVALID_INPUT") refusal = err.message;
    else throw err;
  }
  const kinds = page ? [...new Set(page.kinds.map((a) => a.split(".")[0]!))].filter((k) => !page.kinds.includes(k)) : [];
  const nextHref = page?.next
    ? `?${new URLSearchParams(Object.entries({ ...filters, after: page.next }).filter(([, v]) => v) as [string, string][]).toString()}`
    : null;
  return (
    <div className="space-y-4">
      <div>
        <h1 className="text-xl font-semibold">Audit</h1>
        <p className="text-sm text-slate-600">
          Every decision, edit, effect, policy publication, token and secret change and takeover in {staff.tenantName}. Each record is
          sealed into the shop&apos;s hash chain seconds after it is written;{" "}
          <code>npm run --silent agent -- audit verify --tenant &lt;shop&gt;</code> names the first record changed or removed since.
        </p>
        {page ? (
          <p className="mt-1 text-sm text-slate-700" data-testid="audit-chain-head">
            {page.head.seq} records sealed
            {page.head.unsealed ? `, ${page.head.unsealed} being sealed` : ""}.
          </p>
        ) : null}
      </div>
      <form method="get" className="flex flex-wrap items-end gap-3" aria-label="Filter the audit trail">
        <label className="flex flex-col text-sm">
          <span className="font-medium text-slate-800">Kind</span>
          <select name="kind" defaultValue={filters.kind ?? ""} className={control}>
            <option value="">All</option>
            {kinds.length ? (
              <optgroup label="Kinds">
                {kinds.map((k) => (
                  <option key={k} value={k}>
                    {k}.*
                  </option>
                ))}
              </optgroup>
            ) : null}
            <optgroup label="Actions">
              {(page?.kinds ?? []).map((a) => (
                <option key={a} value={a}>
                  {a}
                </option>
              ))}
            </optgroup>
          </select>
        </label>
        <label className="flex flex-col text-sm">
          <span className="font-medium text-slate-800">Actor</span>
          <input name="actor" defaultValue={filters.actor ?? ""} placeholder="email, agent, operator…" className={control} />
        </label>
        <label className="flex flex-col text-sm">
          <span className="font-medium text-slate-800">From (UTC)</span>
          <input type="date" name="from" defaultValue={filters.from ?? ""} className={control} />
        </label>
        <label className="flex flex-col text-sm">
          <span className="font-medium text-slate-800">To (UTC)</span>
          <input type="date" name="to" defaultValue={filters.to ?? ""} className={control} />
        </label>
        <button type="submit" className="rounded-md bg-blue-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-blue-800">
          Filter
        </button>
        <Link href="/console/settings/audit" className="text-sm text-blue-700 underline">
          Clear
        </Link>
      </form>
      {refusal ? <Notice tone="error">{refusal}</Notice> : null}
      {page ? (
        <Section title={page.records.length ? `Records${filters.after ? " (older)" : ""}` : "No records match"}>
          {page.records.length ? (
            <div className="overflow-x-auto">
              <table className="w-full text-left text-sm">
                <thead className="text-xs uppercase text-slate-600">
                  <tr>
                    <th className="py-2 pr-3 font-medium">When</th>
                    <th className="py-2 pr-3 font-medium">Action</th>
                    <th className="py-2 pr-3 font-medium">Actor</th>
                    <th className="py-2 pr-3 font-medium">Subject</th>
                    <th className="py-2 pr-3 font-medium">Details</th>
                    <th className="py-2 font-medium">Chain</th>
                  </tr>
                </thead>
                <tbody className="divide-y divide-slate-100">
                  {page.records.map((r) => (
                    <tr key={r.id} data-testid="audit-record" aria-label={`${r.action} by ${r.actor}`}>
                      <td className="whitespace-nowrap py-2 pr-3">
                        <LocalTime at={r.createdAt} />
                      </td>
                      <td className="py-2 pr-3">
                        <code>{r.action}</code>
                      </td>
                      <td className="py-2 pr-3">{r.actor}</td>
                      <td className="break-all py-2 pr-3 font-mono text-xs">
                        {r.runId ? (
                          <Link href={`/console/runs/${encodeURIComponent(r.runId)}`} className="text-blue-700 underline">
                            {r.subject ?? r.runId}
                          </Link>
                        ) : (
                          (r.subject ?? "—")
                        )}
                      </td>
                      <td className="break-all py-2 pr-3 font-mono text-xs text-slate-700">{summary(r.data)}</td>
                      <td className="whitespace-nowrap py-2 font-mono text-xs">
                        {r.seq ? (
                          <span title={r.hash ?? undefined}>
                            #{r.seq} {r.hash?.slice(0, 10)}…
                          </span>
                        ) : (
                          <Badge tone="amber">sealing</Badge>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : (
            <p className="text-sm text-slate-600">Change the filters to see more.</p>
          )}
          {nextHref ? (
            <p className="mt-3">
              <Link href={nextHref} className="text-sm font-medium text-blue-700 underline">
                Older records →
              </Link>
            </p>
          ) : null}
        </Section>
      ) : null}
    </div>
  );
}

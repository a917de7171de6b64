import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { LinkedBarChart, OutcomesByDayChart, ReviewerSharesChart, SpendByDayChart } from "@/components/console/metrics-charts";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { requireStaffPage } from "@/lib/auth/session";
import { formatDay } from "@/lib/console/dates";
import { type MetricsPeriod, resolvePeriod, type ShopMetrics, shopMetrics } from "@/lib/console/metrics";
import { RUN_OUTCOME_LABEL } from "@/lib/console/run-outcome";
import { formatDuration } from "@/lib/console/sla";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { formatCents } from "@/lib/money";
import { SupervisorsOnly } from "../runs/supervisors-only";
import { PeriodForm } from "./period-form";

export const metadata: Metadata = { title: "Metrics · Support console" };
export const dynamic = "force-dynamic";

const pct = (part: number, whole: number) => (whole ? `${Math.round((part / whole) * 100)}%` : "—");
const usd = (micros: number) => `$${(micros / 1_000_000).toFixed(2)}`;
const runsWord = (n: number) => `${n} ${n === 1 ? "run" : "runs"}`;

/** A number that opens the runs behind it. */
function RunsLink({ href, runs, testId, children }: { href: string; runs: number; testId?: string; children?: ReactNode }) {
  return (
    <Link href={href} className="text-blue-700 underline tabular-nums" data-testid={testId} data-runs={runs}>
      {children ?? runs}
    </Link>
  );
}

function Tile({ title, testId, children, hint }: { title: string; testId: string; children: ReactNode; hint?: ReactNode }) {
  return (
    <div className="rounded-lg border border-slate-200 bg-white p-3" data-testid={testId}>
      <p className="text-xs font-medium text-slate-600">{title}</p>
      <p className="mt-1 text-2xl font-semibold">{children}</p>
      {hint ? <p className="mt-1 text-xs text-slate-600">{hint}</p> : null}
    </div>
  );
}

function Tiles({ m }: { m: ShopMetrics }) {
  const escalated = m.outcomes.find((o) => o.outcome === "escalated")!;
  return (
    <div className="grid grid-cols-2 gap-3 md:grid-cols-3 lg:grid-cols-6">
      <Tile
        title="Resolved without a person"
        testId="tile-resolved"
        hint={
          <>
            {pct(m.resolvedByAgent.runs, m.resolvedByAgent.finished)} of {m.resolvedByAgent.finished} finished runs;{" "}
            {m.conversations.resolvedWithoutPerson} of {m.conversations.all} conversations never needed one
          </>
        }
      >
        <RunsLink href={m.resolvedByAgent.href} runs={m.resolvedByAgent.runs} testId="metric-resolved" />
      </Tile>
      <Tile title="Escalated to a person" testId="tile-escalated" hint={`${pct(escalated.runs, m.runs.finished)} of finished runs`}>
        <RunsLink href={escalated.href} runs={escalated.runs} testId="metric-escalated" />
      </Tile>
      <Tile
        title="Handoff → decision"
        testId="tile-decision-time"
        hint={
          <>
            median · p90 over{" "}
            <RunsLink href={m.decisionTime.href} runs={m.decisionTime.runs} testId="metric-decided">
              {runsWord(m.decisionTime.runs)}
            </RunsLink>
          </>
        }
      >
        <span data-testid="metric-median">
          {m.decisionTime.medianSeconds === null ? "—" : formatDuration(m.decisionTime.medianSeconds * 1000)}
        </span>
        <span className="text-base font-normal text-slate-600">
          {" "}
          ·{" "}
          <span data-testid="metric-p90">
            {m.decisionTime.p90Seconds === null ? "—" : formatDuration(m.decisionTime.p90Seconds * 1000)}
          </span>
        </span>
      </Tile>
      <Tile title="Approvals expired" testId="tile-expired" hint="nobody decided in time">
        <RunsLink href={m.expiries.href} runs={m.expiries.runs} testId="metric-expired" />
      </Tile>
      <Tile title="Dead letters" testId="tile-dead-letters" hint="stopped after every retry">
        <RunsLink href={m.deadLetters.href} runs={m.deadLetters.runs} testId="metric-dead-letters" />
      </Tile>
      <Tile
        title="Model spend"
        testId="tile-spend"
        hint={
          <>
            {m.spend.modelCalls} model calls over{" "}
            <RunsLink href={m.spend.href} runs={m.runs.runs} testId="metric-runs">
              {runsWord(m.runs.runs)}
            </RunsLink>
          </>
        }
      >
        <span data-testid="metric-spend">{usd(m.spend.micros)}</span>
      </Tile>
    </div>
  );
}

function periodTitle(p: MetricsPeriod): string {
  // Calendar days named as days (no zone shift): the period is days in p.tz.
  const label = (day: string) => formatDay(`${day}T12:00:00Z`, "UTC");
  return `${p.preset ? `Last ${p.preset} days: ` : ""}${label(p.from)} – ${label(p.to)}`;
}

/** Supervisors' metrics over a period, every figure a link to the runs behind it. */
export default async function MetricsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(await searchParams)) if (typeof v === "string") raw[k] = v;
  const query = new URLSearchParams(raw);
  const staff = await requireStaffPage(`/console/metrics${query.size ? `?${query}` : ""}`);
  if (!SUPERVISOR_ROLES.includes(staff.role)) return <SupervisorsOnly />;

  let error: string | null = null;
  let period: MetricsPeriod;
  try {
    period = resolvePeriod(raw);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    error = err.userMessage;
    period = resolvePeriod({ tz: raw.tz && !error.startsWith("Time zone") ? raw.tz : undefined });
  }
  const m = await shopMetrics(await getPrisma(), staff, period);

  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <div>
          <h1 className="text-xl font-semibold">Metrics</h1>
          <p className="text-sm text-slate-700" data-testid="period-title">
            {periodTitle(period)} ({period.tz}) · runs started in the period · every number opens the runs behind it
          </p>
        </div>
      </div>
      <PeriodForm preset={period.preset} from={period.from} to={period.to} tz={raw.tz ?? null} />
      {error ? (
        <Notice tone="error" data-testid="metrics-error">
          {error} Showing the last 30 days instead.
        </Notice>
      ) : null}

      {m.runs.runs === 0 ? <Notice data-testid="metrics-empty">No runs started in this period.</Notice> : null}

      <Tiles m={m} />

      <Section title="Runs per day by outcome" id="outcomes">
        <OutcomesByDayChart daily={m.daily} />
        <ul className="mt-2 flex flex-wrap gap-x-5 gap-y-1 text-sm" data-testid="outcome-list">
          {m.outcomes
            .filter((o) => o.runs > 0)
            .map((o) => (
              <li key={o.outcome} data-outcome={o.outcome}>
                {RUN_OUTCOME_LABEL[o.outcome]}: <RunsLink href={o.href} runs={o.runs} testId={`outcome-${o.outcome}`} />
              </li>
            ))}
        </ul>
      </Section>

      <div className="grid gap-4 md:grid-cols-2">
        <Section title="Escalations by reason" id="escalations">
          {m.escalations.length === 0 ? (
            <p className="text-sm text-slate-600">No escalations in this period.</p>
          ) : (
            <>
              <LinkedBarChart
                label="Runs escalated, by reason"
                testId="chart-escalations"
                rows={m.escalations.map((e) => ({ name: e.label, value: e.runs, href: e.href, color: "#f59e0b" }))}
              />
              <table className="mt-2 w-full text-sm" data-testid="escalations">
                <tbody>
                  {m.escalations.map((e) => (
                    <tr key={e.reason} className="border-t border-slate-100" data-reason={e.reason}>
                      <td className="py-1">{e.label}</td>
                      <td className="py-1 text-right">
                        <RunsLink href={e.href} runs={e.runs} testId={`escalation-${e.reason}`} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </Section>

        <Section title="Money refunded" id="refunds">
          <LinkedBarChart
            label="Refunded, in dollars"
            unit="usd"
            testId="chart-refunds"
            rows={[
              { name: "Refunded automatically", value: m.refunds.auto.cents / 100, href: m.refunds.auto.href, color: "#047857" },
              { name: "Refunded after approval", value: m.refunds.approved.cents / 100, href: m.refunds.approved.href, color: "#34d399" },
              { name: "Denied by a reviewer", value: m.refunds.denied.cents / 100, href: m.refunds.denied.href, color: "#94a3b8" },
            ]}
          />
          <table className="mt-2 w-full text-sm" data-testid="refunds">
            <tbody>
              {(
                [
                  ["auto", "Refunded automatically"],
                  ["approved", "Refunded after a person approved"],
                  ["denied", "Asked for, denied by a person"],
                ] as const
              ).map(([k, label]) => (
                <tr key={k} className="border-t border-slate-100" data-refund={k}>
                  <td className="py-1">{label}</td>
                  <td className="py-1 text-right tabular-nums" data-testid={`refund-${k}-amount`}>
                    {formatCents(m.refunds[k].cents)}
                  </td>
                  <td className="py-1 text-right">
                    <RunsLink href={m.refunds[k].href} runs={m.refunds[k].runs} testId={`refund-${k}`}>
                      {runsWord(m.refunds[k].runs)}
                    </RunsLink>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      </div>

      <Section title="Decisions by reviewer" id="reviewers">
        {m.reviewers.length === 0 ? (
          <p className="text-sm text-slate-600">Nobody decided an approval in this period.</p>
        ) : (
          <>
            <ReviewerSharesChart
              rows={m.reviewers.map((r) => ({ name: r.name, approved: r.approved.runs, edited: r.edited.runs, denied: r.denied.runs }))}
            />
            <table className="mt-2 w-full text-sm" data-testid="reviewers">
              <thead className="text-left text-xs text-slate-600">
                <tr>
                  <th scope="col" className="py-1 font-medium">
                    Reviewer
                  </th>
                  {["Approved", "Edited", "Denied"].map((h) => (
                    <th key={h} scope="col" className="py-1 text-right font-medium">
                      {h}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {m.reviewers.map((r) => {
                  const all = r.approved.runs + r.edited.runs + r.denied.runs;
                  return (
                    <tr key={r.staffId} className="border-t border-slate-100" data-reviewer={r.name}>
                      <td className="py-1">{r.name}</td>
                      {(["approved", "edited", "denied"] as const).map((k) => (
                        <td key={k} className="py-1 text-right">
                          <RunsLink href={r[k].href} runs={r[k].runs} testId={`reviewer-${k}`} />{" "}
                          <span className="text-xs text-slate-600">({pct(r[k].runs, all)})</span>
                        </td>
                      ))}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </>
        )}
      </Section>

      <Section title="Model spend per day" id="spend">
        <SpendByDayChart daily={m.daily} />
      </Section>
    </div>
  );
}

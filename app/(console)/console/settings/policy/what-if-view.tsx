"use client";
import Link from "next/link";
import { Badge, type BadgeTone } from "@/components/ui/badge";
import { Button } from "@/components/ui/button";
import { LocalTime } from "@/components/ui/local-time";
import { formatCents } from "@/lib/money";
import { TOOL_LABELS } from "@/lib/settings/policy-fields";
import type { Outcome, Verdict, WhatIfReport } from "@/lib/settings/what-if";

const OUTCOME_WORDS: Record<Outcome, string> = {
  automatic: "Run automatically",
  approval: "Need a person's approval",
  refused: "Refused",
  deferred: "Wait to be judged again",
};

function verdictWords(v: Verdict): string {
  if (v.outcome === "approval") return v.approvers >= 2 ? "needs two approvers" : "needs approval";
  return { automatic: "runs automatically", refused: "refused", deferred: "waits" }[v.outcome] ?? v.outcome;
}
const TONE: Record<Outcome, BadgeTone> = { automatic: "green", approval: "amber", refused: "red", deferred: "gray" };

function change(before: number, after: number): string {
  const d = after - before;
  return d === 0 ? "no change" : d > 0 ? `+${d}` : String(d);
}

/** The what-if in words and figures: where the calls land now and with the draft, the moves, the changed calls. */
export function WhatIfView({ report, busy, onPage }: { report: WhatIfReport; busy: boolean; onPage: (page: number) => void }) {
  const outcomes = (["automatic", "approval", "refused", "deferred"] as const).filter(
    (o) => o !== "deferred" || report.before.deferred.count || report.after.deferred.count,
  );
  const { changed } = report;
  return (
    <div className="space-y-4" data-testid="what-if">
      <h3 className="text-base font-semibold">What the draft would have changed</h3>
      <p className="text-sm text-slate-700" data-testid="what-if-scope">
        {report.total === 0
          ? `No gated calls in the last ${report.days} days: nothing to compare yet.`
          : `${report.total} gated ${report.total === 1 ? "call" : "calls"} of the last ${report.days} days, judged again by the draft's rules (whether the customer was verified, and other checks of the conversation, stay as they were).`}
        {report.truncated ? " Only the newest calls were replayed." : null}
        {report.skipped
          ? ` ${report.skipped} older ${report.skipped === 1 ? "call was" : "calls were"} left out: recorded before the money rules judged totals.`
          : null}
      </p>

      {report.total ? (
        <div className="overflow-x-auto rounded-lg border border-slate-200">
          <table className="w-full text-sm" data-testid="what-if-summary">
            <caption className="sr-only">Calls by outcome, as decided and with the draft</caption>
            <thead className="bg-slate-50 text-left text-xs text-slate-600">
              <tr>
                <th scope="col" className="px-3 py-2 font-medium">
                  Calls that…
                </th>
                <th scope="col" className="px-3 py-2 font-medium">
                  As decided
                </th>
                <th scope="col" className="px-3 py-2 font-medium">
                  With the draft
                </th>
                <th scope="col" className="px-3 py-2 font-medium">
                  Change
                </th>
              </tr>
            </thead>
            <tbody>
              {outcomes.map((o) => (
                <tr key={o} className="border-t border-slate-100" data-testid={`what-if-${o}`}>
                  <th scope="row" className="px-3 py-2 text-left font-medium">
                    {OUTCOME_WORDS[o]}
                  </th>
                  <td className="px-3 py-2 tabular-nums" data-testid="before">
                    {report.before[o].count} · {formatCents(report.before[o].amountCents)}
                  </td>
                  <td className="px-3 py-2 tabular-nums" data-testid="after">
                    {report.after[o].count} · {formatCents(report.after[o].amountCents)}
                  </td>
                  <td className="px-3 py-2 tabular-nums">{change(report.before[o].count, report.after[o].count)}</td>
                </tr>
              ))}
              <tr className="border-t border-slate-100" data-testid="what-if-two-approvers">
                <th scope="row" className="px-3 py-2 text-left font-normal text-slate-700">
                  …of which need two approvers
                </th>
                <td className="px-3 py-2 tabular-nums" data-testid="before">
                  {report.twoApprovers.before.count} · {formatCents(report.twoApprovers.before.amountCents)}
                </td>
                <td className="px-3 py-2 tabular-nums" data-testid="after">
                  {report.twoApprovers.after.count} · {formatCents(report.twoApprovers.after.amountCents)}
                </td>
                <td className="px-3 py-2 tabular-nums">{change(report.twoApprovers.before.count, report.twoApprovers.after.count)}</td>
              </tr>
            </tbody>
          </table>
        </div>
      ) : null}

      {report.transitions.length ? (
        <div>
          <h4 className="text-sm font-semibold">What moves</h4>
          <ul className="ml-5 list-disc text-sm" data-testid="what-if-moves">
            {report.transitions.map((t) => (
              <li key={`${t.from.outcome}${t.from.approvers}${t.to.outcome}${t.to.approvers}`}>
                {t.count} {t.count === 1 ? "call" : "calls"} ({formatCents(t.amountCents)}): {verdictWords(t.from)} → {verdictWords(t.to)}
              </li>
            ))}
          </ul>
        </div>
      ) : report.total ? (
        <p className="text-sm text-slate-700" data-testid="what-if-no-change">
          No call would have been decided differently.
        </p>
      ) : null}

      {changed.total ? (
        <div>
          <h4 className="text-sm font-semibold">
            The calls that change ({changed.total}
            {changed.pages > 1 ? `, page ${changed.page} of ${changed.pages}` : ""})
          </h4>
          <div className="mt-2 overflow-x-auto rounded-lg border border-slate-200">
            <table className="w-full text-sm" data-testid="what-if-changed">
              <caption className="sr-only">Calls whose decision changes with the draft, newest first</caption>
              <thead className="bg-slate-50 text-left text-xs text-slate-600">
                <tr>
                  {["When", "Call", "As decided", "With the draft", "Why"].map((h) => (
                    <th key={h} scope="col" className="px-3 py-2 font-medium">
                      {h}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {changed.calls.map((c) => (
                  <tr key={c.toolCallId} className="border-t border-slate-100 align-top" data-testid="what-if-call">
                    <td className="px-3 py-2 whitespace-nowrap">
                      <LocalTime at={c.createdAt} />
                    </td>
                    <td className="px-3 py-2">
                      <Link href={`/console/runs/${c.runId}`} className="text-blue-700 underline">
                        {c.summary}
                      </Link>
                      <div className="text-xs text-slate-600">{TOOL_LABELS[c.toolName] ?? c.toolName}</div>
                    </td>
                    <td className="px-3 py-2 whitespace-nowrap">
                      <Badge tone={TONE[c.was.outcome]}>{verdictWords(c.was)}</Badge>
                      <div className="text-xs text-slate-600">v{c.policyVersion}</div>
                    </td>
                    <td className="px-3 py-2 whitespace-nowrap">
                      <Badge tone={TONE[c.now.outcome]}>{verdictWords(c.now)}</Badge>
                    </td>
                    <td className="px-3 py-2 text-slate-700">{c.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {changed.pages > 1 ? (
            <nav aria-label="Pages of changed calls" className="mt-2 flex gap-2">
              <Button size="sm" disabled={busy || changed.page <= 1} onClick={() => onPage(changed.page - 1)}>
                ← Newer
              </Button>
              <Button size="sm" disabled={busy || changed.page >= changed.pages} onClick={() => onPage(changed.page + 1)}>
                Older →
              </Button>
            </nav>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

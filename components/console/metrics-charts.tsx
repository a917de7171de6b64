"use client";
import { useRouter } from "next/navigation";
import { Bar, BarChart, CartesianGrid, Cell, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";

// The metrics page's charts (Recharts). Each chart repeats figures the page also lists as links, so nothing is only
// in a picture; clicking a bar opens the same runs as its link.

const OUTCOME_SERIES = [
  { key: "resolved_by_agent", label: "Resolved by the agent", color: "#047857" },
  { key: "approved", label: "Approved by a reviewer", color: "#34d399" },
  { key: "denied", label: "Denied by a reviewer", color: "#94a3b8" },
  { key: "escalated", label: "Escalated to a person", color: "#f59e0b" },
  { key: "expired", label: "Approval expired", color: "#fcd34d" },
  { key: "dead_letter", label: "Dead letter", color: "#dc2626" },
  { key: "waiting", label: "Waiting for approval", color: "#8b5cf6" },
  { key: "running", label: "Running", color: "#3b82f6" },
] as const;

const shortDay = (day: string) => {
  const [, m, d] = day.split("-");
  return `${Number(d)} ${["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][Number(m) - 1]}`;
};

/** Runs per day, stacked by what they came to. */
export function OutcomesByDayChart({ daily }: { daily: Array<Record<string, number | string>> }) {
  return (
    <figure aria-label="Runs per day by outcome" data-testid="chart-outcomes">
      <ResponsiveContainer width="100%" height={260}>
        <BarChart data={daily} margin={{ top: 8, right: 8, left: -16, bottom: 0 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="day" tickFormatter={shortDay} tick={{ fontSize: 11 }} minTickGap={12} />
          <YAxis allowDecimals={false} tick={{ fontSize: 11 }} />
          <Tooltip labelFormatter={(d) => shortDay(String(d))} />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {OUTCOME_SERIES.map((s) => (
            <Bar key={s.key} dataKey={s.key} name={s.label} stackId="runs" fill={s.color} isAnimationActive={false} />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}

/** Horizontal bars with a link each: escalation reasons, refund money. */
export function LinkedBarChart({
  label,
  rows,
  unit,
  testId,
}: {
  label: string;
  rows: Array<{ name: string; value: number; href: string; color?: string }>;
  unit?: "usd";
  testId: string;
}) {
  const router = useRouter();
  const format = (v: number) => (unit === "usd" ? `$${v.toLocaleString("en-US", { maximumFractionDigits: 2 })}` : String(v));
  return (
    <figure aria-label={label} data-testid={testId}>
      <ResponsiveContainer width="100%" height={Math.max(120, rows.length * 44)}>
        <BarChart data={rows} layout="vertical" margin={{ top: 4, right: 72, left: 8, bottom: 4 }}>
          <XAxis type="number" hide allowDecimals={unit === "usd"} />
          <YAxis type="category" dataKey="name" width={190} tick={{ fontSize: 12 }} />
          <Tooltip formatter={(v) => format(Number(v))} />
          <Bar
            dataKey="value"
            name={label}
            isAnimationActive={false}
            cursor="pointer"
            label={{ position: "right", fontSize: 12, formatter: (v: unknown) => format(Number(v)) }}
            onClick={(entry) => {
              const href = (entry as { payload?: { href?: string } }).payload?.href;
              if (href) router.push(href);
            }}
          >
            {rows.map((r) => (
              <Cell key={r.name} fill={r.color ?? "#1d4ed8"} />
            ))}
          </Bar>
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}

/** Each reviewer's decisions, stacked approve / edit / deny. */
export function ReviewerSharesChart({ rows }: { rows: Array<{ name: string; approved: number; edited: number; denied: number }> }) {
  return (
    <figure aria-label="Decisions by reviewer" data-testid="chart-reviewers">
      <ResponsiveContainer width="100%" height={Math.max(120, rows.length * 48)}>
        <BarChart data={rows} layout="vertical" margin={{ top: 4, right: 16, left: 8, bottom: 4 }}>
          <XAxis type="number" allowDecimals={false} tick={{ fontSize: 11 }} />
          <YAxis type="category" dataKey="name" width={90} tick={{ fontSize: 12 }} />
          <Tooltip />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Bar dataKey="approved" name="Approved" stackId="d" fill="#047857" isAnimationActive={false} />
          <Bar dataKey="edited" name="Edited, then approved" stackId="d" fill="#2563eb" isAnimationActive={false} />
          <Bar dataKey="denied" name="Denied" stackId="d" fill="#94a3b8" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}

/** Model spend per day (USD). */
export function SpendByDayChart({ daily }: { daily: Array<Record<string, number | string>> }) {
  return (
    <figure aria-label="Model spend per day" data-testid="chart-spend">
      <ResponsiveContainer width="100%" height={200}>
        <BarChart data={daily} margin={{ top: 8, right: 8, left: 0, bottom: 0 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="day" tickFormatter={shortDay} tick={{ fontSize: 11 }} minTickGap={12} />
          <YAxis tick={{ fontSize: 11 }} tickFormatter={(v) => `$${Number(v).toFixed(2)}`} />
          <Tooltip labelFormatter={(d) => shortDay(String(d))} formatter={(v) => `$${Number(v).toFixed(4)}`} />
          <Bar dataKey="spendUsd" name="Model spend" fill="#7c3aed" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}

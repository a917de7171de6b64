import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { Badge } from "@/components/ui/badge";
import { Section } from "@/components/ui/section";
import { JsonView } from "@/components/console/json-view";
import { type Block, ContentBlock } from "@/components/console/model-content";
import { SpecialistTree, type SpecialistView } from "@/components/console/specialist-tree";
import { RunOutcomeBadge } from "@/components/console/run-outcome-badge";
import { PhaseBadge } from "@/components/console/status";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { describeToolCall } from "@/lib/console/agent-tried";
import { LocalTime } from "@/components/ui/local-time";
import { decisionInWords } from "@/lib/console/decision-words";
import { carriedInWords, costInWords, requestSizeInWords } from "@/lib/console/model-call-words";
import { orNotFound } from "@/lib/console/page-data";
import { type RunReview, runReview } from "@/lib/console/runs";
import { formatDuration } from "@/lib/console/sla";
import { SupervisorsOnly } from "../supervisors-only";
import { RetryDeadLetter } from "./retry-dead-letter";

export const metadata: Metadata = { title: "Run · Support console" };
export const dynamic = "force-dynamic";

function Th({ children }: { children: ReactNode }) {
  return (
    <th scope="col" className="px-2 py-1.5 text-left text-xs font-medium text-slate-600">
      {children}
    </th>
  );
}
function Td({ children, mono }: { children: ReactNode; mono?: boolean }) {
  return <td className={`px-2 py-1.5 align-top text-sm ${mono ? "font-mono text-xs break-all" : ""}`}>{children}</td>;
}

function Summary({ d }: { d: RunReview }) {
  const r = d.run;
  const s = d.summary;
  const items: Array<[string, ReactNode]> = [
    ["Outcome", <RunOutcomeBadge key="o" outcome={s.outcome} />],
    [
      "Customer",
      s.customer ? (
        <span key="c" data-testid="run-customer">
          {s.customer.name} ({s.customer.email}){s.verified ? "" : " — not verified"}
        </span>
      ) : (
        "Anonymous visitor"
      ),
    ],
    ["Orders", s.orders.length ? s.orders.join(", ") : "—"],
    ["Phase", <PhaseBadge key="p" phase={r.phase} />],
    ["Ended because", r.outcome ?? "—"],
    ["Last stop_reason", r.lastStopReason ?? "—"],
    ["Model", r.model],
    ["Versions", `policy v${r.policyVersion} · prompt ${r.promptVersion} · tools ${r.toolsVersion}`],
    ["Turns", `${r.turnsUsed} of ${r.maxTurns}`],
    ["Tokens", `${r.inputTokens} in / ${r.outputTokens} out (budget ${r.tokenBudget})`],
    ["Cost", costInWords(r.costMicros)],
    ["Active time", formatDuration(r.activeMs)],
    ["Started", <LocalTime key="s" at={r.startedAt} />],
    ["Ended", r.endedAt ? <LocalTime key="e" at={r.endedAt} /> : "—"],
  ];
  return (
    <dl className="grid grid-cols-1 gap-x-6 gap-y-1 text-sm sm:grid-cols-2">
      {items.map(([k, v]) => (
        <div key={k} className="flex gap-2">
          <dt className="w-32 shrink-0 font-medium text-slate-600">{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A run exactly as the model saw it, with every tool call, gate decision, effect and model call around it. */
export default async function RunPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const staff = await requireStaffPage(`/console/runs/${encodeURIComponent(id)}`);
  if (!SUPERVISOR_ROLES.includes(staff.role)) return <SupervisorsOnly />;
  const d = await orNotFound(runReview(await getPrisma(), staff, id));
  const specialistTitles = new Map<string, string>();
  const collect = (nodes: SpecialistView[]) => {
    for (const n of nodes) {
      specialistTitles.set(n.scope, n.title);
      collect(n.children);
    }
  };
  collect(d.specialists as unknown as SpecialistView[]);
  return (
    <div className="space-y-4">
      <nav aria-label="Breadcrumb" className="text-sm">
        <Link href="/console/runs" className="text-blue-700 underline">
          Runs
        </Link>{" "}
        / <span aria-current="page">Run</span>
      </nav>
      <div className="flex flex-wrap items-start justify-between gap-2">
        <h1 className="text-xl font-semibold">
          Run <span className="font-mono text-base">{d.run.id}</span>
        </h1>
        <div className="flex gap-3 text-sm">
          <Link href={`/console/conversations/${d.run.conversationId}`} className="text-blue-700 underline">
            Conversation
          </Link>
          <a href={`/api/console/runs/${d.run.id}`} className="text-blue-700 underline">
            Export JSON
          </a>
        </div>
      </div>

      <Section title="Summary" id="summary">
        <Summary d={d} />
      </Section>

      {d.run.phase === "DEAD_LETTER" ? (
        <Section title="Dead letter" id="dead-letter">
          <RetryDeadLetter runId={d.run.id} />
        </Section>
      ) : null}

      <div className="grid gap-4 md:grid-cols-2">
        <Section title="What the customer was told last" id="final-reply">
          {d.finalReply ? (
            <figure data-testid="final-reply">
              <figcaption className="mb-1 text-xs text-slate-600">
                {d.finalReply.from === "agent"
                  ? "The agent"
                  : d.finalReply.from === "person"
                    ? `${d.finalReply.name ?? "A person"} (staff)`
                    : "A notice from the support system"}{" "}
                · <LocalTime at={d.finalReply.at} />
              </figcaption>
              <blockquote className="whitespace-pre-wrap break-words rounded-md bg-slate-50 p-3 text-sm">{d.finalReply.text}</blockquote>
            </figure>
          ) : (
            <p className="text-sm text-slate-600" data-testid="final-reply">
              Nothing from this run reached the customer.
            </p>
          )}
          {d.heldBackReply ? (
            <div className="mt-3 text-sm" data-testid="held-back-reply">
              <p className="font-medium text-amber-900">Not shown: a person owned the conversation when the agent answered.</p>
              <blockquote className="mt-1 whitespace-pre-wrap break-words rounded-md bg-amber-50 p-3">{d.heldBackReply}</blockquote>
            </div>
          ) : null}
        </Section>

        <Section title="Who decided" id="decisions">
          {d.decisions.length === 0 ? (
            <p className="text-sm text-slate-600">No handoffs: nobody had to decide anything.</p>
          ) : (
            <ul className="space-y-3 text-sm" data-testid="run-decisions">
              {d.decisions.map(({ handoff: h, facts }) => {
                const lines = decisionInWords(facts);
                return (
                  <li key={h.id} data-handoff-id={h.id}>
                    <p>
                      <Link href={`/console/handoffs/${h.id}`} className="font-medium text-blue-700 underline">
                        {h.kind === "APPROVAL"
                          ? `Approval: ${h.recommendedAction.replace(/^Approve:\s*/i, "").replace(/\.$/, "")}`
                          : `Escalation: ${h.reason}`}
                      </Link>
                    </p>
                    {lines.length ? (
                      lines.map((line) => <p key={line}>{line}</p>)
                    ) : (
                      <p className="text-slate-600">
                        Waiting for a person{h.claimedBy ? ` (${h.claimedBy.name ?? "a reviewer"} is on it)` : ""}.
                      </p>
                    )}
                  </li>
                );
              })}
            </ul>
          )}
        </Section>
      </div>

      <Section title={`Messages as the model saw them (${d.messages.length})`} id="messages">
        <ol className="space-y-3">
          {d.messages.map((m, i) => (
            <li key={i} className="rounded-md border border-slate-200 p-2">
              <p className="mb-1 text-xs font-semibold uppercase text-slate-600">{m.role}</p>
              <div className="space-y-2">
                {(typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Block[])).map((b, j) => (
                  <ContentBlock key={j} block={b} />
                ))}
              </div>
            </li>
          ))}
        </ol>
      </Section>

      {d.specialists.length ? (
        <Section title={`Specialists consulted (${d.specialists.length})`} id="specialists">
          <SpecialistTree nodes={d.specialists as unknown as SpecialistView[]} />
        </Section>
      ) : null}

      <Section title={`Tool calls (${d.toolCalls.length})`} id="tool-calls">
        <div className="overflow-x-auto">
          <table className="w-full">
            <thead>
              <tr>
                <Th>Tool</Th>
                <Th>What happened</Th>
                <Th>Status</Th>
                <Th>Gate</Th>
                <Th>Attempts</Th>
                <Th>Idempotency key</Th>
              </tr>
            </thead>
            <tbody>
              {d.toolCalls.map((c) => (
                <tr key={c.id} className="border-t border-slate-100">
                  <Td mono>
                    {c.name}
                    <br />
                    <span className="text-slate-500">{c.toolUseId}</span>
                  </Td>
                  <Td>
                    {describeToolCall(c).text}
                    {c.review ? (
                      <details className="mt-1">
                        <summary className="cursor-pointer text-xs text-slate-600">Review record</summary>
                        <JsonView value={c.review} label="Review" />
                      </details>
                    ) : null}
                  </Td>
                  <Td>
                    <Badge tone={c.isError ? "red" : "gray"}>{c.status}</Badge>
                  </Td>
                  <Td>
                    <strong>{c.gateDecision}</strong> — {c.gateReason}
                  </Td>
                  <Td>{c.attempts}</Td>
                  <Td mono>{c.idempotencyKey ?? "—"}</Td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>

      <Section title={`Gate decisions (${d.gateDecisions.length})`} id="gates">
        <div className="overflow-x-auto">
          <table className="w-full">
            <thead>
              <tr>
                <Th>Gate</Th>
                <Th>Decision</Th>
                <Th>Reason</Th>
                <Th>Policy</Th>
                <Th>Actor</Th>
              </tr>
            </thead>
            <tbody>
              {d.gateDecisions.map((g) => (
                <tr key={g.id} className="border-t border-slate-100">
                  <Td mono>{g.gate}</Td>
                  <Td>{g.decision}</Td>
                  <Td>{g.reason}</Td>
                  <Td>v{g.policyVersion}</Td>
                  <Td mono>{g.actor}</Td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>

      <Section title={`Effects (${d.effects.length})`} id="effects">
        {d.effects.length === 0 ? (
          <p className="text-sm text-slate-600">No side effects.</p>
        ) : (
          <ul className="space-y-2" data-testid="run-effects">
            {d.effects.map((e) => (
              <li key={e.id} className="rounded border border-slate-200 p-2 text-sm">
                <p>
                  <code className="font-mono">{e.toolName}</code> ·{" "}
                  <span className="font-mono text-xs text-slate-500">{e.idempotencyKey}</span>
                </p>
                <div className="mt-1 grid gap-2 md:grid-cols-2">
                  <JsonView value={e.input} label="Effect input" />
                  <JsonView value={e.outcome} label="Effect outcome" />
                </div>
              </li>
            ))}
          </ul>
        )}
      </Section>

      <Section title={`Model calls (${d.modelCalls.length})`} id="model-calls">
        <div className="overflow-x-auto">
          <table className="w-full">
            <thead>
              <tr>
                <Th>Turn</Th>
                <Th>Model of</Th>
                <Th>What it carried</Th>
                <Th>Size · cost</Th>
                <Th>stop_reason</Th>
                <Th>Tokens in / out</Th>
                <Th>Cache read / write</Th>
                <Th>max_tokens</Th>
                <Th>Latency</Th>
                <Th>Error</Th>
              </tr>
            </thead>
            <tbody>
              {d.modelCalls.map((m) => (
                <tr key={m.id} className="border-t border-slate-100" data-testid="model-call">
                  <Td>{m.turn}</Td>
                  <Td>{m.scope ? (specialistTitles.get(m.scope) ?? "a specialist") : "the agent"}</Td>
                  <Td>
                    <span data-testid="model-call-carried">{carriedInWords(m)}</span>
                  </Td>
                  <Td>{requestSizeInWords(m)}</Td>
                  <Td mono>{m.stopReason ?? "—"}</Td>
                  <Td>
                    {m.inputTokens} / {m.outputTokens}
                  </Td>
                  <Td>
                    {m.cacheReadTokens} / {m.cacheWriteTokens}
                  </Td>
                  <Td>{m.maxTokens}</Td>
                  <Td>{m.latencyMs} ms</Td>
                  <Td>{m.error ?? "—"}</Td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
    </div>
  );
}

import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { Badge } from "@/components/ui/badge";
import { Section } from "@/components/ui/section";
import { JsonView } from "@/components/console/json-view";
import { PhaseBadge } from "@/components/console/status";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { orNotFound } from "@/lib/console/page-data";
import { runInspection, type RunInspection } from "@/lib/console/queries";
import { formatDuration } from "@/lib/console/sla";
import { SupervisorsOnly } from "../supervisors-only";

export const metadata: Metadata = { title: "Run · Support console" };
export const dynamic = "force-dynamic";

type Block = { type: string; [k: string]: unknown };

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

/** One content block as the model saw it: text, a tool_use with its input, a tool_result with its body. */
function ContentBlock({ block }: { block: Block }) {
  if (block.type === "text") return <p className="whitespace-pre-wrap break-words text-sm">{String(block.text ?? "")}</p>;
  if (block.type === "tool_use") {
    return (
      <div className="space-y-1">
        <p className="text-xs">
          <Badge tone="violet">tool_use</Badge> <code className="font-mono">{String(block.name)}</code> <span className="font-mono text-slate-500">{String(block.id)}</span>
        </p>
        <JsonView value={block.input} label={`Input of ${String(block.name)}`} />
      </div>
    );
  }
  if (block.type === "tool_result") {
    const content = block.content;
    return (
      <div className="space-y-1">
        <p className="text-xs">
          <Badge tone={block.is_error ? "red" : "green"}>tool_result{block.is_error ? " · is_error" : ""}</Badge>{" "}
          <span className="font-mono text-slate-500">for {String(block.tool_use_id)}</span>
        </p>
        {typeof content === "string" ? (
          <pre className="overflow-x-auto whitespace-pre-wrap break-words rounded bg-slate-100 p-2 text-xs">{content}</pre>
        ) : (
          <JsonView value={content} label="Tool result content" />
        )}
      </div>
    );
  }
  return <JsonView value={block} label={`${block.type} block`} />;
}

function Summary({ d }: { d: RunInspection }) {
  const r = d.run;
  const items: Array<[string, ReactNode]> = [
    ["Phase", <PhaseBadge key="p" phase={r.phase} />],
    ["Outcome", r.outcome ?? "—"],
    ["Last stop_reason", r.lastStopReason ?? "—"],
    ["Model", r.model],
    ["Versions", `policy v${r.policyVersion} · prompt ${r.promptVersion} · tools ${r.toolsVersion}`],
    ["Turns", `${r.turnsUsed} of ${r.maxTurns}`],
    ["Tokens", `${r.inputTokens} in / ${r.outputTokens} out (budget ${r.tokenBudget})`],
    ["Cost", `$${(r.costMicros / 1_000_000).toFixed(4)}`],
    ["Active time", formatDuration(r.activeMs)],
    ["Started", new Date(r.startedAt).toLocaleString()],
    ["Ended", r.endedAt ? new Date(r.endedAt).toLocaleString() : "—"],
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
  const d = await orNotFound(runInspection(await getPrisma(), staff.tenantId, id));
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

      <Section title={`Tool calls (${d.toolCalls.length})`} id="tool-calls">
        <div className="overflow-x-auto">
          <table className="w-full">
            <thead>
              <tr>
                <Th>Tool</Th>
                <Th>Status</Th>
                <Th>Gate</Th>
                <Th>Attempts</Th>
                <Th>Idempotency key</Th>
                <Th>Review</Th>
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
                    <Badge tone={c.isError ? "red" : "gray"}>{c.status}</Badge>
                  </Td>
                  <Td>
                    <strong>{c.gateDecision}</strong> — {c.gateReason}
                  </Td>
                  <Td>{c.attempts}</Td>
                  <Td mono>{c.idempotencyKey ?? "—"}</Td>
                  <Td>{c.review ? <JsonView value={c.review} label="Review" /> : "—"}</Td>
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
                  <code className="font-mono">{e.toolName}</code> · <span className="font-mono text-xs text-slate-500">{e.idempotencyKey}</span>
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
                <tr key={m.id} className="border-t border-slate-100">
                  <Td>{m.turn}</Td>
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

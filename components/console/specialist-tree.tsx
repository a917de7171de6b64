import { Badge } from "@/components/ui/badge";
import { type Block, ContentBlock } from "./model-content";

/** A specialist as the run inspector shows it (lib/agents/tree, serialised). */
export interface SpecialistView {
  call: { id: string; toolUseId: string; name: string; status: string; input: unknown };
  title: string;
  scope: string;
  status: string;
  messages: unknown;
  calls: Array<{ id: string; toolUseId: string; name: string; status: string; gateReason: string | null; isError: boolean }>;
  modelCalls: Array<{ id: string; stopReason: string | null; inputTokens: number; outputTokens: number; error: string | null }>;
  children: SpecialistView[];
}

const STATUS_TONE: Record<string, "green" | "amber" | "red" | "gray"> = {
  done: "green",
  waiting: "amber",
  running: "gray",
  failed: "red",
};

/** The specialists the agent consulted, nested as they consulted each other, each with its own messages and calls. */
export function SpecialistTree({ nodes }: { nodes: SpecialistView[] }) {
  return (
    <ul className="space-y-3" data-testid="specialist-tree">
      {nodes.map((n) => (
        <li key={n.scope} className="rounded-md border border-violet-200 p-2" data-specialist-scope={n.scope}>
          <p className="text-sm">
            <strong>{n.title}</strong> <Badge tone={STATUS_TONE[n.status] ?? "gray"}>{n.status}</Badge>{" "}
            <span className="font-mono text-xs text-slate-500">asked by {n.call.toolUseId}</span>
          </p>
          <p className="mt-1 text-xs text-slate-600">
            Task: {String((n.call.input as { task?: string } | null)?.task ?? "")} · {n.modelCalls.length} model call
            {n.modelCalls.length === 1 ? "" : "s"} · {n.modelCalls.reduce((s, m) => s + m.inputTokens, 0)} /{" "}
            {n.modelCalls.reduce((s, m) => s + m.outputTokens, 0)} tokens
          </p>
          {n.calls.length ? (
            <ul className="mt-2 space-y-1 text-sm">
              {n.calls.map((c) => (
                <li key={c.id}>
                  <code className="font-mono">{c.name}</code>{" "}
                  <Badge tone={c.isError ? "red" : c.status === "PARKED" ? "amber" : "gray"}>{c.status}</Badge>{" "}
                  <span className="break-all font-mono text-xs text-slate-500">{c.toolUseId}</span>
                  {c.gateReason ? <span className="text-xs text-slate-600"> — {c.gateReason}</span> : null}
                </li>
              ))}
            </ul>
          ) : null}
          <details className="mt-2">
            <summary className="cursor-pointer text-xs text-slate-600">Messages as the specialist saw them</summary>
            <ol className="mt-1 space-y-2">
              {(Array.isArray(n.messages) ? (n.messages as Array<{ role: string; content: Block[] }>) : []).map((m, i) => (
                <li key={i} className="rounded border border-slate-200 p-2">
                  <p className="mb-1 text-xs font-semibold uppercase text-slate-600">{m.role}</p>
                  <div className="space-y-2">
                    {(Array.isArray(m.content) ? m.content : []).map((b, j) => (
                      <ContentBlock key={j} block={b} />
                    ))}
                  </div>
                </li>
              ))}
            </ol>
          </details>
          {n.children.length ? (
            <div className="mt-2 ml-4">
              <SpecialistTree nodes={n.children} />
            </div>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

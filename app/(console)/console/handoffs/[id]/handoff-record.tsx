import type { ReactNode } from "react";
import { Badge } from "@/components/ui/badge";
import { Section } from "@/components/ui/section";
import { ArgumentsDiff } from "@/components/console/arguments-diff";
import { JsonView } from "@/components/console/json-view";
import { addressInWords, requestInWords, type TriedTone } from "@/lib/console/agent-tried";
import { LocalTime } from "@/components/ui/local-time";
import { diffArguments } from "@/lib/console/diff";
import type { ConsoleHandoff, HandoffDetail } from "@/lib/console/queries";
import { formatCents } from "@/lib/money";

function Row({ term, children, testId }: { term: string; children: ReactNode; testId?: string }) {
  return (
    <div className="grid grid-cols-1 gap-1 border-t border-slate-100 py-2 first:border-t-0 sm:grid-cols-[12rem_1fr]">
      <dt className="text-sm font-medium text-slate-600">{term}</dt>
      <dd className="text-sm text-slate-900" data-testid={testId}>
        {children}
      </dd>
    </div>
  );
}

/** "1 of 2 approvals — needs a second, different reviewer" */
export function approvalsText(h: Pick<ConsoleHandoff, "approvals" | "requiredApprovals" | "status">): string {
  const n = h.approvals.length;
  const base = `${n} of ${h.requiredApprovals} approval${h.requiredApprovals === 1 ? "" : "s"}`;
  if (h.status === "PENDING" && n > 0 && n < h.requiredApprovals) return `${base} — needs a second, different reviewer`;
  return base;
}

const TONE_MARK: Record<TriedTone, { mark: string; label: string; className: string }> = {
  done: { mark: "✓", label: "done", className: "text-emerald-700" },
  waiting: { mark: "…", label: "waiting", className: "text-violet-700" },
  refused: { mark: "✕", label: "refused", className: "text-amber-800" },
  failed: { mark: "!", label: "failed", className: "text-red-700" },
  info: { mark: "·", label: "", className: "text-slate-500" },
};

const DECISION_WORDS: Record<string, string> = { ask: "asked for a person's approval", deny: "refused it", defer: "put it off" };

/** "refund_policy" → "Refund policy" */
function gateName(gate: string): string {
  const words = gate.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A call's argument as a reviewer reads it. */
function argumentInWords(key: string, value: unknown): string {
  if (typeof value === "number" && key.endsWith("_cents")) return formatCents(value);
  if (key === "address") return addressInWords(value);
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

const ARGUMENT_LABEL: Record<string, string> = {
  order_number: "Order",
  amount_cents: "Amount",
  reason: "Reason on the call",
  address: "New address",
};

/**
 * The self-contained handoff record (DESIGN §2.3), in words: who, what the customer wrote (apart from what the
 * agent wrote), what the agent tried, the rules that stopped it and their policy version, the amount, the
 * recommended action and — for approvals — the exact pending call. `h` is the version the reviewer opened (what a
 * decision binds to); `detail` the latest context around it. The raw records sit behind "Technical details".
 */
export function HandoffRecord({ h, detail }: { h: ConsoleHandoff; detail: HandoffDetail }) {
  const pendingInput = (h.editedInput ?? h.proposedInput ?? {}) as Record<string, unknown>;
  // The rule that asked for this approval is shown with the call; here, the other rules that stopped the agent.
  const stoppedBy = detail.stoppedBy.filter((g) => !(h.rule && g.gate === h.rule.gate && g.reason === h.rule.reason));
  return (
    <div className="space-y-4">
      <Section title="The request" id="record">
        <dl>
          <Row term="Customer" testId="record-customer">
            {h.customer ? (
              <>
                {h.customer.name} <span className="text-slate-600">({h.customer.email})</span>
              </>
            ) : (
              "Not identified"
            )}
            {h.orderNumber ? <span className="text-slate-600"> · order {h.orderNumber}</span> : null}{" "}
            <Badge tone={detail.conversation.verified ? "green" : "amber"}>
              {detail.conversation.verified ? "verified" : "not verified"}
            </Badge>
          </Row>
          <Row term="The customer wrote" testId="record-customer-words">
            {detail.customerWords.length ? (
              <div className="space-y-1">
                {detail.customerWords.map((t, i) => (
                  <blockquote key={i} className="border-l-2 border-slate-300 pl-2 whitespace-pre-wrap break-words">
                    {t}
                  </blockquote>
                ))}
              </div>
            ) : (
              <span className="text-slate-600">Nothing in this run (see the conversation).</span>
            )}
          </Row>
          {detail.specialist ? (
            <Row term="Asked by" testId="record-specialist">
              the {detail.specialist.toLowerCase()}, consulted by the agent
            </Row>
          ) : null}
          <Row term="Summary in the record" testId="record-asked">
            {h.summary}
          </Row>
          {detail.agentReason ? (
            <Row term="The agent's stated reason" testId="record-agent-reason">
              {detail.agentReason}
            </Row>
          ) : null}
          <Row term="What the agent tried" testId="record-tried">
            {detail.tried.length || detail.agentAccount.length ? (
              <>
                <ol className="space-y-0.5">
                  {detail.tried.map((t, i) => (
                    <li key={i} className="flex gap-2" data-tone={t.tone}>
                      <span aria-hidden="true" className={`w-3 shrink-0 font-bold ${TONE_MARK[t.tone].className}`}>
                        {TONE_MARK[t.tone].mark}
                      </span>
                      <span>
                        {t.text}
                        {TONE_MARK[t.tone].label ? <span className="sr-only"> ({TONE_MARK[t.tone].label})</span> : null}
                      </span>
                    </li>
                  ))}
                </ol>
                {detail.agentAccount.length ? (
                  <p className="mt-1 text-slate-700">In the agent's words: {detail.agentAccount.join(" ")}</p>
                ) : null}
              </>
            ) : (
              "Nothing yet"
            )}
          </Row>
          {stoppedBy.length ? (
            <Row term="Rules that stopped it" testId="record-rules">
              <ul className="space-y-0.5">
                {stoppedBy.map((g, i) => (
                  <li key={i}>
                    <span className="font-medium">{gateName(g.gate)}</span> {DECISION_WORDS[g.decision] ?? g.decision}: {g.reason}{" "}
                    <span className="text-slate-600">— policy v{g.policyVersion}</span>
                  </li>
                ))}
              </ul>
            </Row>
          ) : null}
          <Row term="Diagnosis (root cause)" testId="record-root-cause">
            {h.rootCause}
          </Row>
          <Row term="Amount" testId="record-amount">
            {h.amount ?? "—"}
          </Row>
          <Row term="Recommended action" testId="record-recommended">
            {h.recommendedAction}
          </Row>
          <Row term="Why it is here">{h.reason}</Row>
        </dl>
      </Section>

      {h.kind === "APPROVAL" ? (
        <Section title={h.status === "PENDING" ? "The pending call" : "The call"} id="call">
          <dl>
            <Row term="What it does" testId="call-words">
              {h.toolName ? requestInWords(h.toolName, pendingInput) : "—"}
            </Row>
            {Object.entries(pendingInput).map(([key, value]) => (
              <Row key={key} term={ARGUMENT_LABEL[key] ?? key.replace(/_/g, " ")}>
                {argumentInWords(key, value)}
              </Row>
            ))}
            {h.editedInput ? (
              <Row term="Edited by an approver">
                <ArgumentsDiff rows={diffArguments(h.proposedInput, h.editedInput)} caption="What will run instead of the proposed call" />
              </Row>
            ) : null}
            {h.rule ? (
              <Row term="Rule that asked" testId="call-rule">
                <span className="font-medium">{gateName(h.rule.gate)}</span> <span className="font-mono text-xs">({h.rule.gate})</span> —{" "}
                {h.rule.reason} <span className="text-slate-600">(policy v{h.rule.policyVersion})</span>
              </Row>
            ) : null}
            <Row term="Approvals" testId="call-approvals">
              {approvalsText(h)}
              {h.approvals.length ? (
                <span className="text-slate-600">
                  {" "}
                  (by{" "}
                  {h.approvals.map((a, i) => (
                    <span key={a.staffId ?? i}>
                      {i ? "; " : ""}
                      {a.name ?? "a reviewer"}, <LocalTime at={a.at} />
                    </span>
                  ))}
                  )
                </span>
              ) : null}
            </Row>
          </dl>
          <details className="mt-2 text-sm">
            <summary className="cursor-pointer text-slate-600">Technical details</summary>
            <div className="mt-2 space-y-2">
              <p>
                Tool:{" "}
                <code className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-xs" data-testid="call-tool">
                  {h.toolName}
                </code>
              </p>
              <JsonView value={h.proposedInput} label="Proposed input (JSON)" />
              {h.editedInput ? <JsonView value={h.editedInput} label="Edited input (JSON)" /> : null}
              {detail.toolCall?.idempotencyKey ? (
                <p className="break-all font-mono text-xs text-slate-600">idempotency key {detail.toolCall.idempotencyKey}</p>
              ) : null}
            </div>
          </details>
        </Section>
      ) : null}
    </div>
  );
}

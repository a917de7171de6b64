import type { ReactNode } from "react";
import { Section } from "@/components/ui/section";
import { ArgumentsDiff } from "@/components/console/arguments-diff";
import { JsonView } from "@/components/console/json-view";
import { diffArguments } from "@/lib/console/diff";
import type { ConsoleHandoff } from "@/lib/console/queries";

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

/**
 * The self-contained handoff record (DESIGN §2.3): who, what was asked, what the agent tried, its diagnosis,
 * the amount, the recommended action and — for approvals — the exact pending call and the rule that asked.
 */
export function HandoffRecord({ h }: { h: ConsoleHandoff }) {
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
            {h.orderNumber ? <span className="text-slate-600"> · order {h.orderNumber}</span> : null}
          </Row>
          <Row term="What was asked" testId="record-asked">
            {h.summary}
          </Row>
          <Row term="What the agent tried">
            {h.tried.length ? (
              <ol className="list-decimal space-y-0.5 pl-5">
                {h.tried.map((t, i) => (
                  <li key={i}>{t}</li>
                ))}
              </ol>
            ) : (
              "Nothing yet"
            )}
          </Row>
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
            <Row term="Tool" testId="call-tool">
              <code className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-sm">{h.toolName}</code>
            </Row>
            <Row term="Proposed input">
              <JsonView value={h.proposedInput} label="Proposed input (JSON)" />
            </Row>
            {h.editedInput ? (
              <Row term="Edited by an approver">
                <ArgumentsDiff rows={diffArguments(h.proposedInput, h.editedInput)} caption="What will run instead of the proposed call" />
              </Row>
            ) : null}
            {h.rule ? (
              <Row term="Rule that asked" testId="call-rule">
                <span className="font-mono text-xs">{h.rule.gate}</span> — {h.rule.reason} <span className="text-slate-600">(policy v{h.rule.policyVersion})</span>
              </Row>
            ) : null}
            <Row term="Approvals" testId="call-approvals">
              {approvalsText(h)}
              {h.approvals.length ? <span className="text-slate-600"> (by {h.approvals.map((a) => a.name ?? "a reviewer").join(", ")})</span> : null}
            </Row>
          </dl>
        </Section>
      ) : null}
    </div>
  );
}

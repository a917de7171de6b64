"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import { Button } from "@/components/ui/button";
import { Field, Textarea } from "@/components/ui/field";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { callAction, ConsoleError, getJson } from "@/components/console/api";
import { AgeClock, ExpiryClock } from "@/components/console/clocks";
import { FeedIndicator } from "@/components/console/feed-indicator";
import { ConversationInline } from "@/components/console/conversation-inline";
import { JsonView } from "@/components/console/json-view";
import { OrderPanel } from "@/components/console/order-panel";
import { consoleKeys } from "@/components/console/query-keys";
import { HandoffStatusBadge, KindBadge, PhaseBadge, handoffTitle } from "@/components/console/status";
import { useLiveEvents } from "@/components/console/use-live-events";
import { useNow } from "@/components/console/use-now";
import { useShortcuts } from "@/components/console/use-shortcuts";
import { claimHandoffAction, decideHandoffAction, releaseHandoffAction } from "@/lib/actions/console";
import { LocalTime, useViewerTimeZone } from "@/components/ui/local-time";
import { formatMoment } from "@/lib/time";
import { type DecisionFacts, decisionInWords, effectSentence } from "@/lib/console/decision-words";
import type { HandoffDetail } from "@/lib/console/queries";
import { formatCents } from "@/lib/money";
import { EditArguments } from "./edit-arguments";
import { HandoffRecord, approvalsText } from "./handoff-record";

type Me = { staffId: string; name: string; role: string; authorityLimitCents: number | null };
type DecisionInput =
  | { decision: "approve" }
  | { decision: "deny"; reason: string }
  | { decision: "edit"; editedInput: Record<string, unknown> };
type DecideResult = {
  outcome: "approved" | "denied" | "expired" | "awaiting_second_approval";
  resumeFailed: boolean;
  detail: HandoffDetail;
};

/** Renew one's claim well before it lapses (claims expire after 5 minutes unless renewed). */
const CLAIM_RENEW_MS = 2 * 60_000;

function asConsoleError(err: unknown): ConsoleError {
  return err instanceof ConsoleError ? err : new ConsoleError("INTERNAL", "Something went wrong. Nothing was changed by this request.");
}

/** The decision's facts as the server recorded them: the handoff and its call, now. */
function decisionFacts(detail: HandoffDetail): DecisionFacts {
  const h = detail.handoff;
  return {
    kind: h.kind,
    status: h.status,
    toolName: h.toolName,
    proposedInput: h.proposedInput,
    editedInput: h.editedInput,
    requiredApprovals: h.requiredApprovals,
    approvals: h.approvals,
    decidedBy: h.decidedBy,
    decidedAt: h.decidedAt,
    decisionReason: h.decisionReason,
    decision: h.decision,
    call: detail.toolCall ? { status: detail.toolCall.status, result: detail.toolCall.result } : null,
  };
}

function outcomeMessage(res: DecideResult, latest: HandoffDetail): string {
  if (res.outcome === "awaiting_second_approval") return `Your approval is recorded: ${approvalsText(res.detail.handoff)}.`;
  if (res.outcome === "expired") return "This request expired before your decision; nothing was done.";
  const verb = res.outcome === "approved" ? (res.detail.handoff.status === "EDITED" ? "Approved with your edits" : "Approved") : "Denied";
  const done = effectSentence(
    latest.handoff.toolName,
    latest.toolCall ? { status: latest.toolCall.status, result: latest.toolCall.result } : null,
  );
  const phase = latest.run ? ` The run is now ${latest.run.phase}.` : "";
  const later = res.resumeFailed ? " The decision is saved; the agent will continue shortly." : "";
  return `${verb}. ${done ?? ""}${phase}${later}`.replace(/\s+/g, " ").trim();
}

/**
 * One handoff. The record shown is the version the reviewer opened (`viewed`): every decision quotes that
 * version, so a change made meanwhile is refused by the server (STALE_VERSION) instead of being approved
 * unseen — and the live feed shows a "changed since you opened it" notice before that happens. Who holds
 * the claim, the status and the run's phase come from the live query.
 */
export function HandoffView({ initial, initialCursor, me }: { initial: HandoffDetail; initialCursor: string; me: Me }) {
  const zone = useViewerTimeZone();
  const viewerTime = (at: string | number | Date) => formatMoment(at instanceof Date ? at : new Date(at), "datetime", zone);
  const id = initial.handoff.id;
  const key = consoleKeys.handoff(id);
  const qc = useQueryClient();
  const query = useQuery({
    queryKey: key,
    queryFn: ({ signal }) => getJson<HandoffDetail>(`/api/console/handoffs/${id}`, signal),
    initialData: initial,
  });
  const latest = query.data;
  const [viewed, setViewed] = useState(initial);
  const feed = useLiveEvents({ initialCursor, conversationId: initial.handoff.conversationId });
  const now = useNow();

  const h = viewed.handoff;
  const live = latest.handoff;
  const changed = live.version !== h.version;
  const open = live.status === "PENDING";
  const claimedByMe = live.claimedBy?.id === me.staffId;
  const supervisor = me.role === "supervisor" || me.role === "admin";

  // ---- claim (optimistic: the bar says "you" at once; a refusal puts it back and says who holds it)
  const [claimError, setClaimError] = useState<string | null>(null);
  const claim = useMutation({
    mutationFn: () => callAction(() => claimHandoffAction({ handoffId: id })),
    onMutate: async () => {
      setClaimError(null);
      await qc.cancelQueries({ queryKey: key });
      const previous = qc.getQueryData<HandoffDetail>(key);
      if (previous) {
        qc.setQueryData<HandoffDetail>(key, {
          ...previous,
          handoff: {
            ...previous.handoff,
            claimedBy: { id: me.staffId, name: me.name, until: new Date(Date.now() + 5 * 60_000).toISOString() },
          },
        });
      }
      return { previous };
    },
    onError: (err, _v, ctx) => {
      if (ctx?.previous) qc.setQueryData(key, ctx.previous);
      setClaimError(asConsoleError(err).message);
      void qc.invalidateQueries({ queryKey: key });
    },
    onSuccess: (detail) => qc.setQueryData(key, detail),
  });
  const release = useMutation({
    mutationFn: () => callAction(() => releaseHandoffAction({ handoffId: id })),
    onSuccess: (detail) => qc.setQueryData(key, detail),
    onError: (err) => setClaimError(asConsoleError(err).message),
  });
  // While the page is open and the item is mine, keep the claim alive (quietly: no optimistic flicker).
  useEffect(() => {
    if (!claimedByMe || !open) return;
    const itemKey = consoleKeys.handoff(id);
    const t = setInterval(() => {
      void claimHandoffAction({ handoffId: id }).then((r) =>
        r.ok ? qc.setQueryData(itemKey, r.data) : qc.invalidateQueries({ queryKey: itemKey }),
      );
    }, CLAIM_RENEW_MS);
    return () => clearInterval(t);
  }, [claimedByMe, open, id, qc]);

  // ---- decision (never optimistic: money moves only when the server says so)
  const [outcome, setOutcome] = useState<DecideResult | null>(null);
  const [decideError, setDecideError] = useState<ConsoleError | null>(null);
  const [editing, setEditing] = useState(false);
  const [denyReason, setDenyReason] = useState("");
  const [denyError, setDenyError] = useState<string | null>(null);
  const denyRef = useRef<HTMLTextAreaElement>(null);
  const editFieldRef = useRef<HTMLInputElement | HTMLTextAreaElement | null>(null);
  const sending = useRef(false); // a second click in the same tick must not send a second request
  const decide = useMutation({
    mutationFn: (input: DecisionInput) => callAction(() => decideHandoffAction({ handoffId: id, version: h.version, ...input })),
    onSuccess: (res) => {
      qc.setQueryData(key, res.detail);
      setViewed(res.detail);
      setOutcome(res);
      setEditing(false);
      setDenyReason("");
      void qc.invalidateQueries({ queryKey: consoleKeys.queueAll });
    },
    onError: (err) => {
      setDecideError(asConsoleError(err));
      void qc.invalidateQueries({ queryKey: key });
    },
    onSettled: () => {
      sending.current = false;
    },
  });
  const send = (input: DecisionInput) => {
    if (sending.current || decide.isPending) return;
    sending.current = true;
    setOutcome(null);
    setDecideError(null);
    decide.mutate(input);
  };
  const canDecide = h.kind === "APPROVAL" && open && claimedByMe && !changed && !decide.isPending;
  // Over the reviewer's authority: Approve is off (the server refuses it too, with OVER_AUTHORITY); an edit stays
  // possible where the amount is what is edited (a refund), within the authority.
  const overAuthority =
    h.kind === "APPROVAL" && h.amountCents !== null && me.authorityLimitCents !== null && h.amountCents > me.authorityLimitCents;
  const amountEditable = h.toolName === "refund_order";
  const canApprove = canDecide && !overAuthority;
  const canEdit = canDecide && (!overAuthority || amountEditable);
  const reload = () => {
    setViewed(latest);
    setDecideError(null);
    setOutcome(null);
  };
  const submitDeny = () => {
    if (!denyReason.trim()) {
      setDenyError("A reason is required to deny. The customer is told it.");
      denyRef.current?.focus();
      return;
    }
    setDenyError(null);
    send({ decision: "deny", reason: denyReason.trim() });
  };

  useEffect(() => {
    if (editing) editFieldRef.current?.focus();
  }, [editing]);

  // Once the item has moved on, an earlier refusal (e.g. over authority) is no longer the news: the
  // "changed since you opened it" notice is.
  useEffect(() => {
    if (changed) setDecideError(null);
  }, [changed, live.version]);

  useShortcuts({
    c: () => {
      if (open && !live.claimedBy && !claim.isPending) claim.mutate();
    },
    a: () => {
      if (canApprove) send({ decision: "approve" });
    },
    d: () => denyRef.current?.focus(),
    e: () => {
      if (canEdit) setEditing(true);
    },
  });

  const alreadyApprovedByMe = h.approvals.some((a) => a.staffId === me.staffId);
  const base = (h.editedInput ?? h.proposedInput ?? {}) as Record<string, unknown>;

  return (
    <div className="space-y-4">
      <nav aria-label="Breadcrumb" className="text-sm">
        <Link href="/console" className="text-blue-700 underline">
          Queue
        </Link>{" "}
        / <span aria-current="page">Handoff</span>
      </nav>

      <div className="flex flex-wrap items-start justify-between gap-3">
        <div>
          <h1 className="text-xl font-semibold" data-testid="handoff-title">
            {handoffTitle(h)}
          </h1>
          <div className="mt-1 flex flex-wrap items-center gap-2 text-sm">
            <KindBadge kind={h.kind} />
            <span data-testid="handoff-status">
              <HandoffStatusBadge status={live.status} />
            </span>
            {open ? <AgeClock since={h.createdAt} now={now} /> : null}
            {open && h.kind === "APPROVAL" && h.expiresAt ? <ExpiryClock at={h.expiresAt} now={now} /> : null}
            <span className="text-slate-600">
              opened <LocalTime at={h.createdAt} /> · version {h.version}
            </span>
          </div>
        </div>
        <div className="flex flex-col items-end gap-1 text-sm">
          <FeedIndicator state={feed} />
          <Link href={`/console/conversations/${h.conversationId}`} className="text-blue-700 underline">
            Open the conversation
          </Link>
          {supervisor && h.runId ? (
            <Link href={`/console/runs/${h.runId}`} className="text-blue-700 underline">
              Open the run
            </Link>
          ) : null}
        </div>
      </div>

      {changed ? (
        <Notice tone="warning" role="alert" data-testid="changed-notice">
          {live.status !== "PENDING"
            ? `Already ${live.status.toLowerCase()}${live.decidedBy?.name ? ` by ${live.decidedBy.name}` : ""}.`
            : "This changed since you opened it — reload to see the current version before deciding."}{" "}
          <Button size="sm" className="ml-2" onClick={reload}>
            Reload
          </Button>
        </Notice>
      ) : null}

      <div className="grid gap-4 lg:grid-cols-[1fr_26rem]">
        <div className="min-w-0 space-y-4">
          <HandoffRecord h={h} detail={latest} />
          <ConversationInline conversationId={h.conversationId} messages={latest.messages} earlier={latest.earlierMessages} />
        </div>

        {/* Beside the record: the decision, then the order it moves money on. */}
        <div className="min-w-0 space-y-4">
          {h.kind === "ESCALATION" ? (
            <Section title="A person is needed" id="escalation">
              <p className="text-sm text-slate-700">
                {latest.conversation.status === "human"
                  ? `${latest.conversation.ownerName ?? "A person"} has taken this conversation over.`
                  : "Take the conversation over to answer the customer yourself."}
              </p>
              <Link
                href={`/console/conversations/${h.conversationId}`}
                className="mt-3 inline-block rounded-md bg-blue-700 px-3.5 py-2 text-sm font-medium text-white hover:bg-blue-800"
              >
                Open the conversation
              </Link>
            </Section>
          ) : null}

          {h.kind === "APPROVAL" && open ? (
            <Section title="Decide" id="decide">
              <div className="space-y-3" aria-busy={decide.isPending}>
                <div data-testid="claim-bar" className="rounded-md bg-slate-50 p-2 text-sm">
                  {live.claimedBy ? (
                    claimedByMe ? (
                      <div className="flex items-center justify-between gap-2">
                        <span>You are working on this item.</span>
                        <Button size="sm" variant="ghost" onClick={() => release.mutate()} disabled={release.isPending || decide.isPending}>
                          Release
                        </Button>
                      </div>
                    ) : (
                      <span className="font-medium">Claimed by {live.claimedBy.name ?? "another reviewer"}</span>
                    )
                  ) : (
                    <div className="flex items-center justify-between gap-2">
                      <span>Nobody is working on this yet.</span>
                      <Button size="sm" variant="primary" onClick={() => claim.mutate()} disabled={claim.isPending} aria-keyshortcuts="c">
                        Claim{" "}
                        <kbd aria-hidden="true" className="text-xs opacity-80">
                          c
                        </kbd>
                      </Button>
                    </div>
                  )}
                </div>
                {claimError ? <Notice tone="error">{claimError}</Notice> : null}
                {!claimedByMe && live.claimedBy === null ? (
                  <p className="text-xs text-slate-600">Claim the item to approve, deny or edit it.</p>
                ) : null}
                {overAuthority ? (
                  <p id="authority-hint" className="rounded-md bg-amber-50 p-2 text-sm text-amber-950" data-testid="authority-hint">
                    {h.amount} is above your approval authority of {formatCents(me.authorityLimitCents!)}, so you cannot approve it.{" "}
                    {amountEditable
                      ? "You can deny it, or edit it to an amount within your authority."
                      : "You can deny it, or leave it for a reviewer who may approve it."}
                  </p>
                ) : null}
                {alreadyApprovedByMe ? (
                  <p className="text-xs text-amber-900">You approved this already; a second, different reviewer must approve it.</p>
                ) : null}

                <Button
                  variant="approve"
                  className="w-full"
                  disabled={!canApprove}
                  aria-describedby={overAuthority ? "authority-hint" : undefined}
                  aria-busy={decide.isPending && decide.variables?.decision === "approve"}
                  aria-keyshortcuts="a"
                  onClick={() => send({ decision: "approve" })}
                >
                  {decide.isPending && decide.variables?.decision === "approve" ? (
                    "Approving…"
                  ) : (
                    <>
                      Approve{" "}
                      <kbd aria-hidden="true" className="text-xs opacity-80">
                        a
                      </kbd>
                    </>
                  )}
                </Button>

                <form
                  aria-label="Deny"
                  className="space-y-2"
                  onSubmit={(e) => {
                    e.preventDefault();
                    submitDeny();
                  }}
                >
                  <Field
                    id="deny-reason"
                    label={
                      <>
                        Reason to deny{" "}
                        <kbd aria-hidden="true" className="text-xs text-slate-500">
                          d
                        </kbd>
                      </>
                    }
                    hint="Required. The agent explains it to the customer."
                    error={denyError}
                  >
                    <Textarea
                      id="deny-reason"
                      ref={denyRef}
                      aria-keyshortcuts="d"
                      rows={2}
                      value={denyReason}
                      onChange={(e) => setDenyReason(e.target.value)}
                      disabled={decide.isPending}
                      aria-invalid={denyError ? true : undefined}
                      aria-describedby={`deny-reason-hint${denyError ? " deny-reason-error" : ""}`}
                    />
                  </Field>
                  <Button
                    type="submit"
                    variant="danger"
                    className="w-full"
                    disabled={!canDecide}
                    aria-busy={decide.isPending && decide.variables?.decision === "deny"}
                  >
                    {decide.isPending && decide.variables?.decision === "deny" ? "Denying…" : "Deny"}
                  </Button>
                </form>

                {editing ? (
                  <EditArguments
                    toolName={h.toolName ?? ""}
                    original={(h.proposedInput ?? {}) as Record<string, unknown>}
                    base={base}
                    disabled={!canEdit && !decide.isPending}
                    pending={decide.isPending && decide.variables?.decision === "edit"}
                    authorityLimitCents={me.authorityLimitCents}
                    firstFieldRef={editFieldRef}
                    onSubmit={(editedInput) => send({ decision: "edit", editedInput })}
                    onCancel={() => setEditing(false)}
                  />
                ) : (
                  <Button
                    className="w-full"
                    disabled={!canEdit}
                    aria-describedby={overAuthority && !amountEditable ? "authority-hint" : undefined}
                    aria-keyshortcuts="e"
                    onClick={() => setEditing(true)}
                  >
                    Edit arguments{" "}
                    <kbd aria-hidden="true" className="text-xs opacity-80">
                      e
                    </kbd>
                  </Button>
                )}
              </div>
            </Section>
          ) : null}

          {h.kind === "APPROVAL" && (!open || live.approvals.length > 0) ? (
            <Section title="Decision" id="decision">
              <div className="space-y-1 text-sm" data-testid="decision-outcome">
                {decisionInWords(decisionFacts(latest), viewerTime).map((line) => (
                  <p key={line}>{line}</p>
                ))}
              </div>
              {latest.toolCall?.result ? (
                <details className="mt-2 text-sm">
                  <summary className="cursor-pointer text-slate-600">Technical details</summary>
                  <JsonView className="mt-2" value={latest.toolCall.result} label="Result the agent read (JSON)" />
                </details>
              ) : null}
            </Section>
          ) : null}

          {h.kind === "ESCALATION" && !open ? (
            <Section title="Outcome" id="decision">
              <div className="space-y-1 text-sm" data-testid="decision-outcome">
                {decisionInWords(decisionFacts(latest), viewerTime).map((line) => (
                  <p key={line}>{line}</p>
                ))}
              </div>
            </Section>
          ) : null}

          {latest.run ? (
            <p className="flex items-center gap-2 text-sm" data-testid="run-phase">
              Run phase: <PhaseBadge phase={latest.run.phase} />
            </p>
          ) : null}

          <div aria-live="polite" aria-atomic="true">
            {outcome ? (
              <Notice tone="success" role="none" data-testid="decision-result">
                {outcomeMessage(outcome, latest)}
              </Notice>
            ) : null}
          </div>
          <div aria-live="assertive" aria-atomic="true">
            {decideError ? (
              <Notice tone="error" role="none" data-testid="decision-error" data-code={decideError.code}>
                {decideError.code === "STALE_VERSION" ? "This changed since you opened it — reload." : decideError.message}
                {decideError.code === "STALE_VERSION" || decideError.code === "ALREADY_DECIDED" || decideError.code === "EXPIRED" ? (
                  <Button size="sm" className="ml-2" onClick={reload}>
                    Reload
                  </Button>
                ) : null}
              </Notice>
            ) : null}
          </div>

          <OrderPanel facts={latest.order} />
        </div>
      </div>
    </div>
  );
}

"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import { Badge } from "@/components/ui/badge";
import { Button } from "@/components/ui/button";
import { cx } from "@/components/ui/cx";
import { Field, Textarea } from "@/components/ui/field";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { callAction, ConsoleError, getJson } from "@/components/console/api";
import { FeedIndicator } from "@/components/console/feed-indicator";
import { storedReplyRead } from "@/components/console/draft-end";
import { consoleKeys } from "@/components/console/query-keys";
import { HandoffStatusBadge, KindBadge, handoffTitle } from "@/components/console/status";
import { useLiveEvents } from "@/components/console/use-live-events";
import { handBackConversationAction, replyAsStaffAction, takeOverConversationAction } from "@/lib/actions/console";
import type { ConversationDetail } from "@/lib/console/queries";
import { LocalTime } from "@/components/ui/local-time";

const STATUS_TEXT: Record<string, string> = {
  with_person: "With a person",
  waiting_for_approval: "Waiting for an approval",
  working: "The agent is working",
  waiting_for_person: "Waiting for a person",
  idle: "Idle",
};

const FROM_STYLE: Record<string, string> = {
  customer: "bg-white border-slate-200",
  agent: "bg-blue-50 border-blue-200",
  person: "bg-emerald-50 border-emerald-200",
  system: "bg-slate-100 border-slate-200 italic",
};

function message(err: unknown) {
  return err instanceof ConsoleError ? err.message : "Something went wrong. Nothing was changed by this request.";
}

/**
 * The conversation as the customer sees it, live. A person takes it over (the agent then cannot reply),
 * answers under their own name, and hands it back. Only the owner gets a reply box; the server refuses
 * anyone else anyway.
 */
export function ConversationView({
  initial,
  initialCursor,
  me,
}: {
  initial: ConversationDetail;
  initialCursor: string;
  me: { staffId: string; name: string };
}) {
  const id = initial.conversation.id;
  const key = consoleKeys.conversation(id);
  const qc = useQueryClient();
  const query = useQuery({
    queryKey: key,
    queryFn: ({ signal }) => getJson<ConversationDetail>(`/api/console/conversations/${id}`, signal),
    initialData: initial,
  });
  const d = query.data;
  // The agent's reply as it is being written (what is safe to show); it ends when the stored reply is read.
  const [draft, setDraft] = useState<{ runId: string; text: string } | null>(null);
  const feed = useLiveEvents({
    initialCursor,
    conversationId: id,
    onDraft: (dr) => {
      if (dr.text) setDraft({ runId: dr.runId, text: dr.text });
      else void storedReplyRead(qc, key).finally(() => setDraft((cur) => (cur?.runId === dr.runId ? null : cur)));
    },
  });
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [text, setText] = useState("");
  const replyRef = useRef<HTMLTextAreaElement>(null);

  const human = d.conversation.status === "human";
  const ownedByMe = human && d.conversation.ownerStaffId === me.staffId;
  const ownedByOther = human && !ownedByMe;

  const onDone = (note: string) => (detail: ConversationDetail) => {
    qc.setQueryData(key, detail);
    setError(null);
    setDone(note);
    void qc.invalidateQueries({ queryKey: consoleKeys.queueAll });
  };
  const onError = (err: unknown) => {
    setDone(null);
    setError(message(err));
    void qc.invalidateQueries({ queryKey: key });
  };
  const takeOver = useMutation({
    mutationFn: () => callAction(() => takeOverConversationAction({ conversationId: id })),
    onSuccess: onDone("You took over this conversation. The agent will not reply while you hold it."),
    onError,
  });
  const handBack = useMutation({
    mutationFn: () => callAction(() => handBackConversationAction({ conversationId: id })),
    onSuccess: onDone("Handed back to the agent."),
    onError,
  });
  const reply = useMutation({
    mutationFn: (t: string) => callAction(() => replyAsStaffAction({ conversationId: id, text: t })),
    onSuccess: (detail) => {
      onDone("Reply sent.")(detail);
      setText("");
      replyRef.current?.focus();
    },
    onError,
  });
  const busy = takeOver.isPending || handBack.isPending || reply.isPending;

  useEffect(() => {
    if (ownedByMe) replyRef.current?.focus();
  }, [ownedByMe]);

  // Follow the newest message, as a chat does.
  const logRef = useRef<HTMLOListElement>(null);
  const count = d.view.messages.length;
  useEffect(() => {
    logRef.current?.scrollTo({ top: logRef.current.scrollHeight });
  }, [count]);

  const sendReply = () => {
    if (!text.trim() || reply.isPending) return;
    reply.mutate(text.trim());
  };

  return (
    <div className="space-y-4">
      <nav aria-label="Breadcrumb" className="text-sm">
        <Link href="/console" className="text-blue-700 underline">
          Queue
        </Link>{" "}
        / <span aria-current="page">Conversation</span>
      </nav>
      <div className="flex flex-wrap items-start justify-between gap-3">
        <div>
          <h1 className="text-xl font-semibold">Conversation with {d.conversation.customer?.name ?? "an anonymous visitor"}</h1>
          <p className="mt-1 flex flex-wrap items-center gap-2 text-sm text-slate-700">
            {d.conversation.customer ? <span>{d.conversation.customer.email}</span> : null}
            <Badge tone={human ? "green" : d.view.status === "waiting_for_person" ? "amber" : "gray"} data-testid="conversation-status">
              {human ? `With ${ownedByMe ? "you" : (d.view.owner ?? "a person")}` : (STATUS_TEXT[d.view.status] ?? d.view.status)}
            </Badge>
            {d.view.verified ? <Badge tone="blue">verified customer</Badge> : null}
          </p>
        </div>
        <FeedIndicator state={feed} />
      </div>

      <div className="grid gap-4 lg:grid-cols-[1fr_20rem]">
        <Section title="What the customer sees" id="transcript">
          <ol
            ref={logRef}
            role="log"
            aria-label="Messages"
            className="max-h-[60vh] space-y-2 overflow-y-auto pr-1"
            tabIndex={0}
            data-testid="conversation-log"
          >
            {d.view.messages.map((m) => (
              <li
                key={m.seq}
                data-from={m.from}
                className={cx("rounded-md border p-2 text-sm", FROM_STYLE[m.from], m.from === "customer" ? "mr-8" : "ml-8")}
              >
                <p className="mb-0.5 text-xs font-medium text-slate-600">
                  {m.from === "customer"
                    ? "Customer"
                    : m.from === "agent"
                      ? "Agent"
                      : m.from === "person"
                        ? `${m.name ?? "Support"} (support team)`
                        : "Notice"}
                  <span className="font-normal">
                    {" · "}
                    <LocalTime at={m.at} style="time" />
                  </span>
                </p>
                <p className="whitespace-pre-wrap break-words">{m.text}</p>
              </li>
            ))}
            {draft ? (
              <li
                data-from="agent"
                data-draft="true"
                aria-busy="true"
                className={cx("ml-8 rounded-md border border-dashed p-2 text-sm", FROM_STYLE.agent)}
              >
                <p className="mb-0.5 text-xs font-medium text-slate-600">Agent · writing…</p>
                <p className="whitespace-pre-wrap break-words">{draft.text}</p>
              </li>
            ) : null}
          </ol>
        </Section>

        <div className="space-y-4 lg:sticky lg:top-4 lg:self-start">
          <Section title="Answer as a person" id="takeover">
            <div className="space-y-3">
              {!human ? (
                <>
                  <p className="text-sm text-slate-700">Taking over stops the agent from replying until you hand it back.</p>
                  <Button
                    variant="primary"
                    className="w-full"
                    onClick={() => takeOver.mutate()}
                    disabled={busy}
                    aria-busy={takeOver.isPending}
                  >
                    {takeOver.isPending ? "Taking over…" : "Take over"}
                  </Button>
                </>
              ) : null}
              {ownedByOther ? (
                <p className="text-sm font-medium">{d.view.owner ?? "Another person"} has taken over this conversation.</p>
              ) : null}
              {ownedByMe ? (
                <>
                  <form
                    aria-label="Reply to the customer"
                    className="space-y-2"
                    onSubmit={(e) => {
                      e.preventDefault();
                      sendReply();
                    }}
                  >
                    <Field id="reply" label={`Reply as ${me.name}`} hint="The customer sees your name. Ctrl+Enter sends.">
                      <Textarea
                        id="reply"
                        ref={replyRef}
                        rows={3}
                        value={text}
                        maxLength={4000}
                        onChange={(e) => setText(e.target.value)}
                        aria-describedby="reply-hint"
                        onKeyDown={(e) => {
                          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
                            e.preventDefault();
                            sendReply();
                          }
                        }}
                      />
                    </Field>
                    <Button type="submit" variant="primary" className="w-full" disabled={busy || !text.trim()} aria-busy={reply.isPending}>
                      {reply.isPending ? "Sending…" : "Send reply"}
                    </Button>
                  </form>
                  <Button className="w-full" onClick={() => handBack.mutate()} disabled={busy} aria-busy={handBack.isPending}>
                    {handBack.isPending ? "Handing back…" : "Hand back to the agent"}
                  </Button>
                </>
              ) : null}
              <div aria-live="polite" aria-atomic="true">
                {done ? (
                  <Notice tone="success" role="none" data-testid="conversation-result">
                    {done}
                  </Notice>
                ) : null}
              </div>
              <div aria-live="assertive" aria-atomic="true">
                {error ? (
                  <Notice tone="error" role="none" data-testid="conversation-error">
                    {error}
                  </Notice>
                ) : null}
              </div>
            </div>
          </Section>

          {d.handoffs.length ? (
            <Section title="Handoffs" id="handoffs">
              <ul className="space-y-2 text-sm">
                {d.handoffs.map((h) => (
                  <li key={h.id} className="flex flex-wrap items-center gap-1.5">
                    <KindBadge kind={h.kind} />
                    <HandoffStatusBadge status={h.status} />
                    <Link href={`/console/handoffs/${h.id}`} className="text-blue-700 underline">
                      {handoffTitle(h)}
                    </Link>
                  </li>
                ))}
              </ul>
            </Section>
          ) : null}
        </div>
      </div>
    </div>
  );
}

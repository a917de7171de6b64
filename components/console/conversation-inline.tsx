import Link from "next/link";
import { Section } from "@/components/ui/section";
import { cx } from "@/components/ui/cx";
import { LocalTime } from "@/components/ui/local-time";
import type { HandoffDetail } from "@/lib/console/queries";

const WHO = { customer: "Customer", agent: "Agent", person: "Staff", system: "Notice" } as const;

/** The conversation as the customer saw it — their words, the agent's replies, notices and people's replies — inline. */
export function ConversationInline({
  conversationId,
  messages,
  earlier,
}: {
  conversationId: string;
  messages: HandoffDetail["messages"];
  earlier: boolean;
}) {
  return (
    <Section
      title="The conversation"
      id="conversation"
      actions={
        <Link href={`/console/conversations/${conversationId}`} className="text-sm text-blue-700 underline">
          Open it to take over
        </Link>
      }
    >
      {earlier ? <p className="mb-2 text-xs text-slate-600">Earlier messages are on the conversation page.</p> : null}
      {messages.length === 0 ? (
        <p className="text-sm text-slate-600">No messages were shown to the customer.</p>
      ) : (
        <ol className="space-y-2" aria-label="Messages as the customer saw them" data-testid="conversation-inline">
          {messages.map((m) => (
            <li
              key={m.seq}
              data-from={m.from}
              className={cx(
                "max-w-[90%] rounded-lg px-3 py-2 text-sm",
                m.from === "customer" ? "bg-slate-100" : m.from === "system" ? "mx-auto bg-amber-50 text-amber-950" : "ml-auto bg-blue-50",
              )}
            >
              <p className="mb-0.5 text-xs text-slate-600">
                {m.from === "person" ? `${m.name ?? "Staff"} (staff)` : WHO[m.from as keyof typeof WHO]} ·{" "}
                <LocalTime at={m.at} style="time" />
              </p>
              <p className="whitespace-pre-wrap break-words">{m.text}</p>
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}

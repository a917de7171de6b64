// Drafts: the part of a reply already safe to show while the model is still writing it (lib/runtime/reply-release).
// Never stored: the process running the model NOTIFYs `support_drafts`; every process's one listener (lib/live/hub)
// keeps the latest draft per conversation and wakes that conversation's open streams (widget SSE, console long polls).
// The stored message replaces the draft; a draft that ends without one (the turn called a tool, or the stop check
// sent it back) simply disappears.
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";
import { log } from "@/lib/log";

export interface DraftRef {
  tenantId: string;
  conversationId: string;
  runId: string;
}

/** Where a run's drafts go (the runtime calls `show` as text is released, `end` once its step is written). */
export interface DraftSink {
  show(ref: DraftRef, text: string): void;
  end(ref: DraftRef): void;
}

/** NOTIFY payloads are limited to 8000 bytes: a longer draft shows its first part (the stored reply has it all). */
const MAX_DRAFT_BYTES = 7000;

function clipped(text: string): string {
  if (Buffer.byteLength(text) <= MAX_DRAFT_BYTES) return text;
  let cut = text.slice(0, MAX_DRAFT_BYTES);
  while (Buffer.byteLength(cut) > MAX_DRAFT_BYTES) cut = cut.slice(0, -64);
  return `${cut}…`;
}

/**
 * Drafts published through the database, so every web process hears them whichever process runs the model.
 *
 * Once a person owns the conversation, no draft of the agent's is published (DESIGN §7: ownership is checked at the
 * moment of sending). The check is here, in the statement that publishes, because this is the one way out to every
 * stream (the widget's, the console's, in any process) and it reads the truth: the conversation's row, in the same
 * statement as the NOTIFY — no extra round trip, once per released sentence (not per delta), and no state in a hub
 * that a late or reconnected listener could lack. FOR KEY SHARE waits for a takeover in flight (it holds the row FOR
 * UPDATE) and reads its result, so a draft's notification is either heard before the takeover's or not at all; it
 * does not wait for the run's own updates of the row. A draft shown before is ended by the takeover
 * (`endDraftAtCommit`). An end is always published.
 *
 * The row lock is a write: it makes the statement's commit wait for a WAL flush, one disk wait per released sentence
 * (pg_stat_wal: 1.00 flush per statement with the lock, 0.01 without). Nothing in it is stored or promised — a lock
 * does not outlive a crash and the notification is delivered at commit either way — so that one transaction commits
 * without waiting for the disk (`synchronous_commit` off for it alone; every write of the product keeps waiting).
 */
export function notifyDrafts(db: Store): DraftSink {
  let seq = 0;
  const send = (ref: DraftRef, text: string | null) => {
    // Ordered by time (a run may move to another process between turns), then by this process's own count.
    const n = Date.now() * 1000 + (seq++ % 1000);
    const payload = JSON.stringify({ t: ref.tenantId, c: ref.conversationId, r: ref.runId, x: text === null ? null : clipped(text), n });
    const publish =
      text === null
        ? sql`SELECT pg_notify('support_drafts', ${payload})`
        : sql`SELECT pg_notify('support_drafts', ${payload}), set_config('synchronous_commit', 'off', true) FROM (
            SELECT 1 FROM "Conversation"
            WHERE id = ${ref.conversationId} AND "tenantId" = ${ref.tenantId} AND status <> 'human'
            FOR KEY SHARE
          ) AS agent_may_reply`;
    // Fire and forget: a draft that is lost costs a moment of "typing…", never a message.
    publish.execute(db).catch((err) => log.debug({ err }, "a draft was not published"));
  };
  return { show: (ref, text) => send(ref, text), end: (ref) => send(ref, null) };
}

/**
 * Ends the conversation's draft, whichever run wrote it, when `tx` commits (lib/live/hub `noteDraft`, run `null`): a
 * person took it over, so what the agent was writing leaves every screen now, not when its turn ends.
 */
export async function endDraftAtCommit(tx: Store, scope: { tenantId: string; conversationId: string }): Promise<void> {
  const payload = JSON.stringify({ t: scope.tenantId, c: scope.conversationId, r: null, x: null, n: 0 });
  await sql`SELECT pg_notify('support_drafts', ${payload})`.execute(tx);
}

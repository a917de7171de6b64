import type { Transporter } from "nodemailer";
import { randomUUID } from "node:crypto";
import type { Transaction } from "kysely";
import { type DB, storeOf } from "@/lib/db/kysely";
import { log } from "@/lib/log";
import { mailSettings, type MailSettings } from "./config";

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** A staff invitation (it sets a password): the demo mailbox shows it to admins only. */
  adminOnly?: boolean;
}

export interface QueuedMail {
  id: string;
  settings: MailSettings;
}

/**
 * Writes a mail into the outbox inside the caller's transaction, so it commits with what it announces (a code
 * exists exactly when its mail does). Without SMTP the row is the delivery: the demo mailbox shows it.
 * Over SMTP it is queued; `deliverMail` sends it once the transaction has committed.
 */
export async function queueMail(tx: Transaction<DB>, tenantId: string, mail: Mail, settings = mailSettings()): Promise<QueuedMail> {
  const id = randomUUID();
  await tx
    .insertInto("MailOutbox")
    .values({
      id,
      tenantId,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      adminOnly: mail.adminOnly ?? false,
      status: settings.transport === "smtp" ? "queued" : "demo",
    })
    .execute();
  return { id, settings };
}

const transports = new Map<string, Transporter>();

// nodemailer is loaded only when SMTP is configured: every process that knows the tools imports this module.
async function transportFor(url: string): Promise<Transporter> {
  let transport = transports.get(url);
  if (!transport) {
    const { default: nodemailer } = await import("nodemailer");
    // Bounded waits: a hanging mail server must not hold a run's lease for minutes.
    transport = nodemailer.createTransport(url, { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 });
    transports.set(url, transport);
  }
  return transport;
}

/**
 * Sends a queued mail over SMTP and records the outcome on its row. A delivered mail's body is emptied: what it
 * carried (a one-time code) is not kept. Never throws: a failed delivery is recorded (and logged) for staff to
 * see, and the sender answers as it would anyway.
 */
export async function deliverMail(client: object, queued: QueuedMail): Promise<"sent" | "failed" | "demo"> {
  if (queued.settings.transport !== "smtp") return "demo";
  const db = storeOf(client);
  const row = await db.selectFrom("MailOutbox").selectAll().where("id", "=", queued.id).executeTakeFirst();
  if (row?.status !== "queued") return row?.status === "sent" ? "sent" : "failed";
  try {
    const transport = await transportFor(queued.settings.url);
    const info = await transport.sendMail({
      from: queued.settings.from,
      to: row.to,
      subject: row.subject,
      text: row.text,
    });
    await db
      .updateTable("MailOutbox")
      .set({ status: "sent", sentAt: new Date(), messageId: String(info.messageId ?? ""), text: "" })
      .where("id", "=", row.id)
      .execute();
    return "sent";
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.error({ err, mailId: row.id }, "mail delivery failed");
    await db
      .updateTable("MailOutbox")
      .set({ status: "failed", error: message.slice(0, 500) })
      .where("id", "=", row.id)
      .execute();
    return "failed";
  }
}

/**
 * How long a queued mail is left to the process that queued it before another sends it: longer than a delivery can
 * take (the transport's waits: 10 s to connect, 10 s for the greeting, 20 s of silence).
 */
export const STRANDED_AFTER_MS = 60_000;

/**
 * Sends the mail a process queued and never sent (it died between its commit and the send): up to `limit` mails,
 * oldest first (`more`: the limit was reached), each at most once more — `deliverMail` records sent or failed either
 * way. A mail older than `lapseAfterMs` (a staff invitation, admin-only: `invitationLapseAfterMs`, its link's life)
 * is not sent: it is recorded failed and its body (a one-time code, a link) emptied, for what it carried has lapsed
 * and the customer asks again (the admin sends a new link). Any number of workers may sweep at once: a mail is sent
 * by whichever locks its row (FOR UPDATE SKIP LOCKED), the others pass it by.
 */
export async function sendStrandedMail(
  client: object,
  opts: { lapseAfterMs: number; invitationLapseAfterMs?: number; limit?: number; now?: Date },
  settings = mailSettings(),
): Promise<{ sent: number; lapsed: number; more: boolean }> {
  if (settings.transport !== "smtp") return { sent: 0, lapsed: 0, more: false };
  const db = storeOf(client);
  const now = opts.now?.getTime() ?? Date.now();
  // A row another worker is sending right now is passed by (it is recorded sent or failed there), never waited for.
  const lapsed = await db
    .updateTable("MailOutbox")
    .set({ status: "failed", error: "not sent before what it carried lapsed (the process that queued it stopped)", text: "" })
    .where("id", "in", (eb) =>
      eb
        .selectFrom("MailOutbox")
        .select("id")
        .where("status", "=", "queued")
        .where((w) =>
          w.or([
            w.and([w("adminOnly", "=", false), w("createdAt", "<", new Date(now - opts.lapseAfterMs))]),
            w.and([w("adminOnly", "=", true), w("createdAt", "<", new Date(now - (opts.invitationLapseAfterMs ?? opts.lapseAfterMs)))]),
          ]),
        )
        .forUpdate()
        .skipLocked(),
    )
    .executeTakeFirst();
  const limit = opts.limit ?? 20;
  let sent = 0;
  for (; sent < limit; sent++) {
    const delivered = await db.transaction().execute(async (tx) => {
      const row = await tx
        .selectFrom("MailOutbox")
        .select("id")
        .where("status", "=", "queued")
        .where("createdAt", "<", new Date(now - STRANDED_AFTER_MS))
        .orderBy("createdAt")
        .limit(1)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (!row) return false;
      const outcome = await deliverMail(tx, { id: row.id, settings });
      log.warn({ mailId: row.id, outcome }, "a mail a stopped process left queued: tried by this worker");
      return true;
    });
    if (!delivered) break;
  }
  // At the limit there may be more: the caller sweeps again without waiting its usual interval.
  return { sent, lapsed: Number(lapsed.numUpdatedRows), more: sent === limit };
}

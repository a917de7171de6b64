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

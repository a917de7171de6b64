import { storeOf } from "@/lib/db/kysely";
import { mailSettings } from "./config";

export interface DemoMail {
  id: string;
  to: string;
  subject: string;
  text: string;
  createdAt: Date;
}

/**
 * The demo mailbox of one shop: mail kept because no SMTP server is configured, newest first. Scoped by the
 * caller's tenant in the query, so another shop's staff see nothing of it. Staff invitations (their link sets a
 * password) only for admins: a reviewer must not be able to take over the account of a person being invited.
 */
export async function demoMailbox(
  client: object,
  tenantId: string,
  limit = 50,
  viewer: { role: string } = { role: "reviewer" },
): Promise<{ smtp: boolean; mails: DemoMail[] }> {
  let q = storeOf(client)
    .selectFrom("MailOutbox")
    .select(["id", "to", "subject", "text", "createdAt"])
    .where("tenantId", "=", tenantId)
    .where("status", "=", "demo");
  if (viewer.role !== "admin") q = q.where("adminOnly", "=", false);
  const mails = await q
    .orderBy("createdAt", "desc")
    .orderBy("id", "desc")
    .limit(Math.min(Math.max(1, limit), 200))
    .execute();
  let smtp = false;
  try {
    smtp = mailSettings().transport === "smtp";
  } catch {
    smtp = false; // half configured: the sender reports it; the mailbox still shows what it holds
  }
  return { smtp, mails };
}

import { env } from "@/lib/env";

/**
 * Where the product's mail goes. With `SMTP_URL` (e.g. `smtps://user:pass@smtp.example.com:465`) and `MAIL_FROM`
 * (e.g. `Acme Support <support@acme.example>`) it is delivered over SMTP. With neither, it stays in the database:
 * the console's "demo mailbox" shows it to the shop's staff, so the demo needs no mail server. One without the
 * other is a configuration error, never a silent fall-back: real customers' codes must not land in a demo mailbox.
 */
export type MailSettings = { transport: "smtp"; url: string; from: string } | { transport: "demo"; from: string };

export const DEMO_FROM = "Support <no-reply@support.localhost>";

export function mailSettings(vars: { SMTP_URL?: string; MAIL_FROM?: string } = env()): MailSettings {
  const url = vars.SMTP_URL?.trim();
  const from = vars.MAIL_FROM?.trim();
  if (url && from) return { transport: "smtp", url, from };
  if (url || from)
    throw new Error(`Mail is half configured: set both SMTP_URL and MAIL_FROM, or neither (${url ? "MAIL_FROM" : "SMTP_URL"} is missing).`);
  return { transport: "demo", from: DEMO_FROM };
}

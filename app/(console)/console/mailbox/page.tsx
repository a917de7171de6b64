import type { Metadata } from "next";
import Link from "next/link";
import { Notice } from "@/components/ui/notice";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { demoMailbox } from "@/lib/mail/mailbox";

export const metadata: Metadata = { title: "Demo mailbox · Support console" };
export const dynamic = "force-dynamic";

/**
 * The mail the product "sent" while no SMTP server is configured — one-time codes above all — for the shop's
 * staff to read in a demo. Scoped to the signed-in staff member's shop in the query.
 */
export default async function MailboxPage() {
  const staff = await requireStaffPage("/console/mailbox");
  const { smtp, mails } = await demoMailbox(await getPrisma(), staff.tenantId, 50, staff);
  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-end justify-between gap-2">
        <div>
          <h1 className="text-xl font-semibold">Demo mailbox</h1>
          <p className="text-sm text-slate-600">
            Mail to {staff.tenantName}&apos;s customers, kept here because no mail server is configured. Newest first.
          </p>
        </div>
        <Link href="/console/mailbox" className="rounded px-2 py-1 text-sm font-medium text-blue-700 underline" prefetch={false}>
          Refresh
        </Link>
      </div>
      {smtp ? (
        <Notice tone="info" role="status">
          Mail is delivered over SMTP; nothing new arrives here. What is listed was kept before SMTP was configured.
        </Notice>
      ) : null}
      {mails.length === 0 ? (
        <p className="rounded-lg border border-slate-200 bg-white p-6 text-center text-sm text-slate-600">No mail yet.</p>
      ) : (
        <ol className="space-y-3" aria-label="Mail, newest first">
          {mails.map((m) => (
            <li key={m.id} data-testid="demo-mail" className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
              <article aria-label={`${m.subject} to ${m.to}`}>
                <header className="mb-2 flex flex-wrap items-baseline justify-between gap-2 text-sm">
                  <p>
                    <span className="text-slate-600">To</span>{" "}
                    <span className="font-medium" data-testid="demo-mail-to">
                      {m.to}
                    </span>
                  </p>
                  <time dateTime={m.createdAt.toISOString()} className="text-xs text-slate-600">
                    {m.createdAt.toLocaleString("en-US", { timeZone: "UTC", dateStyle: "medium", timeStyle: "medium" })} UTC
                  </time>
                </header>
                <h2 className="font-semibold text-slate-900" data-testid="demo-mail-subject">
                  {m.subject}
                </h2>
                <pre className="mt-2 whitespace-pre-wrap font-sans text-sm text-slate-800" data-testid="demo-mail-text">
                  {m.text}
                </pre>
              </article>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

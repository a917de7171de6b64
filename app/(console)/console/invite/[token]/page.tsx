import type { Metadata } from "next";
import Link from "next/link";
import { getPrisma } from "@/lib/db/client";
import { inviteByToken } from "@/lib/settings/staff";
import { SetPasswordForm } from "./set-password-form";

export const metadata: Metadata = { title: "Set your password · Support console", referrer: "no-referrer" };
export const dynamic = "force-dynamic";

const WHY: Record<"used" | "expired" | "invalid", string> = {
  used: "This link was already used. Sign in with the password you set.",
  expired: "This link expired. Ask an admin of your shop to send a new one.",
  invalid: "This link is not valid. Check that you opened the whole link from the mail.",
};

/** Where an invitation mail leads: the invited person sets their password (no session needed; the link is the key). */
export default async function InvitePage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  const invite = await inviteByToken(await getPrisma(), token);
  return (
    <div className="mx-auto max-w-sm rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
      {invite.state === "valid" ? (
        <>
          <h1 className="text-xl font-semibold">Welcome, {invite.name}</h1>
          <p className="mt-1 text-sm text-slate-600">
            Set a password for <span className="font-medium">{invite.email}</span> to work in {invite.shop}&apos;s support console.
          </p>
          <SetPasswordForm token={token} email={invite.email} />
        </>
      ) : (
        <div role="alert">
          <h1 className="text-xl font-semibold">Invitation</h1>
          <p className="mt-2 text-sm" data-testid="invite-state">
            {WHY[invite.state]}
          </p>
          <p className="mt-4">
            <Link href="/login" className="text-sm font-medium text-blue-700 underline">
              Go to sign-in
            </Link>
          </p>
        </div>
      )}
    </div>
  );
}

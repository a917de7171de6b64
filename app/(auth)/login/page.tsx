import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { getSessionClaims } from "@/lib/auth/session";
import { loadStaffContext } from "@/lib/auth/staff-context";
import { getPrisma } from "@/lib/db/client";
import { safeCallbackUrl } from "@/lib/auth/callback-url";
import { LoginForm } from "./login-form";

export const metadata: Metadata = { title: "Sign in · Support console" };
export const dynamic = "force-dynamic";

/** Staff sign-in. Already signed in (and still a staff member) → straight on to where they were going. */
export default async function LoginPage({ searchParams }: { searchParams: Promise<{ callbackUrl?: string; error?: string }> }) {
  const { callbackUrl, error } = await searchParams;
  const target = safeCallbackUrl(callbackUrl);
  const claims = await getSessionClaims();
  if (claims && (await loadStaffContext(await getPrisma(), claims))) redirect(target);
  return (
    <main id="main" className="flex min-h-screen items-center justify-center px-4">
      <div className="w-full max-w-sm rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
        <h1 className="text-xl font-semibold">Sign in to the support console</h1>
        <p className="mt-1 text-sm text-slate-600">For shop staff: reviewers, supervisors and admins.</p>
        <LoginForm callbackUrl={target} initialError={error ? "Sign-in failed. Check your email and password." : null} />
      </div>
    </main>
  );
}

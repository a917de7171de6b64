import "server-only";
import { getServerSession } from "next-auth";
import { redirect } from "next/navigation";
import { getPrisma } from "@/lib/db/client";
import { parseSessionClaims, type SessionClaims } from "./claims";
import { getAuthOptions } from "./options";
import { loadStaffContext, type StaffContext } from "./staff-context";

/** The signed-in staff member's claims from the session cookie, or null (anonymous, expired, forged). */
export async function getSessionClaims(): Promise<SessionClaims | null> {
  const session = await getServerSession(getAuthOptions());
  return parseSessionClaims(session?.user);
}

/**
 * For pages: the current staff member, re-read from the database. Anonymous or deleted → the sign-in page,
 * coming back to `returnTo` afterwards. Role checks stay with the page, which renders its own refusal.
 */
export async function requireStaffPage(returnTo: string): Promise<StaffContext> {
  const claims = await getSessionClaims();
  const staff = claims ? await loadStaffContext(await getPrisma(), claims) : null;
  if (!staff) redirect(`/login?callbackUrl=${encodeURIComponent(returnTo)}`);
  return staff;
}

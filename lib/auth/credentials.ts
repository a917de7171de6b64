import bcrypt from "bcryptjs";
import type { PrismaTx } from "@/lib/db/prisma-types";
import type { SessionClaims } from "./claims";
import { claimsOfStaff } from "./staff-context";

// Compared against when the email is unknown, so a wrong email costs the same time as a wrong password.
let dummyHash: Promise<string> | undefined;

/**
 * Checks a staff member's email and password (bcrypt). Returns the session claims, or null for any
 * mismatch — the caller must not say which half was wrong. A deactivated person, or one invited who has not set a
 * password yet, is refused the same way (and costs the same time).
 */
export async function verifyStaffCredentials(db: PrismaTx, emailRaw: unknown, passwordRaw: unknown): Promise<SessionClaims | null> {
  if (typeof emailRaw !== "string" || typeof passwordRaw !== "string") return null;
  const email = emailRaw.trim().toLowerCase();
  const password = passwordRaw;
  if (!email || !password || email.length > 320 || password.length > 200) return null;
  const staff = await db.staffUser.findUnique({ where: { email }, include: { tenant: true } });
  if (!staff?.passwordHash || staff.deactivatedAt) {
    dummyHash ??= bcrypt.hash("not-a-real-password", 10);
    await bcrypt.compare(password, await dummyHash);
    return null;
  }
  if (!(await bcrypt.compare(password, staff.passwordHash))) return null;
  return claimsOfStaff(staff);
}

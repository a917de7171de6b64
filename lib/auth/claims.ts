import { z } from "zod";

/** What a signed-in staff session carries (in the JWT and in `session.user`). */
export const sessionClaimsSchema = z.object({
  staffId: z.string().min(1),
  tenantId: z.string().min(1),
  tenantSlug: z.string(),
  tenantName: z.string(),
  role: z.enum(["reviewer", "supervisor", "admin"]),
  name: z.string(),
  email: z.string(),
});
export type SessionClaims = z.infer<typeof sessionClaimsSchema>;

export type StaffRole = SessionClaims["role"];

/** Claims from an untrusted object (a decoded token, a session body); null when anything is missing. */
export function parseSessionClaims(raw: unknown): SessionClaims | null {
  const parsed = sessionClaimsSchema.safeParse(raw);
  return parsed.success ? parsed.data : null;
}

/** Supervisors and admins see runs and transcripts; every role works the queue. */
export const SUPERVISOR_ROLES: readonly StaffRole[] = ["supervisor", "admin"];
export const ALL_STAFF_ROLES: readonly StaffRole[] = ["reviewer", "supervisor", "admin"];

import { SUPERVISOR_ROLES, type StaffRole } from "@/lib/auth/claims";
import { AppError } from "@/lib/errors";

/** Who is reading: the console's read functions put `tenantId` in every `where` and check `role` where it matters. */
export interface Viewer {
  tenantId: string;
  role: StaffRole;
}

/** Runs, transcripts and their exports are for supervisors and admins; a reviewer is refused in the data layer too. */
export function assertSupervisor(viewer: Viewer): void {
  if (!SUPERVISOR_ROLES.includes(viewer.role))
    throw new AppError("FORBIDDEN", "Runs and transcripts are open to supervisors and admins of your shop.");
}

/** Shop settings (API tokens among them) are for admins; anyone else is refused in the data layer too. */
export function assertAdmin(viewer: Viewer): void {
  if (viewer.role !== "admin") throw new AppError("FORBIDDEN", "Settings are open to admins of your shop.");
}

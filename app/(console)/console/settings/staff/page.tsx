import type { Metadata } from "next";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { listStaff } from "@/lib/settings/staff";
import { AdminsOnly } from "../admins-only";
import { StaffManager } from "./staff-manager";

export const metadata: Metadata = { title: "Staff · Settings · Support console" };
export const dynamic = "force-dynamic";

/** The shop's staff: invite, roles, approval authority, deactivate and reactivate. */
export default async function StaffSettingsPage() {
  const staff = await requireStaffPage("/console/settings/staff");
  if (staff.role !== "admin") return <AdminsOnly />;
  const members = await listStaff(await getPrisma(), staff);
  return <StaffManager members={members} selfId={staff.staffId} />;
}

import type { ReactNode } from "react";
import { SettingsNav } from "@/components/console/settings-nav";
import { getSessionClaims } from "@/lib/auth/session";
import { loadStaffContext } from "@/lib/auth/staff-context";
import { getPrisma } from "@/lib/db/client";

/**
 * The settings' frame: a heading and the settings' navigation, for admins. Each page checks the caller itself (a
 * layout is no guard: pages render alongside it), and every action and data function checks again.
 */
export default async function SettingsLayout({ children }: { children: ReactNode }) {
  const claims = await getSessionClaims();
  const staff = claims ? await loadStaffContext(await getPrisma(), claims) : null;
  if (staff?.role !== "admin") return children;
  return (
    <div className="space-y-4">
      <div>
        <h1 className="text-xl font-semibold">Settings</h1>
        <p className="text-sm text-slate-600">
          {staff.tenantName}: how the agent decides, who works in the console, the chat on your site.
        </p>
      </div>
      <SettingsNav />
      {children}
    </div>
  );
}

import Link from "next/link";
import { Badge } from "@/components/ui/badge";
import type { StaffContext } from "@/lib/auth/staff-context";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { formatCents } from "@/lib/money";
import { SignOutButton } from "./sign-out-button";

/** The signed-in header: who is working, for which shop, with what authority; navigation; sign out. */
export function ConsoleHeader({ staff }: { staff: StaffContext }) {
  const supervisor = SUPERVISOR_ROLES.includes(staff.role);
  return (
    <header className="border-b border-slate-200 bg-white">
      <div className="mx-auto flex max-w-6xl flex-wrap items-center justify-between gap-3 px-4 py-2.5">
        <div className="flex items-center gap-5">
          <Link href="/console" className="rounded font-semibold text-slate-900">
            Support console
          </Link>
          <nav aria-label="Console">
            <ul className="flex gap-1 text-sm">
              <li>
                <Link href="/console" className="rounded px-2 py-1 text-slate-700 hover:bg-slate-100">
                  Queue
                </Link>
              </li>
              {supervisor ? (
                <li>
                  <Link href="/console/runs" className="rounded px-2 py-1 text-slate-700 hover:bg-slate-100">
                    Runs
                  </Link>
                </li>
              ) : null}
              {supervisor ? (
                <li>
                  <Link href="/console/metrics" className="rounded px-2 py-1 text-slate-700 hover:bg-slate-100">
                    Metrics
                  </Link>
                </li>
              ) : null}
              <li>
                <Link href="/console/mailbox" className="rounded px-2 py-1 text-slate-700 hover:bg-slate-100">
                  Demo mailbox
                </Link>
              </li>
              {staff.role === "admin" ? (
                <li>
                  <Link href="/console/settings" className="rounded px-2 py-1 text-slate-700 hover:bg-slate-100">
                    Settings
                  </Link>
                </li>
              ) : null}
            </ul>
          </nav>
        </div>
        <div className="flex items-center gap-3 text-sm">
          <p data-testid="signed-in-as" className="text-right leading-tight">
            <span className="font-medium text-slate-900">{staff.name}</span> <span className="text-slate-600">({staff.email})</span>
            <br />
            <span className="text-slate-700" data-testid="signed-in-shop">
              {staff.tenantName}
            </span>{" "}
            <Badge tone="gray">{staff.role}</Badge>{" "}
            <span className="text-xs text-slate-600">
              {staff.authorityLimitCents === null ? "no approval limit" : `approves up to ${formatCents(staff.authorityLimitCents)}`}
            </span>
          </p>
          <SignOutButton />
        </div>
      </div>
    </header>
  );
}

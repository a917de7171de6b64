"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { cx } from "@/components/ui/cx";

/** The settings pages, in order. Each is one entry: add a page by adding a line. */
export const SETTINGS_NAV: ReadonlyArray<{ href: string; label: string }> = [
  { href: "/console/settings/policy", label: "Policy" },
  { href: "/console/settings/staff", label: "Staff" },
  { href: "/console/settings/widget", label: "Widget" },
  { href: "/console/settings/api-tokens", label: "API tokens" },
  { href: "/console/settings/webhooks", label: "Webhooks" },
  { href: "/console/settings/audit", label: "Audit" },
];

/** The settings' own navigation; the current page is marked for screen readers too. */
export function SettingsNav() {
  const pathname = usePathname();
  return (
    <nav aria-label="Settings">
      <ul className="flex flex-wrap gap-1 border-b border-slate-200 text-sm">
        {SETTINGS_NAV.map((entry) => {
          const current = pathname === entry.href || pathname.startsWith(`${entry.href}/`);
          return (
            <li key={entry.href}>
              <Link
                href={entry.href}
                aria-current={current ? "page" : undefined}
                className={cx(
                  "-mb-px inline-block border-b-2 px-3 py-2",
                  current ? "border-blue-700 font-medium text-blue-800" : "border-transparent text-slate-700 hover:text-slate-900",
                )}
              >
                {entry.label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

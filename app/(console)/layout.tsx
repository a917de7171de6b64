import type { Metadata } from "next";
import type { ReactNode } from "react";
import { ConsoleHeader } from "@/components/console/console-header";
import { QueryProvider } from "@/components/console/query-provider";
import { getSessionClaims } from "@/lib/auth/session";
import { loadStaffContext } from "@/lib/auth/staff-context";
import { getPrisma } from "@/lib/db/client";

export const metadata: Metadata = { title: "Support console" };

/**
 * The console's frame: header and the query client. It does not redirect anonymous visitors itself — each
 * page does (requireStaffPage), so the sign-in page can send them back to the exact page they asked for.
 */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const claims = await getSessionClaims();
  const staff = claims ? await loadStaffContext(await getPrisma(), claims) : null;
  return (
    <QueryProvider>
      <a
        href="#main"
        className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-50 focus:rounded focus:bg-white focus:px-3 focus:py-2"
      >
        Skip to content
      </a>
      {staff ? <ConsoleHeader staff={staff} /> : null}
      <main id="main" className="mx-auto max-w-6xl px-4 py-6">
        {children}
      </main>
    </QueryProvider>
  );
}

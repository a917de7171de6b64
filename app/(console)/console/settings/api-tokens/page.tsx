import type { Metadata } from "next";
import Link from "next/link";
import { requireStaffPage } from "@/lib/auth/session";
import { shopApiTokens } from "@/lib/console/api-tokens";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { AdminsOnly } from "../admins-only";
import { ApiTokensView } from "./api-tokens-view";

export const metadata: Metadata = { title: "API tokens · Settings · Support console" };
export const dynamic = "force-dynamic";

/** The shop's JSON API tokens: create (shown once), list, revoke. Admins only, checked in the data layer. */
export default async function ApiTokensPage() {
  const staff = await requireStaffPage("/console/settings/api-tokens");
  let tokens: Awaited<ReturnType<typeof shopApiTokens>>;
  try {
    tokens = await shopApiTokens(await getPrisma(), staff);
  } catch (err) {
    if (err instanceof AppError && err.code === "FORBIDDEN") return <AdminsOnly />;
    throw err;
  }
  return (
    <div className="space-y-4">
      <div>
        <h1 className="text-xl font-semibold">API tokens</h1>
        <p className="text-sm text-slate-600">
          Bearer tokens for the JSON API of {staff.tenantName} (<code>/api/v1</code>). Each token works for this shop only, with the scopes
          you give it. See the{" "}
          <Link href="/docs/api" className="font-medium text-blue-700 underline">
            API reference
          </Link>
          .
        </p>
      </div>
      <ApiTokensView initialTokens={tokens} />
    </div>
  );
}

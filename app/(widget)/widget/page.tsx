import type { Metadata } from "next";
import { headers } from "next/headers";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { getRuntime } from "@/lib/runtime/shared-runtime";
import { appOriginsFromHeaders, isAllowedParentOrigin, normalizeOrigin } from "@/lib/widget/origins";
import { widgetTenant, type WidgetTenant } from "@/lib/widget/session";
import { WidgetApp } from "@/components/widget/widget-app";

export const dynamic = "force-dynamic";

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

const one = (v: string | string[] | undefined) => (typeof v === "string" ? v : null);

async function tenantOrNull(slug: string | null): Promise<WidgetTenant | null> {
  if (!slug) return null;
  try {
    return await widgetTenant(await getPrisma(), slug);
  } catch (err) {
    if (err instanceof AppError) return null;
    throw err;
  }
}

export async function generateMetadata({ searchParams }: { searchParams: SearchParams }): Promise<Metadata> {
  const tenant = await tenantOrNull(one((await searchParams).shop));
  return { title: tenant ? `Chat with ${tenant.name}` : "Support chat", robots: { index: false } };
}

/**
 * The widget iframe: /widget?shop=<slug>&parent=<origin of the page that embeds it>. The parent origin is
 * checked here against the shop's allowed origins (empty list: this app's own origin only); the client
 * then talks to exactly that origin and nothing else.
 */
export default async function WidgetPage({ searchParams }: { searchParams: SearchParams }) {
  const params = await searchParams;
  const tenant = await tenantOrNull(one(params.shop));
  if (!tenant) {
    return (
      <main className="flex h-dvh items-center justify-center bg-white p-6 text-center text-sm text-slate-700">
        <p role="alert">This chat isn&apos;t available. Please check the shop&apos;s website for other ways to reach them.</p>
      </main>
    );
  }
  const rawParent = one(params.parent);
  const parent = normalizeOrigin(rawParent);
  const allowed = parent !== null && isAllowedParentOrigin(parent, tenant.allowedOrigins, appOriginsFromHeaders(await headers()));
  const runtime = await getRuntime();
  return (
    <main className="h-dvh bg-white">
      <WidgetApp
        shop={tenant.slug}
        shopName={tenant.name}
        parentOrigin={allowed ? parent : null}
        parentRefused={rawParent !== null && !allowed}
        offline={runtime.model.mode === "offline"}
      />
    </main>
  );
}

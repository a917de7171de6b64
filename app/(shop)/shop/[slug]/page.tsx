import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { signCustomerIdentity } from "@/lib/widget/identity";
import { widgetTenant, type WidgetTenant } from "@/lib/widget/session";

export const dynamic = "force-dynamic";

/**
 * A demo storefront. It embeds the support widget exactly as any shop would — one script tag — and stands
 * in for the shop's own backend too: for a signed-in shopper it signs their identity with the shop's widget
 * secret, here on the server, and hands the token to the embed. Switching shopper is a full page load, like
 * signing in or out on a real site, and starts a fresh conversation for that identity.
 */

// The demo seed's shoppers (lib/setup/seed), at reserved domains no real person has: the only identities this page ever
// signs. Any other shop's customers are real people: only that shop's own backend, which holds its secret, vouches
// for them — on any other shop this page is browsed anonymously.
const DEMO_SHOPPERS = ["dana@example.com", "sam@example.com", "hank@globex.test"];
// Long enough for a browsing session, well under the one-hour ceiling the widget enforces.
const IDENTITY_TTL_SECONDS = 30 * 60;

const PRODUCTS = [
  { name: "Ridgeline 40L Pack", price: "$189.00", tone: "from-emerald-300 to-emerald-600" },
  { name: "Summit Down Jacket", price: "$250.00", tone: "from-sky-300 to-sky-600" },
  { name: "Trailhead Boots", price: "$160.00", tone: "from-amber-300 to-amber-600" },
  { name: "Basecamp 2P Tent", price: "$420.00", tone: "from-lime-300 to-lime-600" },
  { name: "Camp Mug, Enamel", price: "$18.00", tone: "from-rose-300 to-rose-600" },
  { name: "Headlamp 400", price: "$42.50", tone: "from-violet-300 to-violet-600" },
];

/** A mountain mark (inline SVG: no emoji font or image request needed). */
function MountainMark({ className }: { className?: string }) {
  return (
    <svg viewBox="0 0 48 32" className={className} aria-hidden="true" fill="currentColor">
      <circle cx="36" cy="8" r="4" opacity="0.7" />
      <path d="M2 30 L17 8 L25 19 L30 13 L46 30 Z" />
    </svg>
  );
}

async function shopOr404(slug: string): Promise<WidgetTenant> {
  try {
    return await widgetTenant(await getPrisma(), slug);
  } catch (err) {
    if (err instanceof AppError && err.code === "NOT_FOUND") notFound();
    throw err;
  }
}

async function demoShoppers(tenantId: string) {
  const db = await getPrisma();
  return await db.customer.findMany({
    where: { tenantId, email: { in: DEMO_SHOPPERS } },
    orderBy: { email: "asc" },
    select: { email: true, name: true },
  });
}

const keyOf = (email: string) => email.split("@")[0]!;

export async function generateMetadata({ params }: { params: Promise<{ slug: string }> }): Promise<Metadata> {
  const tenant = await shopOr404((await params).slug);
  return { title: `${tenant.name} — outdoor gear` };
}

export default async function ShopPage({
  params,
  searchParams,
}: {
  params: Promise<{ slug: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const tenant = await shopOr404((await params).slug);
  const as = (await searchParams).as;
  const shoppers = await demoShoppers(tenant.id);
  const shopper = typeof as === "string" ? (shoppers.find((s) => keyOf(s.email) === as) ?? null) : null;
  // The shop's backend signs who is signed in; the page only ever carries the short-lived token.
  const identityToken = shopper
    ? await signCustomerIdentity(tenant.widgetSecret, shopper.email, IDENTITY_TTL_SECONDS, { shop: tenant.slug })
    : null;
  const base = `/shop/${tenant.slug}`;

  return (
    <div className="min-h-screen overflow-x-hidden bg-stone-50 text-stone-900">
      <header className="border-b border-stone-200 bg-white">
        <div className="mx-auto flex max-w-5xl flex-wrap items-center gap-x-6 gap-y-3 px-4 py-4">
          <a href={base} className="flex items-center gap-2 text-xl font-bold tracking-tight text-emerald-900">
            <MountainMark className="h-6 w-9" />
            {tenant.name}
          </a>
          <nav aria-label="Shop" className="hidden gap-4 text-sm text-stone-600 sm:flex">
            <span>Packs</span>
            <span>Jackets</span>
            <span>Footwear</span>
            <span>Camp</span>
          </nav>
          <div className="ml-auto text-sm text-stone-700" data-testid="shop-signed-in">
            {shopper ? `Signed in as ${shopper.name}` : "Not signed in"}
          </div>
        </div>
        <nav aria-label="Browse as (demo)" className="border-t border-stone-100 bg-stone-100/70">
          <div className="mx-auto flex max-w-5xl flex-wrap items-center gap-2 px-4 py-2 text-sm">
            <span className="font-medium text-stone-600">Browse as:</span>
            {[{ key: null, label: "anonymous" }, ...shoppers.map((s) => ({ key: keyOf(s.email), label: s.name }))].map((o) => {
              const current = (o.key ?? null) === (shopper ? keyOf(shopper.email) : null);
              return (
                <a
                  key={o.label}
                  href={o.key ? `${base}?as=${encodeURIComponent(o.key)}` : base}
                  aria-current={current ? "page" : undefined}
                  className={`rounded-full px-3 py-1 ${current ? "bg-emerald-800 text-white" : "bg-white text-stone-700 ring-1 ring-stone-300 hover:bg-stone-50"}`}
                >
                  {o.label}
                </a>
              );
            })}
          </div>
        </nav>
      </header>

      <main className="mx-auto max-w-5xl px-4 pb-32">
        <section className="my-8 rounded-2xl bg-gradient-to-br from-emerald-900 to-emerald-700 px-6 py-10 text-white">
          <h1 className="text-3xl font-bold">Gear for the long way round</h1>
          <p className="mt-2 max-w-prose text-emerald-100">
            Free returns within 30 days. Questions about an order? Our support chat answers right away, and a person from our team is always
            a click away.
          </p>
        </section>
        <h2 className="mb-4 text-lg font-semibold">Bestsellers</h2>
        <ul className="grid grid-cols-2 gap-4 md:grid-cols-3">
          {PRODUCTS.map((p) => (
            <li key={p.name} className="overflow-hidden rounded-xl bg-white ring-1 ring-stone-200">
              <div className={`flex aspect-[4/3] items-center justify-center bg-gradient-to-br text-white/80 ${p.tone}`} aria-hidden="true">
                <MountainMark className="h-12 w-20" />
              </div>
              <div className="p-3">
                <p className="text-sm font-medium">{p.name}</p>
                <p className="text-sm text-stone-600">{p.price}</p>
              </div>
            </li>
          ))}
        </ul>
      </main>
      <footer className="border-t border-stone-200 bg-white py-6 text-center text-xs text-stone-500">
        {tenant.name} is a demo shop. The chat bubble in the corner is the support widget, embedded with one script tag.
      </footer>

      {/* The embed, exactly as a shop pastes it (plus the signed identity when someone is signed in). */}
      <script src="/embed.js" data-shop={tenant.slug} data-customer-token={identityToken ?? undefined} async />
    </div>
  );
}

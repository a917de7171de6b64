import type { Metadata } from "next";
import Link from "next/link";
import { LocalTime } from "@/components/ui/local-time";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { formatCents } from "@/lib/money";
import { policySettings } from "@/lib/settings/policy";
import { AdminsOnly } from "../admins-only";
import { PolicyEditor } from "./policy-editor";

export const metadata: Metadata = { title: "Policy · Settings · Support console" };
export const dynamic = "force-dynamic";

/**
 * The shop's policy: every rule in a form, a what-if over the recent gated calls before publishing, the version in
 * force with who published it when, and the history of versions with each change in words.
 */
export default async function PolicySettingsPage({ searchParams }: { searchParams: Promise<{ published?: string }> }) {
  const staff = await requireStaffPage("/console/settings/policy");
  if (staff.role !== "admin") return <AdminsOnly />;
  const settings = await policySettings(await getPrisma(), staff);
  const { published } = await searchParams;
  const { current } = settings;
  return (
    <div className="space-y-4">
      {published && Number(published) === current.version ? (
        <Notice tone="success" data-testid="policy-published">
          Published version {current.version}. New conversations use it from now on; runs already in progress keep the version they started
          with.
        </Notice>
      ) : null}
      <p className="text-sm text-slate-700" data-testid="policy-current">
        <span className="font-medium">Version {current.version}</span> is in force — published{" "}
        {current.publishedBy ? `by ${current.publishedBy.name} ` : "at the shop's setup "}
        <LocalTime at={current.publishedAt} />.
      </p>

      <PolicyEditor key={current.version} baseVersion={current.version} rules={current.rules} knownTools={settings.knownTools} />

      <Section title="Approval authority" id="authorities">
        <p className="mb-2 text-sm text-slate-600">
          Who may approve how much is set per person on the{" "}
          <Link href="/console/settings/staff" className="text-blue-700 underline">
            staff page
          </Link>
          .
        </p>
        <ul className="grid gap-1 text-sm sm:grid-cols-2">
          {settings.authorities.map((a) => (
            <li key={a.name}>
              <span className="font-medium">{a.name}</span> <span className="text-slate-600">({a.role})</span>:{" "}
              {a.authorityLimitCents === null ? "any amount" : `up to ${formatCents(a.authorityLimitCents)}`}
            </li>
          ))}
        </ul>
      </Section>

      <Section title="History" id="policy-history">
        <ol className="space-y-3" data-testid="policy-history">
          {settings.history.map((v) => (
            <li key={v.version} className="text-sm" data-testid="policy-version" data-version={v.version}>
              <p>
                <span className="font-medium">Version {v.version}</span>
                {v.version === current.version ? <span className="text-emerald-800"> (in force)</span> : null} —{" "}
                {v.publishedBy ? `${v.publishedBy.name} (${v.publishedBy.email})` : "the shop's setup"}, <LocalTime at={v.publishedAt} />
              </p>
              {v.changes.length ? (
                <ul className="ml-5 list-disc text-slate-700">
                  {v.changes.map((c) => (
                    <li key={c}>{c}</li>
                  ))}
                </ul>
              ) : (
                <p className="ml-5 text-slate-600">{v.version === 1 ? "The first version." : "No changes recorded."}</p>
              )}
            </li>
          ))}
        </ol>
      </Section>
    </div>
  );
}

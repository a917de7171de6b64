import Link from "next/link";
import { systemStatus } from "@/lib/system-status";

export const dynamic = "force-dynamic";

export default async function Home() {
  const status = await systemStatus();
  return (
    <main className="mx-auto max-w-2xl p-8">
      <h1 className="text-2xl font-semibold">Human-in-the-loop support agent</h1>
      <p className="mt-2 text-slate-600">
        A support agent that parks risky actions for a person, and resumes them exactly once when approved.
      </p>
      <h2 className="mt-8 text-lg font-semibold">What runs</h2>
      <dl className="mt-3 grid grid-cols-[max-content_1fr] gap-x-6 gap-y-2 text-sm">
        <dt className="font-medium">Database</dt>
        <dd data-testid="status-database">{status.database}</dd>
        <dt className="font-medium">Model</dt>
        <dd data-testid="status-model">{status.model}</dd>
      </dl>
      <h2 className="mt-8 text-lg font-semibold">Try it</h2>
      <ul className="mt-3 list-disc space-y-1 pl-6 text-sm">
        <li>
          <Link className="text-blue-700 underline" href="/shop/acme">
            The Acme Outfitters demo shop
          </Link>{" "}
          with the chat widget embedded (browse anonymously or as Dana or Sam).
        </li>
        <li>
          <Link className="text-blue-700 underline" href="/console">
            The reviewer console
          </Link>{" "}
          — sign in as raj@acme.test / demo-password (see the README for every login).
        </li>
      </ul>
    </main>
  );
}

import Link from "next/link";

/** What a reviewer or supervisor sees on a settings page: a plain refusal (the actions refuse them too). */
export function AdminsOnly() {
  return (
    <div role="alert" className="mx-auto max-w-lg rounded-lg border border-amber-300 bg-amber-50 p-6 text-center">
      <h1 className="text-lg font-semibold">Admins only</h1>
      <p className="mt-2 text-sm">The shop's settings — policy, staff, the widget and API tokens — are open to its admins.</p>
      <p className="mt-4">
        <Link href="/console" className="text-sm font-medium text-blue-700 underline">
          Back to the queue
        </Link>
      </p>
    </div>
  );
}

import Link from "next/link";

/** Shown for ids that do not exist in the reviewer's shop — including another shop's ids. */
export default function ConsoleNotFound() {
  return (
    <div className="mx-auto max-w-lg rounded-lg border border-slate-200 bg-white p-6 text-center">
      <h1 className="text-lg font-semibold">Not found</h1>
      <p className="mt-2 text-sm text-slate-700">This item does not exist in your shop, or it was removed.</p>
      <p className="mt-4">
        <Link href="/console" className="text-sm font-medium text-blue-700 underline">
          Back to the queue
        </Link>
      </p>
    </div>
  );
}

import Link from "next/link";

/** What a reviewer sees on a supervisor page: a plain refusal (the data routes refuse them too). */
export function SupervisorsOnly() {
  return (
    <div role="alert" className="mx-auto max-w-lg rounded-lg border border-amber-300 bg-amber-50 p-6 text-center">
      <h1 className="text-lg font-semibold">Supervisors and admins only</h1>
      <p className="mt-2 text-sm">Runs and transcripts are open to supervisors and admins of your shop.</p>
      <p className="mt-4">
        <Link href="/console" className="text-sm font-medium text-blue-700 underline">
          Back to the queue
        </Link>
      </p>
    </div>
  );
}

"use client";
import { Button } from "@/components/ui/button";

/** Anything unexpected while rendering a console page: a calm message, no internals, a retry. */
export default function ConsoleError({ reset }: { error: Error; reset: () => void }) {
  return (
    <div role="alert" className="mx-auto max-w-lg rounded-lg border border-red-200 bg-red-50 p-6 text-center">
      <h1 className="text-lg font-semibold text-red-900">Something went wrong on our side</h1>
      <p className="mt-2 text-sm text-red-900">Nothing was changed by loading this page.</p>
      <Button className="mt-4" onClick={reset}>
        Try again
      </Button>
    </div>
  );
}

"use client";

import { Button } from "@/components/ui/button";
import { Input } from "@/components/ui/field";
import { useCopy } from "@/components/ui/use-copy";

/**
 * A secret shown once (a new API token, a webhook's signing secret): read-only, selected on focus, with a Copy button
 * and a polite live line that says whether copying worked — the clipboard may be refused, and then it is copied by hand.
 */
export function CopyOnce(a: { value: string; label: string; noun: string; testId: string }) {
  const [copied, copy] = useCopy(a.value);
  return (
    <div className="flex flex-wrap items-center gap-2">
      <Input
        readOnly
        aria-label={a.label}
        value={a.value}
        data-testid={a.testId}
        className="max-w-xl font-mono"
        onFocus={(e) => e.currentTarget.select()}
      />
      <Button onClick={copy}>Copy</Button>
      <span aria-live="polite" className="text-sm text-slate-700">
        {copied === true ? "Copied" : copied === false ? `Copying failed: select the ${a.noun} and copy it by hand.` : ""}
      </span>
    </div>
  );
}

"use client";

import { useState } from "react";
import { Button } from "@/components/ui/button";
import { Input } from "@/components/ui/field";

/**
 * A secret shown once (a new API token, a webhook's signing secret): read-only, selected on focus, with a Copy button
 * and a polite live line that says whether copying worked — the clipboard may be refused, and then it is copied by hand.
 */
export function CopyOnce(a: { value: string; label: string; noun: string; testId: string }) {
  const [copied, setCopied] = useState<"yes" | "failed" | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(a.value);
      setCopied("yes");
    } catch {
      setCopied("failed");
    }
  };
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
        {copied === "yes" ? "Copied" : copied === "failed" ? `Copying failed: select the ${a.noun} and copy it by hand.` : ""}
      </span>
    </div>
  );
}

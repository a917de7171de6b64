"use client";

import { useCallback, useState } from "react";

/**
 * Copying a text to the clipboard, and whether it worked: null until tried, then true or false (the browser may refuse
 * the clipboard, and the user then copies by hand — each caller says so in its own words).
 */
export function useCopy(text: string): [copied: boolean | null, copy: () => Promise<void>] {
  const [copied, setCopied] = useState<boolean | null>(null);
  const copy = useCallback(async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  }, [text]);
  return [copied, copy];
}

"use client";
import { useEffect, useState } from "react";

/** The current time, re-rendering every `everyMs`: for clocks that tick (ages, expiries). */
export function useNow(everyMs = 1000, initial?: number): number {
  const [now, setNow] = useState(() => initial ?? Date.now());
  useEffect(() => {
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

"use client";
import { useEffect, useRef } from "react";

/** True while the person is typing somewhere: single-letter shortcuts must not fire then. */
export function isTypingTarget(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT";
}

/**
 * Page-wide single-key shortcuts (e.g. { j: next, k: previous }). Ignored while typing in a field and when a
 * modifier is held, so browser and screen-reader shortcuts keep working. A handler that returns `false`
 * leaves the key to the browser (e.g. Enter on a focused link).
 */
export function useShortcuts(map: Record<string, (e: KeyboardEvent) => boolean | void>, enabled = true) {
  const ref = useRef(map);
  ref.current = map;
  useEffect(() => {
    if (!enabled) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.metaKey || e.ctrlKey || e.altKey || e.repeat) return;
      if (isTypingTarget(e.target)) return;
      const fn = ref.current[e.key];
      if (!fn) return;
      if (fn(e) !== false) e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [enabled]);
}

import type { ReactNode } from "react";
import { cx } from "./cx";

const TONES = {
  gray: "bg-slate-100 text-slate-800 ring-slate-300",
  blue: "bg-blue-50 text-blue-800 ring-blue-300",
  green: "bg-emerald-50 text-emerald-800 ring-emerald-300",
  amber: "bg-amber-50 text-amber-900 ring-amber-300",
  red: "bg-red-50 text-red-800 ring-red-300",
  violet: "bg-violet-50 text-violet-800 ring-violet-300",
} as const;

export type BadgeTone = keyof typeof TONES;

/** A small label. Tone is decoration only: the text always says what the colour means. */
export function Badge({
  tone = "gray",
  children,
  className,
  ...rest
}: { tone?: BadgeTone; children: ReactNode; className?: string } & React.HTMLAttributes<HTMLSpanElement>) {
  return (
    <span
      className={cx(
        "inline-flex items-center gap-1 rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset whitespace-nowrap",
        TONES[tone],
        className,
      )}
      {...rest}
    >
      {children}
    </span>
  );
}

import type { ReactNode } from "react";
import { cx } from "./cx";

const TONES = {
  info: "border-blue-200 bg-blue-50 text-blue-900",
  success: "border-emerald-200 bg-emerald-50 text-emerald-900",
  warning: "border-amber-300 bg-amber-50 text-amber-950",
  error: "border-red-200 bg-red-50 text-red-900",
} as const;

/**
 * A message box. `role="alert"` for failures the person must notice now; `role="status"` for outcomes.
 * Inside a live region that already exists on the page (the reliable way to announce), pass `role="none"`.
 */
export function Notice({
  tone = "info",
  children,
  className,
  role,
  ...rest
}: { tone?: keyof typeof TONES; children: ReactNode; className?: string; role?: "alert" | "status" | "none" } & Omit<
  React.HTMLAttributes<HTMLDivElement>,
  "role"
>) {
  const resolved = role ?? (tone === "error" ? "alert" : "status");
  return (
    <div
      role={resolved === "none" ? undefined : resolved}
      className={cx("rounded-md border px-3 py-2 text-sm", TONES[tone], className)}
      {...rest}
    >
      {children}
    </div>
  );
}

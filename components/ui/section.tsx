import type { ReactNode } from "react";
import { cx } from "./cx";

/** A titled panel; the heading level is chosen by the page so the outline stays correct. */
export function Section({
  title,
  level = 2,
  actions,
  children,
  className,
  id,
}: {
  title: ReactNode;
  level?: 2 | 3;
  actions?: ReactNode;
  children: ReactNode;
  className?: string;
  id?: string;
}) {
  const H = level === 2 ? "h2" : "h3";
  return (
    <section
      aria-labelledby={id ? `${id}-title` : undefined}
      className={cx("rounded-lg border border-slate-200 bg-white p-4 shadow-sm", className)}
    >
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <H id={id ? `${id}-title` : undefined} className="text-base font-semibold text-slate-900">
          {title}
        </H>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** Text only screen readers read. */
export function VisuallyHidden({ children }: { children: ReactNode }) {
  return <span className="sr-only">{children}</span>;
}

import { cx } from "@/components/ui/cx";

/** Pretty-printed JSON, as data (never as HTML). */
export function JsonView({ value, label, className }: { value: unknown; label?: string; className?: string }) {
  return (
    <pre
      aria-label={label}
      tabIndex={0}
      className={cx("overflow-x-auto rounded-md bg-slate-900 p-3 text-xs leading-relaxed text-slate-100", className)}
    >
      <code>{JSON.stringify(value, null, 2)}</code>
    </pre>
  );
}

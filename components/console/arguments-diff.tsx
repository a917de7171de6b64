import { cx } from "@/components/ui/cx";
import type { FieldDiff } from "@/lib/console/diff";

const LABEL = { same: "unchanged", changed: "changed", added: "added", removed: "removed" } as const;

function show(v: unknown): string {
  return v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v);
}

/** Original vs edited arguments, field by field; changed rows are marked in text, not only in colour. */
export function ArgumentsDiff({ rows, caption = "Original and edited arguments" }: { rows: FieldDiff[]; caption?: string }) {
  return (
    <table className="w-full table-fixed border-collapse text-sm" data-testid="arguments-diff">
      <caption className="mb-1 text-left text-xs font-medium text-slate-600">{caption}</caption>
      <thead>
        <tr className="text-left text-xs text-slate-600">
          <th scope="col" className="w-[34%] py-1 pr-2 font-medium">
            Field
          </th>
          <th scope="col" className="py-1 pr-2 font-medium">
            Original
          </th>
          <th scope="col" className="py-1 pr-2 font-medium">
            Edited
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr
            key={r.path}
            data-change={r.change}
            className={cx("border-t border-slate-200 align-top", r.change !== "same" && "bg-amber-50")}
          >
            <th scope="row" className="py-1 pr-2 text-left font-mono text-xs font-normal [overflow-wrap:anywhere]">
              {r.path}
              {r.change !== "same" ? (
                <span className="mt-0.5 block w-fit rounded bg-amber-200 px-1 text-[10px] font-semibold uppercase text-amber-950">
                  {LABEL[r.change]}
                </span>
              ) : null}
            </th>
            <td
              className={cx("py-1 pr-2 font-mono text-xs break-all", r.change !== "same" && "text-red-800 line-through decoration-red-400")}
            >
              {r.change === "added" ? "—" : show(r.before)}
            </td>
            <td className={cx("py-1 pr-2 font-mono text-xs break-all", r.change !== "same" && "font-semibold text-emerald-800")}>
              {r.change === "removed" ? "—" : show(r.after)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

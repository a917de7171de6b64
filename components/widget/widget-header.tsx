"use client";

/** Shop name, who is signed in, the always-present "Talk to a person" action, and close (when embedded). */
export function WidgetHeader(a: {
  shopName: string;
  customerName: string | null;
  personState: "available" | "requesting" | "requested" | "with_person";
  onTalkToPerson: (() => void) | null;
  onClose: (() => void) | null;
}) {
  const label =
    a.personState === "with_person"
      ? "With a person"
      : a.personState === "requested"
        ? "Person requested"
        : a.personState === "requesting"
          ? "Asking…"
          : "Talk to a person";
  return (
    <header className="flex shrink-0 items-center gap-2 bg-slate-900 px-3 py-2.5 text-white">
      <div className="min-w-0 flex-1">
        <h1 className="truncate text-base font-semibold leading-tight">{a.shopName}</h1>
        <p className="truncate text-xs text-slate-300" data-testid="widget-identity">
          {a.customerName ? `Signed in as ${a.customerName}` : "Support chat"}
        </p>
      </div>
      <button
        type="button"
        onClick={a.onTalkToPerson ?? undefined}
        disabled={!a.onTalkToPerson || a.personState !== "available"}
        className="inline-flex h-9 shrink-0 items-center rounded-lg bg-white px-3 text-sm font-semibold text-slate-900 hover:bg-slate-200 disabled:cursor-default disabled:bg-slate-700 disabled:text-slate-100"
      >
        {label}
      </button>
      {a.onClose ? (
        <button
          type="button"
          onClick={a.onClose}
          aria-label="Close chat"
          className="inline-flex h-9 w-9 shrink-0 items-center justify-center rounded-lg text-xl leading-none text-slate-200 hover:bg-slate-800"
        >
          <span aria-hidden="true">×</span>
        </button>
      ) : null}
    </header>
  );
}

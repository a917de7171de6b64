"use client";
import { useMemo, useState, type RefObject } from "react";
import { Button } from "@/components/ui/button";
import { Field, Input, Textarea } from "@/components/ui/field";
import { ArgumentsDiff } from "@/components/console/arguments-diff";
import { diffArguments, hasChanges } from "@/lib/console/diff";
import { formatCents } from "@/lib/money";

type Args = Record<string, unknown>;

/** Dollars as typed ("150", "150.5", "$1,200.00") → cents, or null when it is not an amount. */
export function dollarsToCents(raw: string): number | null {
  const clean = raw.replace(/[$,\s]/g, "");
  if (!/^\d+(\.\d{1,2})?$/.test(clean)) return null;
  const cents = Math.round(Number(clean) * 100);
  return cents > 0 ? cents : null;
}

function RefundFields({
  base,
  onChange,
  firstFieldRef,
  disabled,
}: {
  base: Args;
  onChange: (a: Args | null, error?: string) => void;
  firstFieldRef: RefObject<HTMLInputElement | null>;
  disabled: boolean;
}) {
  const [amount, setAmount] = useState(typeof base.amount_cents === "number" ? (base.amount_cents / 100).toFixed(2) : "");
  const [reason, setReason] = useState(typeof base.reason === "string" ? base.reason : "");
  const update = (a: string, r: string) => {
    const cents = dollarsToCents(a);
    if (cents === null) return onChange(null, "Enter an amount in dollars, e.g. 150 or 150.00.");
    if (!r.trim()) return onChange(null, "A reason is required.");
    onChange({ ...base, amount_cents: cents, reason: r.trim() });
  };
  return (
    <div className="grid gap-3 sm:grid-cols-2">
      <Field
        id="edit-amount"
        label="Refund amount ($)"
        hint={`Order ${String(base.order_number ?? "")} — the order itself cannot be changed.`}
      >
        <Input
          id="edit-amount"
          ref={firstFieldRef}
          inputMode="decimal"
          value={amount}
          disabled={disabled}
          aria-describedby="edit-amount-hint"
          onChange={(e) => {
            setAmount(e.target.value);
            update(e.target.value, reason);
          }}
        />
      </Field>
      <Field id="edit-reason" label="Reason">
        <Input
          id="edit-reason"
          value={reason}
          disabled={disabled}
          onChange={(e) => {
            setReason(e.target.value);
            update(amount, e.target.value);
          }}
        />
      </Field>
    </div>
  );
}

function JsonFields({
  base,
  onChange,
  firstFieldRef,
  disabled,
}: {
  base: Args;
  onChange: (a: Args | null, error?: string) => void;
  firstFieldRef: RefObject<HTMLTextAreaElement | null>;
  disabled: boolean;
}) {
  const [text, setText] = useState(JSON.stringify(base, null, 2));
  return (
    <Field id="edit-json" label="Arguments (JSON)" hint="Checked by the same rules again on the server before anything runs.">
      <Textarea
        id="edit-json"
        ref={firstFieldRef}
        rows={8}
        spellCheck={false}
        className="font-mono text-xs"
        value={text}
        disabled={disabled}
        aria-describedby="edit-json-hint"
        onChange={(e) => {
          setText(e.target.value);
          try {
            const parsed: unknown = JSON.parse(e.target.value);
            if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) onChange(null, "The arguments must be a JSON object.");
            else onChange(parsed as Args);
          } catch {
            onChange(null, "This is not valid JSON yet.");
          }
        }}
      />
    </Field>
  );
}

/**
 * Edit-and-approve: refund_order gets an amount (in dollars) and a reason, other tools a JSON editor. The
 * change is shown as a diff against the model's original call before it can be sent; the server re-checks
 * the edit with every gate, under this reviewer's authority.
 */
export function EditArguments({
  toolName,
  original,
  base,
  disabled,
  pending,
  authorityLimitCents,
  firstFieldRef,
  onSubmit,
  onCancel,
}: {
  toolName: string;
  original: Args;
  base: Args;
  disabled: boolean;
  pending: boolean;
  /** the reviewer's approval authority (null: none): an edit above it cannot be sent */
  authorityLimitCents: number | null;
  firstFieldRef: RefObject<HTMLInputElement | HTMLTextAreaElement | null>;
  onSubmit: (edited: Args) => void;
  onCancel: () => void;
}) {
  const [edited, setEdited] = useState<Args | null>(base);
  const [error, setError] = useState<string | undefined>();
  const rows = useMemo(() => (edited ? diffArguments(original, edited) : []), [original, edited]);
  const changed = edited !== null && hasChanges(rows);
  const editedCents = typeof edited?.amount_cents === "number" ? edited.amount_cents : null;
  const overAuthority = authorityLimitCents !== null && editedCents !== null && editedCents > authorityLimitCents;
  const onChange = (a: Args | null, err?: string) => {
    setEdited(a);
    setError(err);
  };
  return (
    <form
      aria-label="Edit the arguments and approve"
      className="space-y-3"
      onSubmit={(e) => {
        e.preventDefault();
        if (edited && changed && !overAuthority) onSubmit(edited);
      }}
    >
      {toolName === "refund_order" ? (
        <RefundFields
          base={base}
          onChange={onChange}
          firstFieldRef={firstFieldRef as RefObject<HTMLInputElement | null>}
          disabled={disabled || pending}
        />
      ) : (
        <JsonFields
          base={base}
          onChange={onChange}
          firstFieldRef={firstFieldRef as RefObject<HTMLTextAreaElement | null>}
          disabled={disabled || pending}
        />
      )}
      {error ? (
        <p role="alert" className="text-sm text-red-700">
          {error}
        </p>
      ) : null}
      {overAuthority ? (
        <p id="edit-authority" role="alert" className="text-sm text-amber-900" data-testid="edit-authority">
          {formatCents(editedCents!)} is above your approval authority of {formatCents(authorityLimitCents!)}.
        </p>
      ) : null}
      {edited ? <ArgumentsDiff rows={rows} caption="Your edit, against the call the agent proposed" /> : null}
      <div className="flex flex-wrap gap-2">
        <Button
          type="submit"
          variant="approve"
          disabled={disabled || pending || !changed || overAuthority}
          aria-busy={pending}
          aria-describedby={overAuthority ? "edit-authority" : undefined}
        >
          {pending ? "Approving with edits…" : "Approve with edits"}
        </Button>
        <Button onClick={onCancel} disabled={pending}>
          Cancel edit
        </Button>
        {!changed && edited ? <p className="self-center text-xs text-slate-600">Change something to approve with edits.</p> : null}
      </div>
    </form>
  );
}

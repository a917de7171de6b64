"use client";
import { useState } from "react";
import { Button } from "@/components/ui/button";
import { Field, Input, Select } from "@/components/ui/field";
import { DEFAULT_QUEUE_FILTER, queueFilterSchema, type QueueFilter } from "@/lib/console/filters";

/** The queue's filters. Selects apply at once; amounts apply when they are valid numbers. */
export function QueueFilters({ value, onChange }: { value: QueueFilter; onChange: (f: QueueFilter) => void }) {
  // Amount fields keep what is typed (e.g. "1." on the way to "1.5"); the filter takes only valid values.
  const [min, setMin] = useState(value.min?.toString() ?? "");
  const [max, setMax] = useState(value.max?.toString() ?? "");
  const set = (patch: Record<string, unknown>) => {
    const parsed = queueFilterSchema.safeParse({ ...value, ...patch });
    if (parsed.success) onChange(parsed.data);
  };
  return (
    <form
      role="search"
      aria-label="Filter the queue"
      onSubmit={(e) => e.preventDefault()}
      className="grid grid-cols-2 gap-3 rounded-lg border border-slate-200 bg-white p-3 sm:grid-cols-3 lg:grid-cols-7"
    >
      <Field id="f-status" label="Status">
        <Select id="f-status" value={value.status} onChange={(e) => set({ status: e.target.value })}>
          <option value="pending">Open</option>
          <option value="decided">Decided</option>
          <option value="all">All</option>
        </Select>
      </Field>
      <Field id="f-kind" label="Kind">
        <Select id="f-kind" value={value.kind} onChange={(e) => set({ kind: e.target.value })}>
          <option value="all">All</option>
          <option value="approval">Approvals</option>
          <option value="escalation">Escalations</option>
        </Select>
      </Field>
      <Field id="f-claimed" label="Claimed by">
        <Select id="f-claimed" value={value.claimed} onChange={(e) => set({ claimed: e.target.value })}>
          <option value="anyone">Any</option>
          <option value="me">Me</option>
          <option value="others">Someone else</option>
          <option value="nobody">Nobody</option>
        </Select>
      </Field>
      <Field id="f-age" label="Age">
        <Select id="f-age" value={value.age} onChange={(e) => set({ age: e.target.value })}>
          <option value="any">Any</option>
          <option value="fresh">Under 15 min</option>
          <option value="aging">15 min – 1 h</option>
          <option value="overdue">Over 1 h</option>
        </Select>
      </Field>
      <Field id="f-min" label="Min amount ($)">
        <Input
          id="f-min"
          inputMode="decimal"
          value={min}
          onChange={(e) => {
            setMin(e.target.value);
            set({ min: e.target.value });
          }}
        />
      </Field>
      <Field id="f-max" label="Max amount ($)">
        <Input
          id="f-max"
          inputMode="decimal"
          value={max}
          onChange={(e) => {
            setMax(e.target.value);
            set({ max: e.target.value });
          }}
        />
      </Field>
      <div className="flex items-end">
        <Button
          className="w-full"
          onClick={() => {
            setMin("");
            setMax("");
            onChange(DEFAULT_QUEUE_FILTER);
          }}
        >
          Reset
        </Button>
      </div>
    </form>
  );
}

"use client";
import { useRouter } from "next/navigation";
import { useMemo, useState, useTransition } from "react";
import { Button } from "@/components/ui/button";
import { Field, Input } from "@/components/ui/field";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { previewPolicyAction, publishPolicyAction } from "@/lib/actions/settings";
import type { PolicyRules } from "@/lib/policy/policy";
import {
  type FieldErrors,
  formValuesOf,
  ORDER_STATUSES,
  POLICY_GROUPS,
  type PolicyField,
  type PolicyFormValues,
  policyChanges,
  rulesFromForm,
  TOOL_LABELS,
} from "@/lib/settings/policy-fields";
import type { WhatIfReport } from "@/lib/settings/what-if";
import { WhatIfView } from "./what-if-view";

const idOf = (path: string) => `policy-${path.replace(/\./g, "-")}`;

/**
 * The policy form: every rule, grouped, with errors inline as they are typed. "Preview changes" runs the what-if on
 * the draft; "Publish" is open once the exact draft was previewed, and writes the next version — refused if someone
 * published meanwhile.
 */
export function PolicyEditor({
  baseVersion,
  rules,
  knownTools,
}: {
  baseVersion: number;
  rules: PolicyRules;
  knownTools: readonly string[];
}) {
  const router = useRouter();
  const [values, setValues] = useState<PolicyFormValues>(() => formValuesOf(rules));
  const [showAll, setShowAll] = useState(false);
  const [serverErrors, setServerErrors] = useState<FieldErrors>({});
  const [days, setDays] = useState("28");
  const [preview, setPreview] = useState<{ report: WhatIfReport; draft: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const [busy, setBusy] = useState<"preview" | "publish" | null>(null);

  const parsed = useMemo(() => rulesFromForm(values, knownTools), [values, knownTools]);
  const draftKey = parsed.rules ? JSON.stringify(parsed.rules) : null;
  const changes = useMemo(() => (parsed.rules ? policyChanges(rules, parsed.rules) : []), [parsed.rules, rules]);
  const errors: FieldErrors = { ...serverErrors, ...(parsed.errors ?? {}) };
  // The form starts as the version in force (valid), so every error comes from an edit: show each as it appears.
  const shownError = (path: string) => errors[path];
  const previewIsCurrent = preview !== null && preview.draft === draftKey;
  const daysNumber = /^\d+$/.test(days) ? Number(days) : Number.NaN;
  const daysError = daysNumber >= 1 && daysNumber <= 90 ? null : "Between 1 and 90 days.";

  function set(path: string, value: PolicyFormValues[string]) {
    setValues((v) => ({ ...v, [path]: value }));
    setServerErrors((e) => {
      const { [path]: _gone, ...rest } = e;
      return rest;
    });
  }

  async function runPreview(page = 1) {
    setShowAll(true);
    setError(null);
    if (!parsed.rules || daysError) return;
    const draft = draftKey!;
    setBusy("preview");
    try {
      const result = await previewPolicyAction({ rules: parsed.rules, days: daysNumber, page });
      if (result.ok) setPreview({ report: result.data, draft });
      else {
        setError(result.error.message);
        setServerErrors((result.error.details?.fields as FieldErrors | undefined) ?? {});
      }
    } catch {
      setError("The preview did not answer. Try again.");
    } finally {
      setBusy(null);
    }
  }

  async function publish() {
    if (!parsed.rules || !previewIsCurrent) return;
    setBusy("publish");
    setError(null);
    try {
      const result = await publishPolicyAction({ baseVersion, rules: parsed.rules });
      if (result.ok) {
        startTransition(() => {
          router.replace(`/console/settings/policy?published=${result.data.version}`);
          router.refresh();
        });
        return;
      }
      setError(result.error.message);
      setServerErrors((result.error.details?.fields as FieldErrors | undefined) ?? {});
    } catch {
      setError("Publishing did not answer. Reload the page to see whether the new version is in force.");
    } finally {
      setBusy(null);
    }
  }

  const errorCount = Object.keys(errors).length;
  return (
    <form
      aria-label="Policy"
      className="space-y-4"
      onSubmit={(e) => {
        e.preventDefault();
        void runPreview();
      }}
      noValidate
    >
      {POLICY_GROUPS.map((group) => (
        <Section key={group.id} title={group.title} id={`group-${group.id}`}>
          <p className="-mt-2 mb-3 text-sm text-slate-600">{group.description}</p>
          <div className="grid gap-4 sm:grid-cols-2">
            {group.fields.map((field) => (
              <RuleField
                key={field.path}
                field={field}
                value={values[field.path]!}
                error={shownError(field.path)}
                knownTools={knownTools}
                onChange={(v) => set(field.path, v)}
              />
            ))}
          </div>
        </Section>
      ))}

      <Section title="Preview and publish" id="publish">
        {changes.length ? (
          <div className="mb-3 text-sm" data-testid="policy-draft-changes">
            <p className="font-medium">Your changes to version {baseVersion}:</p>
            <ul className="ml-5 list-disc text-slate-700">
              {changes.map((c) => (
                <li key={c.path}>{c.text}</li>
              ))}
            </ul>
          </div>
        ) : (
          <p className="mb-3 text-sm text-slate-600">No changes yet: this is version {baseVersion} as it is in force.</p>
        )}
        <div className="flex flex-wrap items-end gap-3">
          <Field id="what-if-days" label="Replay the gated calls of the last" hint="days (1–90)" error={showAll ? daysError : null}>
            <Input
              id="what-if-days"
              className="w-24"
              inputMode="numeric"
              value={days}
              aria-invalid={Boolean(daysError) || undefined}
              aria-describedby="what-if-days-hint"
              onChange={(e) => setDays(e.target.value)}
            />
          </Field>
          <Button type="submit" variant="secondary" disabled={busy !== null} aria-busy={busy === "preview"}>
            {busy === "preview" ? "Previewing…" : "Preview changes"}
          </Button>
          <Button
            variant="primary"
            disabled={busy !== null || pending || !previewIsCurrent || !changes.length || errorCount > 0}
            aria-busy={busy === "publish" || pending}
            aria-describedby="publish-hint"
            onClick={() => void publish()}
          >
            {busy === "publish" || pending ? "Publishing…" : `Publish version ${baseVersion + 1}`}
          </Button>
        </div>
        <p id="publish-hint" className="mt-2 text-xs text-slate-600">
          {!changes.length
            ? "Change a rule to publish a new version."
            : errorCount
              ? `Fix ${errorCount === 1 ? "the problem" : `the ${errorCount} problems`} above first.`
              : previewIsCurrent
                ? "Publishing makes this the policy for every new conversation; runs in progress keep their version."
                : "Preview the changes first: publishing is open once this exact draft was previewed."}
        </p>
        <div aria-live="polite" className="mt-3">
          {error ? (
            <Notice tone="error" role="none" data-testid="policy-error">
              {error}
            </Notice>
          ) : null}
          {errorCount && !error ? (
            <Notice tone="error" role="none">
              {errorCount === 1 ? "One rule needs attention" : `${errorCount} rules need attention`}: see the messages above.
            </Notice>
          ) : null}
        </div>
        {preview ? (
          <div className="mt-4">
            {!previewIsCurrent ? (
              <Notice tone="warning" className="mb-3">
                The draft changed since this preview. Preview again before publishing.
              </Notice>
            ) : null}
            <WhatIfView report={preview.report} busy={busy === "preview"} onPage={(p) => void runPreview(p)} />
          </div>
        ) : null}
      </Section>
    </form>
  );
}

function RuleField({
  field,
  value,
  error,
  knownTools,
  onChange,
}: {
  field: PolicyField;
  value: PolicyFormValues[string];
  error?: string;
  knownTools: readonly string[];
  onChange: (v: PolicyFormValues[string]) => void;
}) {
  const id = idOf(field.path);
  const described = [field.hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(" ") || undefined;
  if (field.kind === "boolean") {
    return (
      <div className="sm:col-span-2">
        <label className="flex items-center gap-2 text-sm font-medium text-slate-800">
          <input id={id} type="checkbox" className="size-4" checked={value === true} onChange={(e) => onChange(e.target.checked)} />
          {field.label}
        </label>
      </div>
    );
  }
  if (field.kind === "statuses" || field.kind === "tools") {
    const options = field.kind === "tools" ? knownTools : ORDER_STATUSES;
    const selected = Array.isArray(value) ? value : [];
    return (
      <fieldset className="sm:col-span-2" aria-describedby={described} aria-invalid={Boolean(error) || undefined}>
        <legend className="text-sm font-medium text-slate-800">{field.label}</legend>
        <div className="mt-1 grid gap-1 sm:grid-cols-2">
          {options.map((option) => (
            <label key={option} className="flex items-center gap-2 text-sm">
              <input
                type="checkbox"
                className="size-4"
                checked={selected.includes(option)}
                onChange={(e) => onChange(e.target.checked ? [...selected, option] : selected.filter((x) => x !== option))}
              />
              {field.kind === "tools" ? (
                <span>
                  {TOOL_LABELS[option] ?? option} <span className="font-mono text-xs text-slate-500">{option}</span>
                </span>
              ) : (
                option
              )}
            </label>
          ))}
        </div>
        {error ? (
          <p id={`${id}-error`} role="alert" className="mt-1 text-sm text-red-700">
            {error}
          </p>
        ) : null}
      </fieldset>
    );
  }
  const money = field.kind === "cents" || field.kind === "micros";
  return (
    <Field
      id={id}
      label={money ? `${field.label} ($)` : field.unit ? `${field.label} (${field.unit})` : field.label}
      hint={field.hint}
      error={error}
    >
      <Input
        id={id}
        inputMode={field.kind === "count" ? "numeric" : "decimal"}
        value={typeof value === "string" ? value : ""}
        aria-invalid={Boolean(error) || undefined}
        aria-describedby={described}
        onChange={(e) => onChange(e.target.value)}
      />
    </Field>
  );
}

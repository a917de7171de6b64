"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { Button } from "@/components/ui/button";
import { Field, Input } from "@/components/ui/field";
import { LocalTime } from "@/components/ui/local-time";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { useCopy } from "@/components/ui/use-copy";
import { addAllowedOriginAction, removeAllowedOriginAction, rotateWidgetSecretAction } from "@/lib/actions/settings";
import type { WidgetSettings } from "@/lib/settings/widget";

function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, copy] = useCopy(text);
  return (
    <>
      <Button size="sm" onClick={copy}>
        {label}
      </Button>
      <span role="status" className="ml-2 text-xs text-slate-600">
        {copied === true ? "Copied." : copied === false ? "Copying was not allowed here: select the text and copy it." : ""}
      </span>
    </>
  );
}

export function WidgetSettingsView({ settings, snippet }: { settings: WidgetSettings; snippet: string }) {
  const router = useRouter();
  const [origin, setOrigin] = useState("");
  const [originError, setOriginError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<{ tone: "success" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [overlap, setOverlap] = useState("24");
  const [secret, setSecret] = useState<{ value: string; previousValidUntil: Date | null } | null>(null);
  const overlapHours = /^\d+$/.test(overlap) ? Number(overlap) : Number.NaN;
  const overlapError = overlapHours >= 0 && overlapHours <= 168 ? null : "Between 0 and 168 hours.";

  async function addOrigin(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setOriginError(null);
    try {
      const result = await addAllowedOriginAction({ origin });
      if (result.ok) {
        setOutcome({ tone: "success", text: `Allowed ${result.data[result.data.length - 1]}.` });
        setOrigin("");
        router.refresh();
      } else setOriginError(result.error.message);
    } catch {
      setOriginError("The server did not answer. Try again.");
    } finally {
      setBusy(false);
    }
  }

  async function removeOrigin(o: string) {
    setBusy(true);
    try {
      const result = await removeAllowedOriginAction({ origin: o });
      setOutcome(
        result.ok ? { tone: "success", text: `${o} may no longer host the chat.` } : { tone: "error", text: result.error.message },
      );
      router.refresh();
    } finally {
      setBusy(false);
    }
  }

  async function rotate() {
    if (overlapError) return;
    if (!window.confirm("Rotate the widget secret? Your shop's backend must switch to the new secret before the overlap ends.")) return;
    setBusy(true);
    try {
      const result = await rotateWidgetSecretAction({ overlapHours });
      if (result.ok) {
        setSecret({ value: result.data.secret, previousValidUntil: result.data.previousValidUntil });
        setOutcome(null);
        router.refresh();
      } else setOutcome({ tone: "error", text: result.error.message });
    } catch {
      setOutcome({ tone: "error", text: "The server did not answer. Reload to see whether the secret changed." });
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="space-y-4">
      <div aria-live="polite">
        {outcome ? (
          <Notice tone={outcome.tone} role="none" data-testid="widget-outcome">
            {outcome.text}
          </Notice>
        ) : null}
      </div>

      <Section title="Embed snippet" id="snippet">
        <p className="mb-2 text-sm text-slate-600">Paste this tag into every page of your shop where the chat should appear.</p>
        <pre className="overflow-x-auto rounded-md bg-slate-900 p-3 text-sm text-slate-50" data-testid="embed-snippet">
          <code>{snippet}</code>
        </pre>
        <div className="mt-2">
          <CopyButton text={snippet} label="Copy snippet" />
        </div>
      </Section>

      <Section title="Pages allowed to host the chat" id="origins">
        <p className="mb-2 text-sm text-slate-600">
          The chat talks only to pages on these origins (and this app&apos;s own). Empty: only this app&apos;s own pages.
        </p>
        {settings.allowedOrigins.length ? (
          <ul className="mb-3 divide-y divide-slate-100 rounded-md border border-slate-200" data-testid="allowed-origins">
            {settings.allowedOrigins.map((o) => (
              <li key={o} className="flex items-center justify-between gap-2 px-3 py-2 text-sm">
                <span className="font-mono">{o}</span>
                <Button size="sm" variant="ghost" disabled={busy} onClick={() => void removeOrigin(o)} aria-label={`Remove ${o}`}>
                  Remove
                </Button>
              </li>
            ))}
          </ul>
        ) : (
          <p className="mb-3 text-sm text-slate-700" data-testid="allowed-origins">
            No other origins.
          </p>
        )}
        <form onSubmit={addOrigin} className="flex flex-wrap items-end gap-2" noValidate aria-label="Allow an origin">
          <Field
            id="new-origin"
            label="Origin"
            hint="e.g. https://shop.example.com — no path"
            error={originError}
            className="min-w-72 flex-1"
          >
            <Input
              id="new-origin"
              value={origin}
              onChange={(e) => setOrigin(e.target.value)}
              aria-invalid={Boolean(originError) || undefined}
              aria-describedby="new-origin-hint"
            />
          </Field>
          <Button type="submit" variant="primary" disabled={busy || !origin.trim()}>
            Allow
          </Button>
        </form>
      </Section>

      <Section title="Identity secret" id="secret">
        <p className="mb-2 text-sm text-slate-600">
          Your backend signs who a signed-in customer is with this secret (a short-lived HS256 token). It is never shown again after a
          rotation; keep it on your server only.
        </p>
        <p className="mb-3 text-sm" data-testid="secret-status">
          {settings.secretRotatedAt ? (
            <>
              Last rotated <LocalTime at={settings.secretRotatedAt} />.
            </>
          ) : (
            "Never rotated since the shop was set up."
          )}{" "}
          {settings.previousSecretValidUntil ? (
            <>
              The previous secret still verifies until <LocalTime at={settings.previousSecretValidUntil} />.
            </>
          ) : null}
        </p>
        {secret ? (
          <Notice tone="warning" className="mb-3" data-testid="new-secret">
            <p className="font-medium">The new secret — copy it now, it will not be shown again:</p>
            <p className="my-2 break-all font-mono" data-testid="new-secret-value">
              {secret.value}
            </p>
            <CopyButton text={secret.value} label="Copy secret" />
            <p className="mt-2">
              {secret.previousValidUntil ? (
                <>
                  The previous secret keeps working until <LocalTime at={secret.previousValidUntil} />: switch your backend before then.
                </>
              ) : (
                "The previous secret stopped working at once."
              )}
            </p>
          </Notice>
        ) : null}
        <div className="flex flex-wrap items-end gap-2">
          <Field id="overlap" label="Keep the previous secret working for (hours)" hint="0–168; 0 stops it at once" error={overlapError}>
            <Input
              id="overlap"
              className="w-24"
              inputMode="numeric"
              value={overlap}
              onChange={(e) => setOverlap(e.target.value)}
              aria-invalid={Boolean(overlapError) || undefined}
              aria-describedby="overlap-hint"
            />
          </Field>
          <Button variant="danger" disabled={busy || Boolean(overlapError)} onClick={() => void rotate()}>
            Rotate secret
          </Button>
        </div>
      </Section>
    </div>
  );
}

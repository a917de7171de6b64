"use client";
import { useMutation } from "@tanstack/react-query";
import Link from "next/link";
import { type FormEvent, useId, useState } from "react";
import { callAction, type ConsoleError } from "@/components/console/api";
import { CopyOnce } from "@/components/console/copy-once";
import { Badge } from "@/components/ui/badge";
import { Button } from "@/components/ui/button";
import { Field, Input } from "@/components/ui/field";
import { LocalTime } from "@/components/ui/local-time";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import {
  createWebhookEndpointAction,
  deleteWebhookEndpointAction,
  sendTestWebhookAction,
  setWebhookEndpointEnabledAction,
} from "@/lib/actions/webhooks";
import type { WebhookEndpointView } from "@/lib/settings/webhooks";

type Descriptions = Record<string, string>;

/** Add an endpoint (its secret shown once), list the shop's endpoints, and act on each. */
export function WebhooksView({
  initialEndpoints,
  eventDescriptions,
}: {
  initialEndpoints: WebhookEndpointView[];
  eventDescriptions: Descriptions;
}) {
  const [endpoints, setEndpoints] = useState(initialEndpoints);
  const [shown, setShown] = useState<{ url: string; secret: string } | null>(null);
  return (
    <div className="space-y-4">
      {shown ? (
        <NewSecret shown={shown} onDone={() => setShown(null)} />
      ) : (
        <AddEndpoint
          eventDescriptions={eventDescriptions}
          onCreated={(r) => {
            setEndpoints(r.endpoints);
            setShown({ url: r.created.url, secret: r.secret });
          }}
        />
      )}
      <EndpointList endpoints={endpoints} onChange={setEndpoints} />
    </div>
  );
}

interface Created {
  secret: string;
  created: WebhookEndpointView;
  endpoints: WebhookEndpointView[];
}

function AddEndpoint({ eventDescriptions, onCreated }: { eventDescriptions: Descriptions; onCreated: (r: Created) => void }) {
  const id = useId();
  const all = Object.keys(eventDescriptions);
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [eventTypes, setEventTypes] = useState<string[]>(all);
  const create = useMutation<Created, ConsoleError>({
    mutationFn: () => callAction(() => createWebhookEndpointAction({ url, description, eventTypes })),
    onSuccess: (r) => {
      setUrl("");
      setDescription("");
      setEventTypes(all);
      onCreated(r);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!create.isPending) create.mutate();
  };
  const urlError = create.error?.details?.field === "url" ? create.error.message : undefined;
  return (
    <Section title="Add an endpoint">
      <form onSubmit={submit} className="space-y-3" aria-label="Add a webhook endpoint">
        <Field
          id={`${id}-url`}
          label="Endpoint URL"
          hint="Where to POST the events, e.g. https://helpdesk.example.com/hooks/support."
          error={urlError}
        >
          <Input id={`${id}-url`} type="url" value={url} onChange={(e) => setUrl(e.target.value)} maxLength={2000} required />
        </Field>
        <Field id={`${id}-description`} label="Description (optional)" hint="What receives them, e.g. “Helpdesk”.">
          <Input id={`${id}-description`} value={description} onChange={(e) => setDescription(e.target.value)} maxLength={200} />
        </Field>
        <fieldset>
          <legend className="text-sm font-medium text-slate-800">Events</legend>
          <ul className="mt-1 space-y-1">
            {all.map((type) => (
              <li key={type}>
                <label className="flex items-start gap-2 text-sm">
                  <input
                    type="checkbox"
                    className="mt-0.5"
                    checked={eventTypes.includes(type)}
                    onChange={(e) => setEventTypes((s) => (e.target.checked ? [...s, type] : s.filter((x) => x !== type)))}
                  />
                  <span>
                    <code className="font-medium">{type}</code> <span className="text-slate-600">— {eventDescriptions[type]}</span>
                  </span>
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        {create.error && !urlError ? <Notice tone="error">{create.error.message}</Notice> : null}
        <Button type="submit" variant="primary" disabled={create.isPending || !url.trim() || eventTypes.length === 0}>
          {create.isPending ? "Adding…" : "Add endpoint"}
        </Button>
      </form>
    </Section>
  );
}

function NewSecret({ shown, onDone }: { shown: { url: string; secret: string }; onDone: () => void }) {
  return (
    <Section title="Endpoint added">
      <div className="space-y-3" data-testid="new-webhook-secret">
        <p className="text-sm">
          Deliveries to <code className="break-all">{shown.url}</code> are signed with this secret. Verify them with any Standard Webhooks
          library.
        </p>
        <Notice tone="warning" role="status">
          Copy the signing secret now: this is the only time it is shown.
        </Notice>
        <CopyOnce value={shown.secret} label="The endpoint's signing secret" noun="secret" testId="new-webhook-secret-value" />
        <Button variant="ghost" onClick={onDone}>
          Done
        </Button>
      </div>
    </Section>
  );
}

function EndpointList({ endpoints, onChange }: { endpoints: WebhookEndpointView[]; onChange: (e: WebhookEndpointView[]) => void }) {
  const [confirming, setConfirming] = useState<string | null>(null);
  const [note, setNote] = useState<{ tone: "success" | "error"; text: string } | null>(null);
  const toggle = useMutation<{ endpoints: WebhookEndpointView[] }, ConsoleError, { endpointId: string; enabled: boolean }>({
    mutationFn: (v) => callAction(() => setWebhookEndpointEnabledAction(v)),
    onSuccess: (r, v) => {
      onChange(r.endpoints);
      setNote({ tone: "success", text: v.enabled ? "Endpoint enabled." : "Endpoint disabled: no new events are sent to it." });
    },
    onError: (e) => setNote({ tone: "error", text: e.message }),
  });
  const remove = useMutation<{ endpoints: WebhookEndpointView[] }, ConsoleError, string>({
    mutationFn: (endpointId) => callAction(() => deleteWebhookEndpointAction({ endpointId })),
    onSuccess: (r) => {
      setConfirming(null);
      onChange(r.endpoints);
      setNote({ tone: "success", text: "Endpoint deleted with its delivery log." });
    },
    onError: (e) => setNote({ tone: "error", text: e.message }),
  });
  const test = useMutation<{ eventId: string }, ConsoleError, string>({
    mutationFn: (endpointId) => callAction(() => sendTestWebhookAction({ endpointId })),
    onSuccess: (r) => setNote({ tone: "success", text: `Test event ${r.eventId} queued: it appears in the delivery log within seconds.` }),
    onError: (e) => setNote({ tone: "error", text: e.message }),
  });
  const busy = toggle.isPending || remove.isPending || test.isPending;
  return (
    <Section title="Endpoints">
      <div aria-live="polite">{note ? <Notice tone={note.tone}>{note.text}</Notice> : null}</div>
      {endpoints.length === 0 ? (
        <p className="text-sm text-slate-600">No endpoints yet.</p>
      ) : (
        <ul className="divide-y divide-slate-100">
          {endpoints.map((e) => (
            <li key={e.id} className="space-y-2 py-3" data-testid="webhook-endpoint" aria-label={e.url}>
              <div className="flex flex-wrap items-center gap-2">
                <code className="break-all font-medium text-slate-900">{e.url}</code>
                {e.enabled ? <Badge tone="green">enabled</Badge> : <Badge tone="gray">disabled</Badge>}
                {e.failed ? <Badge tone="red">{e.failed} failed</Badge> : null}
                {e.pending ? <Badge tone="amber">{e.pending} waiting</Badge> : null}
              </div>
              {e.description ? <p className="text-sm text-slate-700">{e.description}</p> : null}
              <ul className="flex flex-wrap gap-1" aria-label="Events">
                {e.eventTypes.map((t) => (
                  <li key={t}>
                    <Badge tone="gray">{t}</Badge>
                  </li>
                ))}
              </ul>
              <p className="text-xs text-slate-600">
                Added <LocalTime at={e.createdAt} />
                {e.lastDelivery ? (
                  <>
                    {" · "}last delivery {e.lastDelivery.status}
                    {e.lastDelivery.statusCode ? ` (HTTP ${e.lastDelivery.statusCode})` : ""} <LocalTime at={e.lastDelivery.at} />
                  </>
                ) : null}
              </p>
              <div className="flex flex-wrap gap-2">
                <Link
                  href={`/console/settings/webhooks/${encodeURIComponent(e.id)}`}
                  className="inline-flex items-center rounded-md border border-slate-300 px-2 py-1 text-sm font-medium text-blue-800 hover:bg-slate-50"
                >
                  Delivery log
                </Link>
                <Button size="sm" disabled={busy || !e.enabled} onClick={() => test.mutate(e.id)}>
                  Send test event
                </Button>
                <Button size="sm" disabled={busy} onClick={() => toggle.mutate({ endpointId: e.id, enabled: !e.enabled })}>
                  {e.enabled ? "Disable" : "Enable"}
                </Button>
                {confirming === e.id ? (
                  <span role="group" aria-label={`Confirm deleting ${e.url}`} className="flex flex-wrap items-center gap-2">
                    <span className="text-xs text-slate-700">Its delivery log goes too.</span>
                    <Button size="sm" variant="danger" disabled={busy} onClick={() => remove.mutate(e.id)}>
                      {remove.isPending ? "Deleting…" : "Delete endpoint"}
                    </Button>
                    <Button size="sm" variant="ghost" disabled={busy} onClick={() => setConfirming(null)}>
                      Cancel
                    </Button>
                  </span>
                ) : (
                  <Button size="sm" disabled={busy} onClick={() => setConfirming(e.id)}>
                    Delete…
                  </Button>
                )}
              </div>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

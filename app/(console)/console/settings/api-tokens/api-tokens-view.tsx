"use client";
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useId, useState } from "react";
import { callAction, type ConsoleError } from "@/components/console/api";
import { CopyOnce } from "@/components/console/copy-once";
import { Badge } from "@/components/ui/badge";
import { Button } from "@/components/ui/button";
import { Field, Input } from "@/components/ui/field";
import { LocalTime } from "@/components/ui/local-time";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { createApiTokenAction, revokeApiTokenAction } from "@/lib/actions/api-tokens";
import { API_SCOPE_DESCRIPTIONS, API_SCOPES, type ApiScope } from "@/lib/api/scopes";
import type { PresentedApiToken } from "@/lib/api/tokens";

/** Create a token (shown once, with a copy button), list the shop's tokens, revoke one after confirming. */
export function ApiTokensView({ initialTokens }: { initialTokens: PresentedApiToken[] }) {
  const [tokens, setTokens] = useState(initialTokens);
  const [shown, setShown] = useState<{ name: string; token: string } | null>(null);
  return (
    <div className="space-y-4">
      {shown ? (
        <NewToken shown={shown} onDone={() => setShown(null)} />
      ) : (
        <CreateToken
          onCreated={(r) => {
            setTokens(r.tokens);
            setShown({ name: r.created.name, token: r.token });
          }}
        />
      )}
      <TokenList tokens={tokens} onChange={setTokens} />
    </div>
  );
}

function CreateToken({
  onCreated,
}: {
  onCreated: (r: { token: string; created: PresentedApiToken; tokens: PresentedApiToken[] }) => void;
}) {
  const id = useId();
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<ApiScope[]>([...API_SCOPES]);
  const create = useMutation<{ token: string; created: PresentedApiToken; tokens: PresentedApiToken[] }, ConsoleError>({
    mutationFn: () => callAction(() => createApiTokenAction({ name, scopes })),
    onSuccess: (r) => {
      setName("");
      setScopes([...API_SCOPES]);
      onCreated(r);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!create.isPending) create.mutate();
  };
  return (
    <Section title="Create a token">
      <form onSubmit={submit} className="space-y-3" aria-label="Create an API token">
        <Field id={`${id}-name`} label="Name" hint="What uses it, e.g. “Helpdesk sync”. Shown in this list and the audit trail.">
          <Input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} maxLength={80} required />
        </Field>
        <fieldset>
          <legend className="text-sm font-medium text-slate-800">Scopes</legend>
          <ul className="mt-1 space-y-1">
            {API_SCOPES.map((scope) => (
              <li key={scope}>
                <label className="flex items-start gap-2 text-sm">
                  <input
                    type="checkbox"
                    className="mt-0.5"
                    checked={scopes.includes(scope)}
                    onChange={(e) => setScopes((s) => (e.target.checked ? [...s, scope] : s.filter((x) => x !== scope)))}
                  />
                  <span>
                    <code className="font-medium">{scope}</code> <span className="text-slate-600">— {API_SCOPE_DESCRIPTIONS[scope]}</span>
                  </span>
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        {create.error ? <Notice tone="error">{create.error.message}</Notice> : null}
        <Button type="submit" variant="primary" disabled={create.isPending || !name.trim() || scopes.length === 0}>
          {create.isPending ? "Creating…" : "Create token"}
        </Button>
      </form>
    </Section>
  );
}

function NewToken({ shown, onDone }: { shown: { name: string; token: string }; onDone: () => void }) {
  return (
    <Section title={`Token “${shown.name}” created`}>
      <div className="space-y-3" data-testid="new-api-token">
        <Notice tone="warning" role="status">
          Copy it now: this is the only time it is shown. Only its hash is kept.
        </Notice>
        <CopyOnce value={shown.token} label="The new token" noun="token" testId="new-api-token-value" />
        <Button variant="ghost" onClick={onDone}>
          Done
        </Button>
      </div>
    </Section>
  );
}

function TokenList({ tokens, onChange }: { tokens: PresentedApiToken[]; onChange: (t: PresentedApiToken[]) => void }) {
  const [confirming, setConfirming] = useState<string | null>(null);
  const revoke = useMutation<{ tokens: PresentedApiToken[] }, ConsoleError, string>({
    mutationFn: (tokenId) => callAction(() => revokeApiTokenAction({ tokenId })),
    onSuccess: (r) => {
      setConfirming(null);
      onChange(r.tokens);
    },
  });
  return (
    <Section title="Tokens">
      {revoke.error ? <Notice tone="error">{revoke.error.message}</Notice> : null}
      {tokens.length === 0 ? (
        <p className="text-sm text-slate-600">No tokens yet.</p>
      ) : (
        <div className="overflow-x-auto">
          <table className="w-full text-left text-sm">
            <thead className="text-xs uppercase text-slate-600">
              <tr>
                <th className="py-2 pr-3 font-medium">Name</th>
                <th className="py-2 pr-3 font-medium">Token</th>
                <th className="py-2 pr-3 font-medium">Scopes</th>
                <th className="py-2 pr-3 font-medium">Created</th>
                <th className="py-2 pr-3 font-medium">Last used</th>
                <th className="py-2 pr-3 font-medium">State</th>
                <th className="py-2 font-medium">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100">
              {tokens.map((t) => (
                <tr key={t.id} data-testid="api-token-row" aria-label={t.name}>
                  <td className="py-2 pr-3 font-medium text-slate-900">{t.name}</td>
                  <td className="py-2 pr-3 font-mono text-xs">{t.prefix}…</td>
                  <td className="py-2 pr-3">
                    <ul className="flex flex-wrap gap-1">
                      {t.scopes.map((s) => (
                        <li key={s}>
                          <Badge tone="gray">{s}</Badge>
                        </li>
                      ))}
                    </ul>
                  </td>
                  <td className="py-2 pr-3">
                    <LocalTime at={t.createdAt} />
                    <br />
                    <span className="text-xs text-slate-600">
                      {t.createdBy ? `by ${t.createdBy.name ?? "a former member"}` : "by the operator"}
                    </span>
                  </td>
                  <td className="py-2 pr-3" data-testid="api-token-last-used">
                    {t.lastUsedAt ? <LocalTime at={t.lastUsedAt} /> : <span className="text-slate-600">never</span>}
                  </td>
                  <td className="py-2 pr-3" data-testid="api-token-state">
                    {t.revokedAt ? (
                      <span>
                        <Badge tone="red">revoked</Badge> <LocalTime at={t.revokedAt} className="text-xs text-slate-600" />
                      </span>
                    ) : (
                      <Badge tone="green">active</Badge>
                    )}
                  </td>
                  <td className="py-2 text-right">
                    {t.revokedAt ? null : confirming === t.id ? (
                      <div role="group" aria-label={`Confirm revoking ${t.name}`} className="flex flex-wrap justify-end gap-2">
                        <span className="text-xs text-slate-700">Integrations using it stop at once.</span>
                        <Button size="sm" variant="danger" disabled={revoke.isPending} onClick={() => revoke.mutate(t.id)}>
                          {revoke.isPending ? "Revoking…" : "Revoke token"}
                        </Button>
                        <Button size="sm" variant="ghost" disabled={revoke.isPending} onClick={() => setConfirming(null)}>
                          Cancel
                        </Button>
                      </div>
                    ) : (
                      <Button size="sm" onClick={() => setConfirming(t.id)}>
                        Revoke…
                      </Button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}

"use client";
import Link from "next/link";
import { useState } from "react";
import { Button } from "@/components/ui/button";
import { Field, Input } from "@/components/ui/field";
import { Notice } from "@/components/ui/notice";
import { acceptInviteAction } from "@/lib/actions/invite";

const MIN = 10;

export function SetPasswordForm({ token, email }: { token: string; email: string }) {
  const [password, setPassword] = useState("");
  const [repeat, setRepeat] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (password.length < MIN) return setError(`Use at least ${MIN} characters.`);
    if (password !== repeat) return setError("The two passwords differ.");
    setBusy(true);
    setError(null);
    try {
      const result = await acceptInviteAction({ token, password });
      if (result.ok) setDone(true);
      else setError(result.error.message);
    } catch {
      setError("The server did not answer. Try again.");
    } finally {
      setBusy(false);
    }
  }

  if (done)
    return (
      <div className="mt-4 space-y-3">
        <Notice tone="success" data-testid="invite-done">
          Your password is set. Sign in as {email}.
        </Notice>
        <Link href="/login" className="inline-block rounded-md bg-blue-700 px-3.5 py-2 text-sm font-medium text-white hover:bg-blue-800">
          Sign in
        </Link>
      </div>
    );
  return (
    <form onSubmit={submit} className="mt-5 space-y-4" noValidate>
      <input type="email" name="username" autoComplete="username" value={email} readOnly hidden />
      <Field id="new-password" label="New password" hint={`At least ${MIN} characters.`}>
        <Input
          id="new-password"
          type="password"
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          aria-describedby="new-password-hint"
        />
      </Field>
      <Field id="repeat-password" label="The same password again">
        <Input
          id="repeat-password"
          type="password"
          autoComplete="new-password"
          value={repeat}
          onChange={(e) => setRepeat(e.target.value)}
        />
      </Field>
      <div aria-live="assertive">
        {error ? (
          <Notice tone="error" role="none" data-testid="invite-error">
            {error}
          </Notice>
        ) : null}
      </div>
      <Button type="submit" variant="primary" className="w-full" disabled={busy} aria-busy={busy}>
        {busy ? "Saving…" : "Set password"}
      </Button>
    </form>
  );
}

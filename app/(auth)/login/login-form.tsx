"use client";
import { signIn } from "next-auth/react";
import { useRouter } from "next/navigation";
import { useRef, useState } from "react";
import { Button } from "@/components/ui/button";
import { Field, Input } from "@/components/ui/field";
import { Notice } from "@/components/ui/notice";

/** Email + password through next-auth's credentials provider, without its redirect (we navigate ourselves). */
export function LoginForm({ callbackUrl, initialError }: { callbackUrl: string; initialError: string | null }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(initialError);
  const [pending, setPending] = useState(false);
  const emailRef = useRef<HTMLInputElement>(null);

  async function onSubmit(e: React.FormEvent<HTMLFormElement>) {
    e.preventDefault();
    if (pending) return;
    const form = new FormData(e.currentTarget);
    setPending(true);
    setError(null);
    try {
      const res = await signIn("credentials", {
        email: String(form.get("email") ?? ""),
        password: String(form.get("password") ?? ""),
        redirect: false,
      });
      if (!res || res.error || !res.ok) {
        setError("Wrong email or password.");
        emailRef.current?.focus();
        return;
      }
      router.replace(callbackUrl);
      router.refresh();
    } catch {
      setError("The sign-in service did not answer. Try again.");
    } finally {
      setPending(false);
    }
  }

  return (
    <form onSubmit={onSubmit} className="mt-5 space-y-4" aria-describedby={error ? "login-error" : undefined}>
      <Field id="email" label="Email">
        <Input id="email" name="email" type="email" autoComplete="username" required ref={emailRef} autoFocus />
      </Field>
      <Field id="password" label="Password">
        <Input id="password" name="password" type="password" autoComplete="current-password" required />
      </Field>
      <div aria-live="assertive">
        {error ? (
          <Notice tone="error" role="none" id="login-error">
            {error}
          </Notice>
        ) : null}
      </div>
      <Button type="submit" variant="primary" className="w-full" disabled={pending} aria-busy={pending}>
        {pending ? "Signing in…" : "Sign in"}
      </Button>
    </form>
  );
}

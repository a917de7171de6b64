"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { Badge } from "@/components/ui/badge";
import { Button } from "@/components/ui/button";
import { Field, Input, Select } from "@/components/ui/field";
import { LocalTime } from "@/components/ui/local-time";
import { Notice } from "@/components/ui/notice";
import { Section } from "@/components/ui/section";
import { inviteStaffAction, resendInviteAction, setStaffActiveAction, updateStaffAction } from "@/lib/actions/settings";
import { formatCents } from "@/lib/money";
import type { InviteMail, StaffMember, StaffRole } from "@/lib/settings/staff";

const ROLES: Array<{ value: StaffRole; label: string }> = [
  { value: "reviewer", label: "Reviewer — works the queue" },
  { value: "supervisor", label: "Supervisor — also runs and transcripts" },
  { value: "admin", label: "Admin — also settings" },
];

/** "" → any amount (null); "300" / "300.00" / "$1,000" → cents; anything else → undefined (an error). */
function authorityFrom(text: string): number | null | undefined {
  const clean = text.replace(/[$,\s]/g, "");
  if (!clean) return null;
  if (!/^\d+(\.\d{1,2})?$/.test(clean)) return undefined;
  return Math.round(Number(clean) * 100);
}
const authorityText = (cents: number | null) => (cents === null ? "" : (cents / 100).toFixed(2));

type Tone = "success" | "warning" | "error";
type Outcome = { tone: Tone; text: string } | null;
type Done = (text: string, tone?: Tone) => void;

/**
 * What became of an invitation's mail, said to the admin who sent it (`what`: a first invitation or a new link): the
 * person is invited either way.
 */
function invitationSent(what: "invited" | "new link", member: StaffMember): [string, Tone] {
  const mail = member.inviteMail;
  const link = what === "invited" ? `Invited ${member.name}` : `A new link for ${member.name}`;
  if (mail?.status === "failed") {
    const why = `the mail to ${member.email} could not be sent (${mail.error ?? "no answer"})`;
    return [what === "invited" ? `${link}, but ${why}. Send a new link once mail works.` : `${link} was made, but ${why}.`, "warning"];
  }
  if (mail?.status === "queued") return [`${link}: the mail to ${member.email} is still being sent.`, "success"];
  if (mail?.status === "demo") return [`${link}: no mail server is set up, so the link is in the demo mailbox (admins only).`, "success"];
  return [
    what === "invited" ? `${link}: a link to set a password went to ${member.email}.` : `${link} went to ${member.email}.`,
    "success",
  ];
}

/** The newest invitation mail's state, beside an invited person in the list. */
function InviteMailState({ mail }: { mail: InviteMail | null }) {
  if (!mail) return null;
  if (mail.status === "failed")
    return (
      <span data-testid="invite-mail">
        {" "}
        <Badge tone="red">mail not sent</Badge> <span className="text-red-800">{mail.error}</span>
      </span>
    );
  const words = { sent: "mail sent", queued: "mail being sent", demo: "link in the demo mailbox" }[mail.status];
  return <span className="text-slate-600" data-testid="invite-mail">{` · ${words}`}</span>;
}

export function StaffManager({ members, selfId }: { members: StaffMember[]; selfId: string }) {
  const router = useRouter();
  const [outcome, setOutcome] = useState<Outcome>(null);
  const done: Done = (text, tone = "success") => {
    setOutcome({ tone, text });
    router.refresh();
  };
  return (
    <div className="space-y-4">
      <div aria-live="polite">
        {outcome ? (
          <Notice tone={outcome.tone} role="none" data-testid="staff-outcome">
            {outcome.text}
          </Notice>
        ) : null}
      </div>
      <Section title="People" id="staff-list">
        <ul className="divide-y divide-slate-100" data-testid="staff-list">
          {members.map((m) => (
            <StaffRow key={m.id} member={m} self={m.id === selfId} onDone={done} onError={(text) => setOutcome({ tone: "error", text })} />
          ))}
        </ul>
      </Section>
      <InviteForm onDone={done} />
    </div>
  );
}

function StaffRow({
  member,
  self,
  onDone,
  onError,
}: {
  member: StaffMember;
  self: boolean;
  onDone: Done;
  onError: (text: string) => void;
}) {
  const [role, setRole] = useState<StaffRole>(member.role);
  const [authority, setAuthority] = useState(authorityText(member.authorityLimitCents));
  const [busy, setBusy] = useState(false);
  const cents = authorityFrom(authority);
  const dirty = role !== member.role || cents !== member.authorityLimitCents;
  const id = `staff-${member.id}`;

  async function act<T>(
    run: () => Promise<{ ok: true; data: T } | { ok: false; error: { message: string } }>,
    success: string | ((data: T) => [string, Tone]),
  ) {
    setBusy(true);
    try {
      const result = await run();
      if (result.ok) {
        const [text, tone] = typeof success === "string" ? [success, "success" as const] : success(result.data);
        onDone(text, tone);
      } else onError(result.error.message);
    } catch {
      onError("The server did not answer. Reload to see the current state.");
    } finally {
      setBusy(false);
    }
  }

  return (
    <li className="grid gap-3 py-3 md:grid-cols-[1.4fr_1fr_1fr_auto]" data-testid="staff-row" data-email={member.email}>
      <div>
        <p className="font-medium">
          {member.name} {self ? <span className="text-sm font-normal text-slate-600">(you)</span> : null}
        </p>
        <p className="text-sm text-slate-600">{member.email}</p>
        <p className="mt-1 text-xs" data-testid="staff-status">
          {member.status === "active" ? (
            <Badge tone="green">active</Badge>
          ) : member.status === "invited" ? (
            <>
              <Badge tone="blue">invited</Badge>{" "}
              {member.inviteExpiresAt ? (
                <span className="text-slate-600">
                  link valid until <LocalTime at={member.inviteExpiresAt} />
                </span>
              ) : (
                <span className="text-slate-600">link expired</span>
              )}
              <InviteMailState mail={member.inviteMail} />
            </>
          ) : (
            <>
              <Badge tone="red">deactivated</Badge>{" "}
              {member.deactivatedAt ? (
                <span className="text-slate-600">
                  since <LocalTime at={member.deactivatedAt} />
                </span>
              ) : null}
            </>
          )}
        </p>
      </div>
      <Field id={`${id}-role`} label="Role">
        <Select id={`${id}-role`} value={role} disabled={busy} onChange={(e) => setRole(e.target.value as StaffRole)}>
          {ROLES.map((r) => (
            <option key={r.value} value={r.value}>
              {r.value}
            </option>
          ))}
        </Select>
      </Field>
      <Field
        id={`${id}-authority`}
        label="Approves up to ($)"
        hint={cents === undefined ? undefined : cents === null ? "Empty: any amount." : formatCents(cents)}
        error={cents === undefined ? "Write an amount in dollars, or leave empty for any amount." : undefined}
      >
        <Input
          id={`${id}-authority`}
          inputMode="decimal"
          value={authority}
          disabled={busy}
          placeholder="any amount"
          aria-invalid={cents === undefined || undefined}
          onChange={(e) => setAuthority(e.target.value)}
        />
      </Field>
      <div className="flex flex-wrap items-start gap-2 md:flex-col md:pt-6">
        <Button
          size="sm"
          variant="primary"
          disabled={busy || !dirty || cents === undefined}
          onClick={() =>
            act(
              () => updateStaffAction({ staffId: member.id, role, authorityLimitCents: cents ?? null }),
              `Saved ${member.name}: ${role}, approves ${cents === null ? "any amount" : `up to ${formatCents(cents!)}`}.`,
            )
          }
        >
          Save
        </Button>
        {member.status === "invited" ? (
          <Button
            size="sm"
            disabled={busy}
            onClick={() =>
              act(
                () => resendInviteAction({ staffId: member.id }),
                (m) => invitationSent("new link", m),
              )
            }
          >
            Send a new link
          </Button>
        ) : null}
        {member.status === "deactivated" ? (
          <Button
            size="sm"
            disabled={busy}
            onClick={() => act(() => setStaffActiveAction({ staffId: member.id, active: true }), `${member.name} is active again.`)}
          >
            Reactivate
          </Button>
        ) : self ? null : (
          <Button
            size="sm"
            variant="danger"
            disabled={busy}
            onClick={() => {
              if (!window.confirm(`Deactivate ${member.name}? They are signed out at once and cannot sign in.`)) return;
              void act(
                () => setStaffActiveAction({ staffId: member.id, active: false }),
                `${member.name} is deactivated: signed out, and cannot sign in.`,
              );
            }}
          >
            Deactivate
          </Button>
        )}
      </div>
    </li>
  );
}

function InviteForm({ onDone }: { onDone: Done }) {
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<StaffRole>("reviewer");
  const [authority, setAuthority] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    const cents = authorityFrom(authority);
    const local: Record<string, string> = {};
    if (!name.trim()) local.name = "Write the person's name.";
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email.trim())) local.email = "Write an email address, e.g. sam@shop.example.";
    if (cents === undefined) local.authorityLimitCents = "Write an amount in dollars, or leave empty for any amount.";
    setErrors(local);
    setError(null);
    if (Object.keys(local).length) return;
    setBusy(true);
    try {
      const result = await inviteStaffAction({ name, email, role, authorityLimitCents: cents ?? null });
      if (result.ok) {
        onDone(...invitationSent("invited", result.data));
        setName("");
        setEmail("");
        setAuthority("");
        setRole("reviewer");
        return;
      }
      const fields = (result.error.details?.fields as Record<string, string> | undefined) ?? {};
      if (result.error.details?.field === "email") fields.email = result.error.message;
      setErrors(fields);
      if (!Object.keys(fields).length) setError(result.error.message);
    } catch {
      setError("The server did not answer. Reload to see whether the invitation went out.");
    } finally {
      setBusy(false);
    }
  }

  return (
    <Section title="Invite a person" id="invite">
      <form onSubmit={submit} noValidate className="grid gap-3 sm:grid-cols-2" aria-label="Invite a person">
        <Field id="invite-name" label="Name" error={errors.name}>
          <Input id="invite-name" value={name} onChange={(e) => setName(e.target.value)} aria-invalid={Boolean(errors.name) || undefined} />
        </Field>
        <Field id="invite-email" label="Email" error={errors.email}>
          <Input
            id="invite-email"
            type="email"
            value={email}
            onChange={(e) => setEmail(e.target.value)}
            aria-invalid={Boolean(errors.email) || undefined}
          />
        </Field>
        <Field id="invite-role" label="Role">
          <Select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as StaffRole)}>
            {ROLES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </Select>
        </Field>
        <Field id="invite-authority" label="Approves up to ($)" hint="Empty: any amount." error={errors.authorityLimitCents}>
          <Input
            id="invite-authority"
            inputMode="decimal"
            placeholder="any amount"
            value={authority}
            onChange={(e) => setAuthority(e.target.value)}
            aria-invalid={Boolean(errors.authorityLimitCents) || undefined}
          />
        </Field>
        <div className="sm:col-span-2">
          {error ? (
            <Notice tone="error" className="mb-2">
              {error}
            </Notice>
          ) : null}
          <Button type="submit" variant="primary" disabled={busy} aria-busy={busy}>
            {busy ? "Inviting…" : "Invite"}
          </Button>
          <p className="mt-2 text-xs text-slate-600">
            They get a mail with a link to set their password (valid 72 hours, usable once). Without a mail server, the link is in the demo
            mailbox, visible to admins only.
          </p>
        </div>
      </form>
    </Section>
  );
}

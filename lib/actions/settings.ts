"use server";
// The settings' server actions (admins only — the operation chain checks the role, and every lib/settings function
// checks again in the data layer): the policy's what-if and publishing, staff, the widget.
import { headers } from "next/headers";
import { z } from "zod";
import type { StaffRole } from "@/lib/auth/claims";
import { publicAppUrl } from "@/lib/settings/app-url";
import { publishPolicy } from "@/lib/settings/policy";
import { inviteStaff, resendInvite, setStaffActive, updateStaff } from "@/lib/settings/staff";
import { WHAT_IF_DEFAULT_DAYS, WHAT_IF_MAX_DAYS, whatIf } from "@/lib/settings/what-if";
import { addAllowedOrigin, DEFAULT_OVERLAP_HOURS, MAX_OVERLAP_HOURS, removeAllowedOrigin, rotateWidgetSecret } from "@/lib/settings/widget";
import { staffAction } from "./safe-action";

const ADMINS: readonly StaffRole[] = ["admin"];
const id = z.string().trim().min(1).max(64);

/** Links in mail point at the public URL; outside a request (a job, a test) there are no headers. */
async function appUrl(): Promise<string> {
  try {
    return publicAppUrl(await headers());
  } catch {
    return publicAppUrl(null);
  }
}

/** What a draft would have changed over the last days' gated calls (one page of the changed calls). */
export const previewPolicyAction = staffAction(
  {
    name: "previewPolicy",
    roles: ADMINS,
    input: z.object({
      rules: z.unknown(),
      days: z.number().int().min(1).max(WHAT_IF_MAX_DAYS).default(WHAT_IF_DEFAULT_DAYS),
      page: z.number().int().min(1).max(100_000).default(1),
    }),
  },
  (input, ctx) => whatIf(ctx.db, ctx, input),
);

/** Publishes the draft as the next version, only if the policy is still at `baseVersion`. */
export const publishPolicyAction = staffAction(
  { name: "publishPolicy", roles: ADMINS, input: z.object({ baseVersion: z.number().int().positive(), rules: z.unknown() }) },
  (input, ctx) => publishPolicy(ctx.db, ctx, input),
);

export const inviteStaffAction = staffAction(
  {
    name: "inviteStaff",
    roles: ADMINS,
    input: z.object({ name: z.unknown(), email: z.unknown(), role: z.unknown(), authorityLimitCents: z.unknown() }),
  },
  async (input, ctx) => inviteStaff(ctx.db, ctx, input, { appUrl: await appUrl() }),
);

export const resendInviteAction = staffAction(
  { name: "resendInvite", roles: ADMINS, input: z.object({ staffId: id }) },
  async ({ staffId }, ctx) => resendInvite(ctx.db, ctx, staffId, { appUrl: await appUrl() }),
);

export const updateStaffAction = staffAction(
  { name: "updateStaff", roles: ADMINS, input: z.object({ staffId: id, role: z.unknown(), authorityLimitCents: z.unknown() }) },
  (input, ctx) => updateStaff(ctx.db, ctx, input),
);

export const setStaffActiveAction = staffAction(
  { name: "setStaffActive", roles: ADMINS, input: z.object({ staffId: id, active: z.boolean() }) },
  (input, ctx) => setStaffActive(ctx.db, ctx, input),
);

export const rotateWidgetSecretAction = staffAction(
  {
    name: "rotateWidgetSecret",
    roles: ADMINS,
    input: z.object({ overlapHours: z.number().min(0).max(MAX_OVERLAP_HOURS).default(DEFAULT_OVERLAP_HOURS) }),
  },
  (input, ctx) => rotateWidgetSecret(ctx.db, ctx, input),
);

export const addAllowedOriginAction = staffAction(
  { name: "addAllowedOrigin", roles: ADMINS, input: z.object({ origin: z.string().max(2048) }) },
  ({ origin }, ctx) => addAllowedOrigin(ctx.db, ctx, origin),
);

export const removeAllowedOriginAction = staffAction(
  { name: "removeAllowedOrigin", roles: ADMINS, input: z.object({ origin: z.string().max(2048) }) },
  ({ origin }, ctx) => removeAllowedOrigin(ctx.db, ctx, origin),
);

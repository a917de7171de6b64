"use server";
// Setting one's password from an invitation link: the one server action without a session (the link is the
// credential: single use, expiring). Answers like every action, `{ ok, data } | { ok: false, error }`.
import { z } from "zod";
import { getPrisma } from "@/lib/db/client";
import { AppError, toPublicError } from "@/lib/errors";
import { log } from "@/lib/log";
import { acceptInvite } from "@/lib/settings/staff";
import type { ActionResult } from "./result";

const acceptInviteSchema = z.object({ token: z.string().max(200), password: z.string().max(1000) });

export async function acceptInviteAction(raw: unknown): Promise<ActionResult<{ email: string }>> {
  try {
    const parsed = acceptInviteSchema.safeParse(raw);
    if (!parsed.success) throw new AppError("INVALID_INPUT", "Write a password.");
    return { ok: true, data: await acceptInvite(await getPrisma(), parsed.data.token, parsed.data.password) };
  } catch (err) {
    if (!(err instanceof AppError)) log.error({ err, operation: "acceptInvite" }, "accepting an invitation failed");
    return { ok: false, error: toPublicError(err) };
  }
}

"use server";
// The console's server actions: each is a few lines over a lib/ domain function, through the one wrapper
// (session → staff row re-read → role → zod → domain call → { ok, data } | { ok: false, error }).
import { z } from "zod";
import { claimHandoff, releaseHandoffClaim } from "@/lib/console/claims";
import { handoffDetail, conversationDetail } from "@/lib/console/queries";
import { handBackConversation, replyAsStaff, takeOverConversation } from "@/lib/conversations/takeover";
import { SUPERVISOR_ROLES } from "@/lib/auth/claims";
import { storeOf } from "@/lib/db/kysely";
import { log } from "@/lib/log";
import { advanceConversationFrom, claimFor } from "@/lib/runtime/advance";
import { decisionSchema, resumeRun } from "@/lib/runtime/resume";
import { retryDeadLetter } from "@/lib/runtime/retry-dead-letter";
import { getRuntime } from "@/lib/runtime/shared-runtime";
import { staffAction } from "./safe-action";

const id = z.string().trim().min(1).max(64);
const handoffRef = z.object({ handoffId: id });
const conversationRef = z.object({ conversationId: id });

/** Claim (or renew one's claim on) a pending handoff before working it. */
export const claimHandoffAction = staffAction({ name: "claimHandoff", input: handoffRef }, async ({ handoffId }, ctx) => {
  await claimHandoff(ctx.db, ctx, handoffId);
  return handoffDetail(ctx.db, ctx.tenantId, handoffId);
});

export const releaseHandoffAction = staffAction({ name: "releaseHandoff", input: handoffRef }, async ({ handoffId }, ctx) => {
  await releaseHandoffClaim(ctx.db, ctx, handoffId);
  return handoffDetail(ctx.db, ctx.tenantId, handoffId);
});

// The console always quotes the version the reviewer saw (the domain function also accepts none, for the CLI).
const consoleDecisionSchema = decisionSchema.extend({ version: z.number().int().positive() });

/**
 * Approve, deny (reason required) or edit-and-approve. A decision that settles the call resumes the run
 * here, before answering, so the reviewer sees the state the server confirmed (effect done, phase).
 */
export const decideHandoffAction = staffAction({ name: "decideHandoff", input: consoleDecisionSchema }, async (input, ctx) => {
  // RESUME: the decision takes the run's lease, so the run continues here rather than in a background worker; if
  // that fails, the decision stands and a worker picks the run up.
  const { outcome, resumeFailed } = await resumeRun(await getRuntime(), ctx, input);
  return { outcome: outcome.kind, resumeFailed, detail: await handoffDetail(ctx.db, ctx.tenantId, input.handoffId) };
});

export const takeOverConversationAction = staffAction(
  { name: "takeOverConversation", input: conversationRef },
  async ({ conversationId }, ctx) => {
    await takeOverConversation(ctx.db, ctx, conversationId);
    return conversationDetail(ctx.db, ctx.tenantId, conversationId);
  },
);

export const replyAsStaffAction = staffAction(
  { name: "replyAsStaff", input: conversationRef.extend({ text: z.string().max(4000) }) },
  async ({ conversationId, text }, ctx) => {
    await replyAsStaff(ctx.db, ctx, conversationId, text);
    return conversationDetail(ctx.db, ctx.tenantId, conversationId);
  },
);

export const handBackConversationAction = staffAction(
  { name: "handBackConversation", input: conversationRef },
  async ({ conversationId }, ctx) => {
    await handBackConversation(ctx.db, ctx, conversationId);
    return conversationDetail(ctx.db, ctx.tenantId, conversationId);
  },
);

/**
 * A supervisor retries a dead-lettered run: it goes back to RUNNING (lib/runtime/retry-dead-letter) and continues
 * here, before answering, so the page shows where it got to; if continuing fails, a worker picks it up.
 */
export const retryDeadLetterAction = staffAction(
  { name: "retryDeadLetter", input: z.object({ runId: id }), roles: SUPERVISOR_ROLES },
  async ({ runId }, ctx) => {
    const runtime = await getRuntime();
    // The retry takes the run's lease in its own commit, so the run continues here (not in a background worker) and
    // the page shows where it got to; if continuing fails, the lease runs out and a worker picks the run up.
    const claim = claimFor(runtime);
    await retryDeadLetter(storeOf(ctx.db), ctx, runId, { claim });
    const advanced = await advanceConversationFrom(runtime, runId, { claimedAs: claim }).catch((err: unknown) => {
      log.warn({ err, runId }, "retried run could not continue here; a worker will pick it up");
      return null;
    });
    const run = await ctx.db.run.findFirst({ where: { id: runId, tenantId: ctx.tenantId }, select: { phase: true } });
    return { runId, phase: run?.phase ?? advanced?.phase ?? "RUNNING" };
  },
);

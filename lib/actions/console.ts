"use server";
// The console's server actions: each is a few lines over a lib/ domain function, through the one wrapper
// (session → staff row re-read → role → zod → domain call → { ok, data } | { ok: false, error }).
import { z } from "zod";
import { claimHandoff, releaseHandoffClaim } from "@/lib/console/claims";
import { handoffDetail, conversationDetail } from "@/lib/console/queries";
import { decisionSchema, decideHandoff } from "@/lib/handoffs/decide";
import { handBackConversation, replyAsStaff, takeOverConversation } from "@/lib/conversations/takeover";
import { advanceConversationFrom, claimFor } from "@/lib/runtime/advance";
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
  // The decision takes the run's lease for this request, so it resumes here rather than in a background worker.
  const runtime = await getRuntime();
  const claim = claimFor(runtime);
  const outcome = await decideHandoff(ctx.db, ctx, input, { claimFor: claim });
  let resumeFailed = false;
  if (outcome.kind !== "awaiting_second_approval" && outcome.resumable) {
    try {
      await advanceConversationFrom(runtime, outcome.runId, { claimedAs: claim });
    } catch (err) {
      // The decision is committed either way; a worker picks the run up. Say so instead of failing the click.
      console.error("[console] resuming run after a decision failed:", err);
      resumeFailed = true;
    }
  }
  return { outcome: outcome.kind, resumeFailed, detail: await handoffDetail(ctx.db, ctx.tenantId, input.handoffId) };
});

export const takeOverConversationAction = staffAction({ name: "takeOverConversation", input: conversationRef }, async ({ conversationId }, ctx) => {
  await takeOverConversation(ctx.db, ctx, conversationId);
  return conversationDetail(ctx.db, ctx.tenantId, conversationId);
});

export const replyAsStaffAction = staffAction(
  { name: "replyAsStaff", input: conversationRef.extend({ text: z.string().max(4000) }) },
  async ({ conversationId, text }, ctx) => {
    await replyAsStaff(ctx.db, ctx, conversationId, text);
    return conversationDetail(ctx.db, ctx.tenantId, conversationId);
  },
);

export const handBackConversationAction = staffAction({ name: "handBackConversation", input: conversationRef }, async ({ conversationId }, ctx) => {
  await handBackConversation(ctx.db, ctx, conversationId);
  return conversationDetail(ctx.db, ctx.tenantId, conversationId);
});

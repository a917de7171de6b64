// Streaming a reply without ever showing a false claim. The model's text arrives in deltas; it is shown to the
// customer one COMPLETE sentence at a time, and only while nothing in it could claim an action: a sentence that
// speaks of refunds, cancellations, replacements, addresses or "done" — for an action this run has NOT done — stops
// the release, and so does anything the stop check (./stop-check) itself would send back as a false claim or a
// quote of the instructions (its own tests, not a copy of them). Everything from it on waits for the whole reply to
// pass the stop check and arrives as the stored message. What was released can only be sentences that claim nothing
// the run did not do, so a reply the stop check then rejects never put a false claim on a screen, not even for a
// moment.

import { quotesInstructions } from "@/lib/agent/prompt-leak";
import { falseClaims } from "./stop-check";

/**
 * What a sentence may speak of only once the run did it (by the tool that does it), and claims of anything done —
 * broader than the stop check's claims (a draft cannot be taken back, so a mere mention waits for the check).
 */
const TOPICS: Array<{ tool: string | null; pattern: RegExp }> = [
  {
    tool: "refund_order",
    pattern: /refund|money back|reimburs|credited|credit(?:ed)? (?:back|to)|paid back|pay you back|back (?:on|to) your (?:card|account)/i,
  },
  { tool: "cancel_order", pattern: /cancel/i },
  { tool: "create_replacement", pattern: /replac|re-?ship|send (?:you )?(?:a |another |a new )(?:one|item|parcel|order)|new one/i },
  { tool: "update_shipping_address", pattern: /address/i },
  // Words that claim something happened without naming it: held unless the run did anything at all.
  {
    tool: null,
    pattern: /\b(?:done|all set|taken care of|processed|completed|sorted|went through|has been|have been|was (?:sent|issued|made))\b/i,
  },
];

/** A sentence is complete at . ! ? (followed by whitespace) or a line break. */
const BOUNDARY = /[.!?…]+["')\]]*(?=\s)|\n/g;

export interface ReleaseRules {
  /** effect tools this run has done (a sentence about one of them may be true) */
  effectsDone: readonly string[];
}

/**
 * Whether `text` (complete sentences) may be shown before the stop check has seen the whole reply. `text` is all
 * that would then be shown (see `ReplyRelease`): a quote or claim split over sentences is judged as the stop check
 * will judge the reply.
 */
export function safeToRelease(text: string, rules: ReleaseRules): boolean {
  // What the stop check sends back — a quote of the agent's instructions, a claim of an action not done — waits for it.
  if (quotesInstructions(text) || falseClaims(text, rules.effectsDone).length) return false;
  return TOPICS.every(
    (t) => !t.pattern.test(text) || (t.tool === null ? rules.effectsDone.length > 0 : rules.effectsDone.includes(t.tool)),
  );
}

/**
 * Follows a streamed reply and decides what may be shown so far. `push` returns the text to show now (all released
 * text, not a delta) when it grew, else null. Once a sentence is held, nothing after it is released.
 */
export class ReplyRelease {
  private text = "";
  private releasedTo = 0;
  private held = false;

  constructor(private readonly rules: ReleaseRules) {}

  push(delta: string): string | null {
    this.text += delta;
    if (this.held) return null;
    let end = this.releasedTo;
    for (const m of this.text.slice(this.releasedTo).matchAll(BOUNDARY)) end = this.releasedTo + m.index! + m[0].length;
    if (end === this.releasedTo) return null;
    // Judged with what was released before them: the stop check reads the whole reply, and a quote of the
    // instructions spread over short sentences (or a claim across a line break) is in no one sentence alone.
    if (!safeToRelease(this.text.slice(0, end), this.rules)) {
      // Release the safe sentences before the first held one, then stop.
      let safeEnd = this.releasedTo;
      for (const m of this.text.slice(this.releasedTo, end).matchAll(BOUNDARY)) {
        const next = this.releasedTo + m.index! + m[0].length;
        if (!safeToRelease(this.text.slice(0, next), this.rules)) break;
        safeEnd = next;
      }
      this.held = true;
      if (safeEnd === this.releasedTo) return null;
      this.releasedTo = safeEnd;
      return this.released;
    }
    this.releasedTo = end;
    return this.released;
  }

  /** What has been shown so far. */
  get released(): string {
    return this.text.slice(0, this.releasedTo).trim();
  }

  /** Whether a sentence was held back (the rest arrives only as the checked, stored reply). */
  get holding(): boolean {
    return this.held;
  }
}

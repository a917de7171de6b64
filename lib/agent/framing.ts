// How text reaches the model. Customer text is DATA: every message a customer types is framed as one
// <customer_message> element, and inside it nothing can open or close an element (angle brackets become look-alike
// characters) or pose as the support system (its markers are neutralised). Notes from the support system and context
// from the shop travel as elements of their own OUTSIDE any customer message — a form customer text cannot take.
// The system prompt (./prompt) tells the model exactly this; the offline model reads the same framing.

export const CUSTOMER_TAG = "customer_message";
export const NOTE_TAG = "support_note";
export const CONTEXT_TAG = "shop_context";

// Words a customer might use to pose as the system: "[harness] approve", "<support_note>", "SYSTEM:".
const MARKERS = /\[\s*(harness|context|system|support[^\]]{0,20}|admin|assistant|developer|operator)\s*\]/gi;
const ROLE_PREFIX = /^(\s*)(system|assistant|developer|harness|support system)\s*:/gim;

/**
 * Customer text made inert: no angle brackets (so no element can be opened or closed from inside), no bracketed
 * system markers, no role prefixes at the start of a line. What the customer sees stays what they typed.
 */
export function neutralise(text: string): string {
  return text
    .replace(/</g, "‹")
    .replace(/>/g, "›")
    .replace(MARKERS, (_m, word: string) => `(${word.trim()})`)
    .replace(ROLE_PREFIX, (_m, space: string, role: string) => `${space}${role} -`);
}

/** A customer's message as the model reads it. */
export function customerText(text: string): string {
  return `<${CUSTOMER_TAG}>\n${neutralise(text)}\n</${CUSTOMER_TAG}>`;
}

/**
 * A tool's result as the model reads it: JSON whose every string is neutralised like customer text — an order note,
 * or an error that echoes what the model passed, can hold text a customer wrote. (The stored result keeps the data
 * as it is.)
 */
export function toolResultText(result: unknown): string {
  return JSON.stringify(result ?? {}, (_key, value: unknown) => (typeof value === "string" ? neutralise(value) : value));
}

/** A note from the support system to the model (written by code, never by a customer). */
export function harnessNote(text: string): string {
  return `<${NOTE_TAG}>${text}</${NOTE_TAG}>`;
}

/** Context from the shop (who signed the customer in). */
export function shopContext(text: string): string {
  return `<${CONTEXT_TAG}>${text}</${CONTEXT_TAG}>`;
}

export type FramedText = { kind: "customer" | "note" | "context"; text: string } | { kind: "unframed"; text: string };

const FRAME = new RegExp(`^<(${CUSTOMER_TAG}|${NOTE_TAG}|${CONTEXT_TAG})>\\n?([\\s\\S]*?)\\n?</\\1>$`);

/** Reads one user text block back: which kind of text it is and its content (for the stop check and the offline model). */
export function readFramed(block: string): FramedText {
  const m = block.trim().match(FRAME);
  if (!m) return { kind: "unframed", text: block.trim() };
  const kind = m[1] === CUSTOMER_TAG ? "customer" : m[1] === NOTE_TAG ? "note" : "context";
  return { kind, text: m[2]!.trim() };
}

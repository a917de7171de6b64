import type { OfflineRequest, RequestBlock } from "./types";

export type Validation = { ok: true; request: OfflineRequest } | { ok: false; message: string };

type Block = RequestBlock & { type: string };

function blocksOf(content: unknown): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? (content as Block[]) : [];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Checks a request body the way the Messages API does where it matters to the runtime, with the API's
 * own wording: the first message is the user's; consecutive same-role messages are merged (allowed);
 * every assistant tool_use is answered by a tool_result with its id in the immediately following user
 * message; tool_result blocks come before any text there and answer only tool_use ids of the previous
 * assistant message; tool ids are unique; at most 4 cache_control breakpoints.
 */
export function validateRequest(body: unknown): Validation {
  const fail = (message: string): Validation => ({ ok: false, message });
  if (!isObject(body)) return fail("request body must be a JSON object");
  if (typeof body.model !== "string" || !body.model) return fail("model: Field required");
  if (typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
    return fail("max_tokens: Field required and must be a positive integer");
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) return fail("messages: at least one message is required");

  let breakpoints = 0;
  if (body.system !== undefined) {
    if (Array.isArray(body.system)) {
      for (const [i, b] of (body.system as Block[]).entries()) {
        if (!isObject(b) || b.type !== "text" || typeof b.text !== "string") return fail(`system.${i}: expected a text block`);
        if (b.cache_control) breakpoints++;
      }
    } else if (typeof body.system !== "string") return fail("system: expected a string or a list of text blocks");
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return fail("tools: expected a list");
    const names = new Set<string>();
    for (const [i, t] of (body.tools as unknown[]).entries()) {
      if (!isObject(t) || typeof t.name !== "string" || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name)) {
        return fail(`tools.${i}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      }
      if (!isObject(t.input_schema) || t.input_schema.type !== "object")
        return fail(`tools.${i}.input_schema.type: Input should be 'object'`);
      if (names.has(t.name)) return fail("tools: Tool names must be unique.");
      names.add(t.name);
      if (t.cache_control) breakpoints++;
    }
  }

  // Merge consecutive same-role messages as the API does, remembering each block's original index.
  type Turn = { role: "user" | "assistant"; blocks: Array<{ block: Block; at: string }>; first: number };
  const turns: Turn[] = [];
  const messages = body.messages as unknown[];
  for (const [i, m] of messages.entries()) {
    if (!isObject(m)) return fail(`messages.${i}: expected an object`);
    if (m.role !== "user" && m.role !== "assistant") return fail(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (typeof m.content !== "string" && !Array.isArray(m.content)) return fail(`messages.${i}.content: Field required`);
    const blocks = blocksOf(m.content);
    const isFinalAssistant = i === messages.length - 1 && m.role === "assistant";
    if (blocks.length === 0 && !isFinalAssistant) {
      return fail(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    }
    for (const [j, b] of blocks.entries()) {
      if (!isObject(b) || typeof b.type !== "string") return fail(`messages.${i}.content.${j}: expected a content block`);
      if (b.type === "text" && (typeof b.text !== "string" || (b.text.trim() === "" && !isFinalAssistant))) {
        return fail(`messages.${i}.content.${j}: text content blocks must contain non-whitespace text`);
      }
      if (b.cache_control) breakpoints++;
    }
    const last = turns.at(-1);
    const entries = blocks.map((block, j) => ({ block, at: `messages.${i}.content.${j}` }));
    if (last && last.role === m.role) last.blocks.push(...entries);
    else turns.push({ role: m.role, blocks: entries, first: i });
  }
  if (breakpoints > 4) return fail(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);
  if (turns[0]!.role !== "user") return fail('messages: first message must use the "user" role');

  const seenToolUse = new Set<string>();
  for (const [t, turn] of turns.entries()) {
    if (turn.role === "assistant") {
      const ids: string[] = [];
      for (const { block, at } of turn.blocks) {
        if (block.type === "tool_result") return fail(`${at}: tool_result blocks are only allowed in user messages`);
        if (block.type !== "tool_use") continue;
        const id = (block as { id?: unknown }).id;
        if (typeof id !== "string" || !id) return fail(`${at}.id: Field required`);
        if (typeof (block as { name?: unknown }).name !== "string") return fail(`${at}.name: Field required`);
        if (seenToolUse.has(id)) return fail(`${at}: \`tool_use\` ids must be unique`);
        seenToolUse.add(id);
        ids.push(id);
      }
      if (ids.length === 0) continue;
      const next = turns[t + 1];
      const answered = new Set(
        (next?.blocks ?? [])
          .filter(({ block }) => block.type === "tool_result")
          .map(({ block }) => String((block as { tool_use_id?: unknown }).tool_use_id)),
      );
      const missing = ids.filter((id) => !answered.has(id));
      if (missing.length) {
        return fail(
          `messages.${turn.first}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    } else {
      const prev = turns[t - 1];
      const expected = new Set(
        (prev?.blocks ?? []).filter(({ block }) => block.type === "tool_use").map(({ block }) => String((block as { id?: unknown }).id)),
      );
      const answered = new Set<string>();
      let sawOther = false;
      for (const { block, at } of turn.blocks) {
        if (block.type === "tool_use") return fail(`${at}: tool_use blocks are only allowed in assistant messages`);
        if (block.type !== "tool_result") {
          sawOther = true;
          continue;
        }
        const id = (block as { tool_use_id?: unknown }).tool_use_id;
        if (typeof id !== "string" || !id) return fail(`${at}.tool_use_id: Field required`);
        if (sawOther) {
          return fail(`${at}: tool_result blocks must come first in the user message content, before any text or other blocks`);
        }
        if (!expected.has(id)) {
          return fail(
            `${at}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        if (answered.has(id)) return fail(`${at}: each \`tool_use\` id may be answered by only one \`tool_result\` block: ${id}`);
        answered.add(id);
      }
    }
  }
  return { ok: true, request: body as unknown as OfflineRequest };
}

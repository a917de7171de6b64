// Ids of calls raised inside a specialist (an agent run as a tool) travel up namespaced by the OUTER tool_use id, so
// they stay unique when several specialists run in one turn and the specialist's own id is recoverable. Both ids come
// from a model, so the outer one is percent-encoded (an id containing ":" or "%" cannot pose as another call's prefix)
// and the prefix opens with a marker the product owns (an outer id that is itself "v1:agent_as_tool:…" is encoded,
// never read as a scope). Lookups compare whole scopes, never prefixes of ids.

export const AGENT_AS_TOOL_MARKER = "v1:agent_as_tool:";

/** The scope of the specialist run by the outer call `outerToolUseId` (itself possibly namespaced: nesting). */
export function scopeOf(outerToolUseId: string): string {
  return `${AGENT_AS_TOOL_MARKER}${encodeURIComponent(outerToolUseId)}:`;
}

/** `v1:agent_as_tool:<percent-encoded outer tool_use id>:<inner id>` */
export function namespacedId(scope: string, innerId: string): string {
  return `${scope}${innerId}`;
}

/** Splits a namespaced id into the outer tool_use id and the specialist's own id; null when `id` is not namespaced. */
export function parseNamespacedId(id: string): { outer: string; inner: string } | null {
  if (!id.startsWith(AGENT_AS_TOOL_MARKER)) return null;
  const rest = id.slice(AGENT_AS_TOOL_MARKER.length);
  const colon = rest.indexOf(":"); // the encoded outer id contains none
  if (colon <= 0) return null;
  try {
    return { outer: decodeURIComponent(rest.slice(0, colon)), inner: rest.slice(colon + 1) };
  } catch {
    return null;
  }
}

/** The specialist's own id of a call raised in `scope`, or null when the call is not of that scope. */
export function localId(scope: string, id: string): string | null {
  const parsed = parseNamespacedId(id);
  return parsed && scopeOf(parsed.outer) === scope ? parsed.inner : null;
}

/**
 * Why a model's tool_use ids cannot be recorded, if they cannot: an id repeated in one message or already used by an
 * earlier message of the conversation (`used`: the provider refuses a request carrying one id twice, and the run's
 * calls are keyed by it), or one posing as a namespaced id (the marker is the runtime's; a model's id that opened
 * with it could collide with a specialist's call).
 */
export function unusableToolUseIds(uses: Array<{ id: string }>, used: ReadonlySet<string> = new Set()): string | null {
  const seen = new Set<string>();
  for (const u of uses) {
    if (seen.has(u.id)) return `the tool_use id ${u.id} appears twice`;
    if (used.has(u.id)) return `the tool_use id ${u.id} was already used earlier in the conversation`;
    if (u.id.startsWith(AGENT_AS_TOOL_MARKER)) return `the tool_use id ${u.id} uses the runtime's reserved prefix`;
    seen.add(u.id);
  }
  return null;
}

import { createHash } from "node:crypto";
import type { WireMessage } from "./wire";
import type { OfflineRequest } from "./types";

/** Deterministic token estimate: about four characters per token, at least one. */
export function estimateTokens(value: unknown): number {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? "");
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * Usage accounting with a prompt cache per offline-fetch instance: when the request marks a
 * cache_control breakpoint, the prefix (system + tools) is written to the cache the first time it is
 * seen and read from it afterwards, like the real API's `cache_creation_input_tokens` /
 * `cache_read_input_tokens`. Without a breakpoint everything counts as plain input.
 */
export class PromptCache {
  private readonly seen = new Set<string>();

  usage(request: OfflineRequest, content: WireMessage["content"]): WireMessage["usage"] {
    const prefix = { system: request.system ?? "", tools: request.tools ?? [] };
    const prefixTokens = estimateTokens(prefix);
    const restTokens = estimateTokens(request.messages);
    const marked = hasBreakpoint(request);
    let created = 0;
    let read = 0;
    if (marked) {
      const key = createHash("sha256").update(JSON.stringify(stripCacheControl(prefix))).digest("hex");
      if (this.seen.has(key)) read = prefixTokens;
      else {
        this.seen.add(key);
        created = prefixTokens;
      }
    }
    return {
      input_tokens: marked ? restTokens : prefixTokens + restTokens,
      output_tokens: estimateTokens(content),
      cache_creation_input_tokens: created,
      cache_read_input_tokens: read,
      cache_creation: { ephemeral_5m_input_tokens: created, ephemeral_1h_input_tokens: 0 },
      inference_geo: null,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: "standard",
      speed: null,
    } as WireMessage["usage"];
  }
}

function hasBreakpoint(request: OfflineRequest): boolean {
  const system = Array.isArray(request.system) ? request.system.some((b) => b.cache_control) : false;
  return system || (request.tools ?? []).some((t) => t.cache_control);
}

// The breakpoint's position is not part of what is cached.
function stripCacheControl(prefix: { system: unknown; tools: unknown[] }) {
  const strip = (v: unknown) => {
    if (typeof v !== "object" || v === null) return v;
    const { cache_control: _drop, ...rest } = v as Record<string, unknown>;
    return rest;
  };
  return { system: Array.isArray(prefix.system) ? prefix.system.map(strip) : prefix.system, tools: prefix.tools.map(strip) };
}

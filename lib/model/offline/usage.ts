import { createHash } from "node:crypto";
import type { WireMessage } from "./wire";
import type { OfflineRequest } from "./types";

/** Deterministic token estimate: about four characters per token, at least one. */
export function estimateTokens(value: unknown): number {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? "");
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * The request's input in tokens, counted block by block so that any prefix of it has a count of its own: the stable
 * prefix (system + tools), then each content block of each message. What `count_tokens` answers, and what a
 * response's usage adds up to (input + cache reads + cache writes).
 */
export function requestTokens(request: OfflineRequest): number {
  return segmentsOf(request).reduce((n, s) => n + s.tokens, 0);
}

interface Segment {
  /** what this piece is, without its breakpoint (a breakpoint's position is not part of what is cached) */
  key: string;
  tokens: number;
  /** a cache_control breakpoint ends here */
  breakpoint: boolean;
}

function segmentsOf(request: OfflineRequest): Segment[] {
  const prefix = { system: request.system ?? "", tools: request.tools ?? [] };
  const out: Segment[] = [
    {
      key: JSON.stringify(stripCacheControl(prefix)),
      tokens: estimateTokens(prefix),
      breakpoint: hasPrefixBreakpoint(request),
    },
  ];
  for (const m of request.messages) {
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    blocks.forEach((b, i) => {
      const { cache_control, ...rest } = b as Record<string, unknown>;
      out.push({ key: `${i === 0 ? m.role : ""}${JSON.stringify(rest)}`, tokens: estimateTokens(rest), breakpoint: !!cache_control });
    });
  }
  return out;
}

/**
 * Usage accounting with a prompt cache per offline-fetch instance, like the real API's: at each cache_control
 * breakpoint the prefix up to it is looked up; the longest prefix seen before is read from the cache
 * (`cache_read_input_tokens`), the rest up to the last breakpoint is written to it (`cache_creation_input_tokens`),
 * and what follows the last breakpoint is plain input. Without a breakpoint everything counts as plain input.
 */
const LOOKBACK = 20;

export class PromptCache {
  private readonly seen = new Set<string>();

  usage(request: OfflineRequest, content: WireMessage["content"]): WireMessage["usage"] {
    const segments = segmentsOf(request);
    // The prefix up to each block, as the API sees it: at a breakpoint it looks for a cached prefix ending there or
    // at one of the LOOKBACK blocks before it (so a breakpoint that moved on still reads what the last request wrote).
    const hash = createHash("sha256");
    const digests: string[] = [];
    const upToTokens: number[] = [];
    let upTo = 0;
    for (const s of segments) {
      hash.update(s.key);
      digests.push(hash.copy().digest("hex"));
      upTo += s.tokens;
      upToTokens.push(upTo);
    }
    let readUpTo = 0; // the longest cached prefix
    let lastBreak = 0; // tokens up to the last breakpoint
    segments.forEach((s, i) => {
      if (!s.breakpoint) return;
      for (let j = i; j >= Math.max(0, i - LOOKBACK); j--)
        if (this.seen.has(digests[j]!)) {
          readUpTo = Math.max(readUpTo, upToTokens[j]!);
          break;
        }
      this.seen.add(digests[i]!);
      lastBreak = upToTokens[i]!;
    });
    const total = upTo;
    const read = readUpTo;
    const created = Math.max(0, lastBreak - readUpTo);
    return {
      input_tokens: total - read - created,
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

function hasPrefixBreakpoint(request: OfflineRequest): boolean {
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

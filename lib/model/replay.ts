/**
 * Record and replay of Messages API exchanges (issue 10.4). `createRecordingFetch` sits under the real SDK client
 * and keeps every request and response as they crossed the wire; `fixtureFrom` turns them into a fixture with the
 * secrets and personal data scrubbed; `createReplayFetch` serves a fixture back to the real SDK client with no
 * network: each request is matched to the next recorded one and answered with the recorded response, JSON or SSE,
 * byte for byte (placeholders aside, below).
 *
 * What a request must match (anything else is a drift, answered with a 400 whose message is a readable diff):
 *   - method and path; the `anthropic-version` and `anthropic-beta` headers (caching betas included);
 *   - the body's model, max_tokens, stream, tool names in order, and every other key exactly — except:
 *   - the system prompt and tool definitions are kept as a digest only (they are long and change with every prompt
 *     edit); the digest is informative and NOT matched, but their cache_control breakpoints are;
 *   - cache_control inside `messages` is NOT matched (where the moving breakpoint sits is the client's business and
 *     changes with it); the request is still refused, like the API does, with more than 4 breakpoints in all;
 *   - placeholders: the fixture holds «email-1», «name-2», «address-1», «id-3», «date-1» where the recording had
 *     personal data or values that differ between runs (database ids, dates). In a recorded request a placeholder
 *     matches any text and is bound to it on first sight; afterwards it must be that same text. Responses get the
 *     bound values back, so a recorded tool_use with «email-1» carries the email this run's customer typed.
 * `/v1/messages/count_tokens` requests are matched among the fixture's count_tokens exchanges, in order, and need
 * not all be used.
 */
import { createHash } from "node:crypto";

export interface CacheControl {
  type: string;
  ttl?: string;
}

/** A request body as a fixture keeps it: the stable prefix reduced to digests and breakpoints. */
export interface FixtureBody {
  model?: string;
  max_tokens?: number;
  stream?: boolean;
  system?: { sha256: string; chars: number; cache_control: Array<CacheControl | null> };
  tools?: { names: string[]; sha256: string; cache_control: Record<string, CacheControl> };
  messages?: unknown[];
  [key: string]: unknown;
}

export interface FixtureRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: FixtureBody;
}

/** SSE frames are kept parsed (`{event, data}`) when re-serialising them gives the same bytes, else as raw text. */
export type SseFrame = { event: string; data: unknown } | string;

export interface FixtureResponse {
  status: number;
  headers: Record<string, string>;
  /** A JSON body whose compact serialisation is the recorded bytes. */
  json?: unknown;
  sse?: SseFrame[];
  /** Any other body, verbatim. */
  text?: string;
}

export interface FixtureExchange {
  request: FixtureRequest;
  response: FixtureResponse;
}

export interface FixtureHeader {
  scenario: string;
  /** "recorded": from the real API by `npm run record`; "hand-written": written to the documented wire format. */
  source: "recorded" | "hand-written";
  note: string;
  model: string;
  sdk: string;
  recordedAt: string;
  scrubbed: string[];
}

export interface ClaudeFixture {
  header: FixtureHeader;
  exchanges: FixtureExchange[];
}

const COUNT_TOKENS = "/v1/messages/count_tokens";
const MAX_BREAKPOINTS = 4;
const REQUEST_HEADERS = ["anthropic-version", "anthropic-beta"];
const SECRET_HEADERS = ["x-api-key", "authorization"];
const RESPONSE_HEADERS = /^(content-type|request-id|retry-after|retry-after-ms|x-should-retry|anthropic-ratelimit-.*)$/;
export const SCRUBBED = "«scrubbed»";
const PLACEHOLDER = /«(email|name|address|id|date)-\d+»/g;

// ---------------------------------------------------------------------------------------------------------------
// Request bodies in fixture form

const sha256 = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex");

function withoutCacheControl<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutCacheControl) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (k !== "cache_control") out[k] = withoutCacheControl(v);
    return out as T;
  }
  return value;
}

/** Every cache_control breakpoint in a raw request body (system, tools and messages). */
export function countBreakpoints(body: Record<string, unknown>): number {
  let n = 0;
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (k === "cache_control" && x) n++;
        else walk(x);
      }
    }
  };
  walk([body.system, body.tools, body.messages]);
  return n;
}

/** A raw request body as a fixture keeps it (and as the replay compares it). */
export function fixtureBody(raw: Record<string, unknown>): FixtureBody {
  const { system, tools, ...rest } = raw;
  const body: FixtureBody = { ...rest };
  if (system !== undefined) {
    const blocks = typeof system === "string" ? [{ type: "text", text: system }] : (system as Array<Record<string, unknown>>);
    body.system = {
      sha256: sha256(withoutCacheControl(blocks)),
      chars: blocks.reduce((n, b) => n + String(b.text ?? "").length, 0),
      cache_control: blocks.map((b) => (b.cache_control as CacheControl | undefined) ?? null),
    };
  }
  if (Array.isArray(tools)) {
    const list = tools as Array<{ name: string; cache_control?: CacheControl }>;
    body.tools = {
      names: list.map((t) => t.name),
      sha256: sha256(withoutCacheControl(list)),
      cache_control: Object.fromEntries(list.filter((t) => t.cache_control).map((t) => [t.name, t.cache_control!])),
    };
  }
  return body;
}

// ---------------------------------------------------------------------------------------------------------------
// Matching

type Bindings = Map<string, string>;

function escapeRegExp(s: string) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Matches a recorded string (maybe with placeholders) against a sent one; binds new placeholders on success. */
function matchString(recorded: string, sent: string, bindings: Bindings): boolean {
  const names = recorded.match(PLACEHOLDER);
  if (!names) return recorded === sent;
  const groups: string[] = [];
  let pattern = "";
  let last = 0;
  for (const m of recorded.matchAll(PLACEHOLDER)) {
    pattern += escapeRegExp(recorded.slice(last, m.index));
    const bound = bindings.get(m[0]);
    const seen = groups.indexOf(m[0]);
    if (bound !== undefined) pattern += escapeRegExp(bound);
    else if (seen >= 0) pattern += `\\${seen + 1}`;
    else {
      groups.push(m[0]);
      pattern += "(.+?)";
    }
    last = m.index + m[0].length;
  }
  pattern += escapeRegExp(recorded.slice(last));
  const found = new RegExp(`^${pattern}$`, "s").exec(sent);
  if (!found) return false;
  for (const [i, name] of groups.entries()) bindings.set(name, found[i + 1]!);
  return true;
}

const show = (v: unknown) => {
  const s = JSON.stringify(v);
  return s === undefined ? "nothing" : s.length > 160 ? `${s.slice(0, 157)}…` : s;
};

function deepMatch(recorded: unknown, sent: unknown, path: string, bindings: Bindings, problems: string[]): void {
  if (problems.length >= 8) return;
  if (typeof recorded === "string" && typeof sent === "string") {
    if (!matchString(recorded, sent, bindings)) problems.push(`${path}: recorded ${show(recorded)} but sent ${show(sent)}`);
    return;
  }
  if (Array.isArray(recorded) && Array.isArray(sent)) {
    if (recorded.length !== sent.length) problems.push(`${path}: recorded ${recorded.length} items but sent ${sent.length}`);
    for (let i = 0; i < Math.min(recorded.length, sent.length); i++) deepMatch(recorded[i], sent[i], `${path}[${i}]`, bindings, problems);
    return;
  }
  if (recorded && sent && typeof recorded === "object" && typeof sent === "object" && !Array.isArray(recorded) && !Array.isArray(sent)) {
    const keys = new Set([...Object.keys(recorded), ...Object.keys(sent)]);
    for (const k of keys) {
      const r = (recorded as Record<string, unknown>)[k];
      const s = (sent as Record<string, unknown>)[k];
      if (r === undefined || s === undefined) {
        if (r !== s) problems.push(`${path}.${k}: recorded ${show(r)} but sent ${show(s)}`);
      } else deepMatch(r, s, `${path}.${k}`, bindings, problems);
    }
    return;
  }
  if (recorded !== sent) problems.push(`${path}: recorded ${show(recorded)} but sent ${show(sent)}`);
}

/**
 * Why a sent request does not match a recorded one (empty when it does), by the rules above. Placeholders bound
 * while matching are written to `bindings` only when the whole request matches.
 */
export function requestMismatches(recorded: FixtureRequest, sent: FixtureRequest, bindings: Bindings = new Map()): string[] {
  const problems: string[] = [];
  const trial = new Map(bindings);
  if (recorded.method !== sent.method || recorded.path !== sent.path)
    problems.push(`endpoint: recorded ${recorded.method} ${recorded.path} but sent ${sent.method} ${sent.path}`);
  for (const h of REQUEST_HEADERS) {
    if (recorded.headers[h] !== sent.headers[h])
      problems.push(`header ${h}: recorded ${show(recorded.headers[h])} but sent ${show(sent.headers[h])}`);
  }
  const strip = (b: FixtureBody) => {
    const { system, tools, messages, ...rest } = b;
    return {
      ...rest,
      system: system && { cache_control: system.cache_control },
      tools: tools && { names: tools.names, cache_control: tools.cache_control },
      messages: messages && withoutCacheControl(messages),
    };
  };
  deepMatch(strip(recorded.body), strip(sent.body), "body", trial, problems);
  if (!problems.length) for (const [k, v] of trial) bindings.set(k, v);
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// Replay

export interface ReplayLogEntry {
  path: string;
  /** The index of the exchange that answered, or null when nothing matched. */
  exchange: number | null;
  headers: Record<string, string>;
}

export interface Replay {
  fetch: typeof fetch;
  /** Every request received, in order. */
  log: ReplayLogEntry[];
  /** The diffs of requests that matched nothing; each was answered with a 400. */
  mismatches: string[];
  /** Placeholder → the value this run bound to it. */
  bindings: Map<string, string>;
  /** Throws a readable error when a request drifted or a recorded /v1/messages exchange was never asked for. */
  assertDone(): void;
}

function requestHeaders(input: RequestInfo | URL, init?: RequestInit): Record<string, string> {
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  const out: Record<string, string> = {};
  headers.forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

async function requestText(input: RequestInfo | URL, init?: RequestInit): Promise<string> {
  if (typeof init?.body === "string") return init.body;
  if (init?.body) return new Response(init.body).text();
  return input instanceof Request ? input.text() : "";
}

function urlOf(input: RequestInfo | URL): URL {
  return new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
}

/** The recorded response with this run's values put back in place of the placeholders. */
function materialise(response: FixtureResponse, bindings: Bindings, where: string): Response {
  const fill = (s: string) =>
    s.replace(PLACEHOLDER, (name) => {
      const v = bindings.get(name);
      if (v === undefined) throw new Error(`${where}: the recorded response uses ${name}, which no request so far has bound`);
      return v;
    });
  const headers = new Headers(response.headers);
  if (response.sse) {
    const frames = response.sse.map((f) => fill(typeof f === "string" ? f : `event: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`));
    const encoder = new TextEncoder();
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (next >= frames.length) return controller.close();
        controller.enqueue(encoder.encode(frames[next++]!));
      },
    });
    return new Response(body, { status: response.status, headers });
  }
  const text = response.json !== undefined ? JSON.stringify(response.json) : (response.text ?? "");
  return new Response(fill(text), { status: response.status, headers });
}

function invalidRequest(message: string): Response {
  return new Response(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message }, request_id: null }), {
    status: 400,
    // Never retried by the SDK: a drift does not go away.
    headers: { "content-type": "application/json", "x-should-retry": "false" },
  });
}

/** A `fetch` serving `fixture` to the real SDK client, by the matching rules at the top of this file. */
export function createReplayFetch(fixture: ClaudeFixture): Replay {
  const name = fixture.header.scenario;
  const messages = fixture.exchanges.map((e, i) => ({ e, i })).filter(({ e }) => e.request.path !== COUNT_TOKENS);
  const counts = fixture.exchanges.map((e, i) => ({ e, i })).filter(({ e }) => e.request.path === COUNT_TOKENS);
  let nextMessage = 0;
  let nextCount = 0;
  const bindings: Bindings = new Map();
  const log: ReplayLogEntry[] = [];
  const mismatches: string[] = [];

  const replayFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    await new Promise((resolve) => setImmediate(resolve)); // leaves the process, as a network request would
    const url = urlOf(input);
    const headers = requestHeaders(input, init);
    const entry: ReplayLogEntry = { path: url.pathname, exchange: null, headers };
    log.push(entry);
    const rawText = await requestText(input, init);
    let raw: Record<string, unknown>;
    try {
      raw = rawText ? JSON.parse(rawText) : {};
    } catch {
      return invalidRequest("replay: the request body is not valid JSON.");
    }
    const breakpoints = countBreakpoints(raw);
    if (breakpoints > MAX_BREAKPOINTS)
      return invalidRequest(`A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`);
    const sent: FixtureRequest = {
      method: (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase(),
      path: url.pathname,
      headers,
      body: fixtureBody(raw),
    };
    const isCount = sent.path === COUNT_TOKENS;
    const queue = isCount ? counts : messages;
    const from = isCount ? nextCount : nextMessage;
    const ordinal = `${isCount ? "count_tokens request" : "request"} ${from + 1} of ${queue.length}`;
    const candidate = queue[from];
    if (!candidate) {
      const why = `claude replay (${name}): ${ordinal}: the fixture has no further ${isCount ? "count_tokens " : ""}exchange for ${sent.method} ${sent.path} — re-record with \`npm run record\``;
      mismatches.push(why);
      return invalidRequest(why);
    }
    const problems = requestMismatches(candidate.e.request, sent, bindings);
    if (problems.length) {
      const why = `claude replay (${name}): ${ordinal} does not match the recording:\n  ${problems.join("\n  ")}`;
      mismatches.push(why);
      return invalidRequest(why);
    }
    if (isCount) nextCount++;
    else nextMessage++;
    entry.exchange = candidate.i;
    return materialise(candidate.e.response, bindings, `claude replay (${name}): ${ordinal}`);
  };

  return {
    fetch: replayFetch as typeof fetch,
    log,
    mismatches,
    bindings,
    assertDone() {
      if (mismatches.length) throw new Error(mismatches.join("\n"));
      if (nextMessage < messages.length)
        throw new Error(`claude replay (${name}): only ${nextMessage} of ${messages.length} recorded requests were made`);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Recording

export interface RawExchange {
  method: string;
  path: string;
  requestHeaders: Record<string, string>;
  requestBody: string;
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: string;
}

/**
 * Wraps a `fetch` (the network's, in `npm run record`) and keeps every exchange as it crossed the wire. The caller
 * reads the response as it arrives (a stream stays a stream); the copy is complete once the caller has read it.
 */
export function createRecordingFetch(inner: typeof fetch): { fetch: typeof fetch; exchanges: RawExchange[]; settled(): Promise<void> } {
  const exchanges: RawExchange[] = [];
  const pending: Promise<void>[] = [];
  const recordingFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = urlOf(input);
    const requestBody = await requestText(input, init);
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const requestHeadersSeen = requestHeaders(input, init);
    const response = await inner(input instanceof Request ? input : url.href, { ...init, body: requestBody || undefined });
    const responseHeaders: Record<string, string> = {};
    response.headers.forEach((v, k) => {
      responseHeaders[k] = v;
    });
    const exchange: RawExchange = {
      method,
      path: url.pathname,
      requestHeaders: requestHeadersSeen,
      requestBody,
      status: response.status,
      responseHeaders,
      responseBody: "",
    };
    exchanges.push(exchange);
    if (!response.body) return response;
    const [mine, theirs] = response.body.tee();
    pending.push(
      new Response(mine).text().then((t) => {
        exchange.responseBody = t;
      }),
    );
    return new Response(theirs, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { fetch: recordingFetch as typeof fetch, exchanges, settled: () => Promise.all(pending).then(() => undefined) };
}

// ---------------------------------------------------------------------------------------------------------------
// Scrubbing

export type SensitiveKind = "email" | "name" | "address";

/**
 * Replaces personal data and run-dependent values with numbered placeholders, the same value always by the same
 * placeholder: known values (the demo's customer and staff names — word by word —, their addresses), any email,
 * and database ids, UUIDs and dates, which differ from one run to the next.
 */
export class Scrubber {
  private readonly assigned = new Map<string, string>();
  private readonly counters = new Map<string, number>();
  private readonly pattern: RegExp;
  private readonly kinds = new Map<string, string>();

  constructor(known: Array<{ value: string; kind: SensitiveKind }>) {
    for (const k of known) if (k.value.trim().length >= 2) this.kinds.set(k.value, k.kind);
    const literals = [...this.kinds.keys()].sort((a, b) => b.length - a.length).map((v) => `\\b${escapeRegExp(v)}\\b`);
    const generic = [
      "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}", // email
      "\\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\b", // uuid
      "\\bc[a-z0-9]{24}\\b", // cuid (database ids)
      "\\b\\d{4}-\\d{2}-\\d{2}(?:T[0-9:.]+Z?)?\\b", // date / timestamp
    ];
    this.pattern = new RegExp([...generic.slice(0, 1), ...literals, ...generic.slice(1)].join("|"), "g");
  }

  private kindOf(value: string): string {
    const known = this.kinds.get(value);
    if (known) return known;
    if (value.includes("@")) return "email";
    if (/^\d{4}-\d{2}-\d{2}/.test(value)) return "date";
    return "id";
  }

  /** A value's placeholder, assigned on first sight. */
  placeholder(value: string): string {
    let p = this.assigned.get(value);
    if (!p) {
      const kind = this.kindOf(value);
      const n = (this.counters.get(kind) ?? 0) + 1;
      this.counters.set(kind, n);
      p = `«${kind}-${n}»`;
      this.assigned.set(value, p);
    }
    return p;
  }

  scrub(text: string): string {
    return text.replace(this.pattern, (m) => this.placeholder(m));
  }

  /** Whether the text holds anything to scrub. */
  holds(text: string): boolean {
    this.pattern.lastIndex = 0;
    return this.pattern.test(text);
  }

  scrubDeep<T>(value: T): T {
    if (typeof value === "string") return this.scrub(value) as T;
    if (Array.isArray(value)) return value.map((v) => this.scrubDeep(v)) as T;
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.scrubDeep(v)])) as T;
    }
    return value;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw exchanges → fixture

/** A fixture as a file: indented, but each message and each SSE frame on one line, so an exchange reads top down. */
export function serialiseFixture(fixture: ClaudeFixture): string {
  const inline: string[] = [];
  const mark = (v: unknown) => `\u0000${inline.push(JSON.stringify(v)) - 1}\u0000`;
  const marked = {
    ...fixture,
    exchanges: fixture.exchanges.map((x) => ({
      request: {
        ...x.request,
        body: { ...x.request.body, ...(x.request.body.messages ? { messages: x.request.body.messages.map(mark) } : {}) },
      },
      response: { ...x.response, ...(x.response.sse ? { sse: x.response.sse.map(mark) } : {}) },
    })),
  };
  return `${JSON.stringify(marked, null, 2).replace(/"\\u0000(\d+)\\u0000"/g, (_, i) => inline[Number(i)]!)}\n`;
}

function parseSse(text: string): SseFrame[] {
  const frames = text.split(/(?<=\n\n)/).filter((f) => f.length);
  return frames.map((raw) => {
    const m = /^event: ([^\n]+)\ndata: ([^\n]+)\n\n$/.exec(raw);
    if (!m) return raw;
    try {
      const data = JSON.parse(m[2]!);
      const again = `event: ${m[1]}\ndata: ${JSON.stringify(data)}\n\n`;
      return again === raw ? { event: m[1]!, data } : raw;
    } catch {
      return raw;
    }
  });
}

type DeltaFrame = { event: string; data: { type: string; index: number; delta: Record<string, string> } };
const deltaText = (f: DeltaFrame) => f.data.delta.text ?? f.data.delta.partial_json ?? "";
const isDelta = (f: SseFrame): f is DeltaFrame =>
  typeof f !== "string" &&
  f.event === "content_block_delta" &&
  ["text_delta", "input_json_delta"].includes((f as DeltaFrame).data?.delta?.type);

/**
 * Personal data split across two deltas would escape scrubbing: the deltas of such a block are merged into its
 * first one (the stream's events stay valid; only their chunking changes, and only there).
 */
function coalesceAroundSensitive(frames: SseFrame[], scrubber: Scrubber): SseFrame[] {
  const byIndex = new Map<number, DeltaFrame[]>();
  for (const f of frames) if (isDelta(f)) byIndex.set(f.data.index, [...(byIndex.get(f.data.index) ?? []), f]);
  const drop = new Set<SseFrame>();
  for (const deltas of byIndex.values()) {
    const whole = deltas.map(deltaText).join("");
    if (!scrubber.holds(whole)) continue;
    const scrubbedApart = deltas.map((d) => scrubber.scrub(deltaText(d))).join("");
    if (scrubbedApart === scrubber.scrub(whole)) continue;
    const first = deltas[0]!;
    const key = first.data.delta.type === "text_delta" ? "text" : "partial_json";
    first.data.delta[key] = whole;
    for (const d of deltas.slice(1)) drop.add(d);
  }
  return frames.filter((f) => !drop.has(f));
}

function bodyOf(raw: RawExchange, scrubber: Scrubber): Pick<FixtureResponse, "json" | "sse" | "text"> {
  const type = raw.responseHeaders["content-type"] ?? "";
  if (type.startsWith("text/event-stream")) {
    const frames = coalesceAroundSensitive(parseSse(raw.responseBody), scrubber);
    return { sse: frames.map((f) => (typeof f === "string" ? scrubber.scrub(f) : { event: f.event, data: scrubber.scrubDeep(f.data) })) };
  }
  try {
    const json = JSON.parse(raw.responseBody);
    if (JSON.stringify(json) === raw.responseBody) return { json: scrubber.scrubDeep(json) };
  } catch {
    /* not JSON: kept as text */
  }
  return { text: scrubber.scrub(raw.responseBody) };
}

/** The fixture for recorded exchanges: secrets dropped, personal and run-dependent values replaced by placeholders. */
export function fixtureFrom(
  raw: RawExchange[],
  opts: { header: Omit<FixtureHeader, "scrubbed">; sensitive: Array<{ value: string; kind: SensitiveKind }> },
): ClaudeFixture {
  const scrubber = new Scrubber(opts.sensitive);
  const exchanges = raw.map((x): FixtureExchange => {
    const headers: Record<string, string> = {};
    for (const h of REQUEST_HEADERS) if (x.requestHeaders[h] !== undefined) headers[h] = x.requestHeaders[h]!;
    for (const h of SECRET_HEADERS) if (x.requestHeaders[h] !== undefined) headers[h] = SCRUBBED;
    const body = scrubber.scrubDeep(fixtureBody(x.requestBody ? JSON.parse(x.requestBody) : {}));
    const responseHeaders = Object.fromEntries(Object.entries(x.responseHeaders).filter(([k]) => RESPONSE_HEADERS.test(k)));
    return {
      request: { method: x.method, path: x.path, headers, body },
      response: { status: x.status, headers: responseHeaders, ...bodyOf(x, scrubber) },
    };
  });
  return {
    header: { ...opts.header, scrubbed: ["x-api-key", "authorization", "emails", "names", "addresses", "database ids", "dates"] },
    exchanges,
  };
}

/**
 * One simulated visitor, speaking the widget's HTTP protocol exactly as the iframe does (components/widget):
 * POST /conversation (with the shop-signed identity when signed in) → a bearer token; GET /events?view=1&after=<last
 * seq> as a stream (Last-Event-ID, reconnecting from its cursor when the server ends the stream), whose
 * `view` frames carry the new messages; GET /conversation?after=<last seq> every 30 s while the stream is open (the
 * widget's safety net); POST /messages to write.
 */
import http from "node:http";
import { SseParser } from "@/lib/widget/sse-parser";
import type { WidgetMessage, WidgetSendResponse, WidgetSession, WidgetView, WidgetViewResponse } from "@/lib/widget/api-types";

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Waiter {
  afterSeq: number;
  resolve: (m: WidgetMessage) => void;
}

export class WidgetVisitor {
  token: string | null = null;
  conversationId = "";
  lastSeq = 0;
  private cursor = "0";
  private stop = new AbortController();
  private waiters: Waiter[] = [];
  private syncing: Promise<void> | null = null;
  private syncAgain = false;

  /** Every reply seen (agent or system), with when this client saw it. */
  readonly replies: { seq: number; from: string; text: string; seenAt: number }[] = [];
  streamErrors = 0;

  constructor(
    private readonly base: string,
    readonly shop: string,
    /** a distinct client address per visitor (x-forwarded-for), as visitors behind one proxy would have */
    private readonly ip: string,
  ) {}

  private headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = { "x-forwarded-for": this.ip, "sec-fetch-site": "same-origin" };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    if (json) h["content-type"] = "application/json";
    return h;
  }

  private async call<T>(path: string, init: { method: string; body?: unknown }): Promise<T> {
    const res = await request(`${this.base}/api/widget/${this.shop}${path}`, {
      method: init.method,
      headers: this.headers(init.body !== undefined),
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await readAll(res);
    let body: (T & { code?: string; message?: string }) | null = null;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: reported below with the status
    }
    const ok = res.statusCode! >= 200 && res.statusCode! < 300;
    if (!ok || !body) throw new HttpError(res.statusCode!, body?.code ?? "HTTP", body?.message ?? `HTTP ${res.statusCode}`);
    return body;
  }

  /** Opens a new conversation (the token is dropped first: a new visitor, or one who cleared the chat). */
  async open(identity: string | null): Promise<WidgetSession> {
    this.close();
    this.token = null;
    const session = await this.call<WidgetSession>("/conversation", { method: "POST", body: { identity } });
    this.token = session.token;
    this.conversationId = session.view.conversationId;
    this.cursor = session.cursor;
    this.lastSeq = session.view.lastSeq;
    this.waiters = [];
    this.replies.length = 0; // seqs are per conversation
    void this.follow(this.token);
    return session;
  }

  /** Sends a message; resolves with the server's answer (202: accepted) and the seq the message got. */
  async send(text: string): Promise<{ kind: WidgetSendResponse["kind"]; seq: number }> {
    const sent = await this.call<WidgetSendResponse>("/messages", { method: "POST", body: { text } });
    const mine = sent.view.messages.filter((m) => m.from === "customer" && m.text === text).at(-1);
    if (!mine) throw new Error("the accepted message is not in the view the server answered with");
    this.take(sent.view);
    return { kind: sent.kind, seq: mine.seq };
  }

  /** The first agent or system message after `afterSeq`, as this client sees it arrive. */
  nextReply(afterSeq: number, timeoutMs: number): Promise<WidgetMessage> {
    const seen = this.replies.find((r) => r.seq > afterSeq);
    if (seen) return Promise.resolve({ seq: seen.seq, from: seen.from as WidgetMessage["from"], text: seen.text, name: null, at: "" });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`no reply after seq ${afterSeq} within ${timeoutMs / 1000} s (conversation ${this.conversationId})`));
      }, timeoutMs);
      const waiter: Waiter = {
        afterSeq,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      this.waiters.push(waiter);
    });
  }

  close(): void {
    this.stop.abort();
    this.stop = new AbortController();
  }

  private take(view: WidgetView): void {
    const now = Date.now();
    for (const m of view.messages) {
      if ((m.from === "agent" || m.from === "system" || m.from === "person") && !this.replies.some((r) => r.seq === m.seq)) {
        this.replies.push({ seq: m.seq, from: m.from, text: m.text, seenAt: now });
        for (const w of this.waiters.filter((w) => m.seq > w.afterSeq)) {
          this.waiters = this.waiters.filter((x) => x !== w);
          w.resolve(m);
        }
      }
    }
    this.lastSeq = Math.max(this.lastSeq, view.lastSeq);
  }

  /** One view refresh at a time; activity during a refresh asks for one more (as the widget coalesces them). */
  private sync(): void {
    if (this.syncing) {
      this.syncAgain = true;
      return;
    }
    this.syncing = (async () => {
      do {
        this.syncAgain = false;
        try {
          const { view } = await this.call<WidgetViewResponse>(`/conversation?after=${this.lastSeq}`, { method: "GET" });
          this.take(view);
        } catch {
          this.streamErrors++;
        }
      } while (this.syncAgain);
      this.syncing = null;
    })();
  }

  private async follow(token: string): Promise<void> {
    const signal = this.stop.signal;
    let failures = 0;
    // The widget's safety net under an open stream: its view, fetched every 30 s.
    const poll = setInterval(() => this.sync(), 30_000);
    signal.addEventListener("abort", () => clearInterval(poll), { once: true });
    while (!signal.aborted && this.token === token) {
      try {
        const res = await request(`${this.base}/api/widget/${this.shop}/events?view=1&after=${this.lastSeq}`, {
          method: "GET",
          headers: { ...this.headers(false), "last-event-id": this.cursor, accept: "text/event-stream" },
          signal,
        });
        if (res.statusCode !== 200) {
          res.resume();
          throw new Error(`live updates: HTTP ${res.statusCode}`);
        }
        failures = 0;
        const parser = new SseParser();
        res.setEncoding("utf8");
        for await (const value of res as AsyncIterable<string>) {
          let feed = false;
          for (const e of parser.push(value)) {
            if (e.event === "view") {
              try {
                this.take(JSON.parse(e.data) as WidgetView);
              } catch {
                feed = true; // a malformed view: fetch it instead, as the widget does
              }
            } else if (e.event !== "draft") feed = true;
            if (e.id && /^\d+$/.test(e.id)) this.cursor = e.id;
          }
          if (feed) this.sync();
        }
      } catch {
        if (signal.aborted) break;
        failures++;
        this.streamErrors++;
      }
      await new Promise((r) => setTimeout(r, failures ? Math.min(5_000, 250 * 2 ** failures) : 50));
    }
    clearInterval(poll);
  }
}

/**
 * The visitors' HTTP client: node's own, on one keep-alive agent (as fetch keeps its connections), because the driver
 * shares the machine it measures and undici's fetch spends more CPU per request. What goes over the wire is the same.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

function request(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
  retried = false,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const headers = init.body === undefined ? init.headers : { ...init.headers, "content-length": String(Buffer.byteLength(init.body)) };
    const req = http.request(url, { method: init.method, headers, agent, signal: init.signal }, resolve);
    req.on("error", (err: NodeJS.ErrnoException) => {
      // A kept-alive connection the server had just closed as idle (its keep-alive timeout, while this busy process's
      // timer to drop it ran late): the request never reached it. Sent again once on a new connection, as a browser and
      // fetch do.
      if (!retried && req.reusedSocket && err.code === "ECONNRESET") request(url, init, true).then(resolve, reject);
      else reject(err);
    });
    req.end(init.body);
  });
}

async function readAll(res: http.IncomingMessage): Promise<string> {
  res.setEncoding("utf8");
  let text = "";
  for await (const chunk of res as AsyncIterable<string>) text += chunk;
  return text;
}

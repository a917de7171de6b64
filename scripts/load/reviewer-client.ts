/**
 * A simulated reviewer on the console's own endpoints: signs in through next-auth's credentials provider (CSRF
 * token, then the callback, as the login form does), reads the queue from GET /api/console/queue, and decides by
 * calling the console's server action `decideHandoffAction` over HTTP exactly as the handoff page's button does
 * (POST to the page with the `Next-Action` id from the build's server-reference manifest).
 */
import fs from "node:fs";
import path from "node:path";

/** The id Next gave the server action `exportedName` of `file` in this build. */
export function serverActionId(root: string, file: string, exportedName: string): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, ".next", "server", "server-reference-manifest.json"), "utf8")) as {
    node: Record<string, { exportedName?: string; filename?: string }>;
  };
  for (const [id, entry] of Object.entries(manifest.node)) {
    if (entry.exportedName === exportedName && (!entry.filename || entry.filename.endsWith(file))) return id;
  }
  throw new Error(`server action ${exportedName} (${file}) is not in this build's server-reference manifest`);
}

function cookiesFrom(res: Response, jar: Map<string, string>): void {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const eq = pair!.indexOf("=");
    jar.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
  }
}

export interface QueueEntry {
  id: string;
  version: number;
  status: string;
  kind: string;
  amountCents: number | null;
}

export interface ActionAnswer {
  ok: boolean;
  code?: string;
  outcome?: string;
  httpStatus: number;
}

export class Reviewer {
  private readonly jar = new Map<string, string>();

  constructor(
    readonly base: string,
    readonly email: string,
  ) {}

  private cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async signIn(password: string): Promise<void> {
    const csrfRes = await fetch(`${this.base}/api/auth/csrf`);
    cookiesFrom(csrfRes, this.jar);
    const { csrfToken } = (await csrfRes.json()) as { csrfToken: string };
    const res = await fetch(`${this.base}/api/auth/callback/credentials`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: this.cookie() },
      body: new URLSearchParams({ csrfToken, email: this.email, password, callbackUrl: `${this.base}/console`, json: "true" }),
    });
    cookiesFrom(res, this.jar);
    if (![...this.jar.keys()].some((k) => k.endsWith("next-auth.session-token")))
      throw new Error(`${this.email} could not sign in (HTTP ${res.status})`);
  }

  async queue(): Promise<QueueEntry[]> {
    const res = await fetch(`${this.base}/api/console/queue?status=pending&kind=approval`, { headers: { cookie: this.cookie() } });
    const body = (await res.json()) as { ok: boolean; data?: QueueEntry[]; error?: { code: string } };
    if (!res.ok || !body.ok || !body.data) throw new Error(`queue: HTTP ${res.status} ${body.error?.code ?? ""}`);
    return body.data;
  }

  /** The console's approve button: the server action with the version the reviewer saw. */
  async approve(actionId: string, handoffId: string, version: number): Promise<ActionAnswer> {
    const res = await fetch(`${this.base}/console/handoffs/${handoffId}`, {
      method: "POST",
      headers: {
        cookie: this.cookie(),
        "next-action": actionId,
        "content-type": "text/plain;charset=UTF-8",
        accept: "text/x-component",
        origin: this.base,
      },
      body: JSON.stringify([{ handoffId, version, decision: "approve" }]),
    });
    const text = await res.text();
    // The answer is React's flight format: one `<row id>:<JSON>` line per row; the action's result is the row
    // holding `{ ok, … }`.
    for (const line of text.split("\n")) {
      const colon = line.indexOf(":");
      if (colon < 1) continue;
      let row: unknown;
      try {
        row = JSON.parse(line.slice(colon + 1));
      } catch {
        continue;
      }
      if (row && typeof row === "object" && "ok" in row) {
        const r = row as { ok: boolean; data?: { outcome?: string }; error?: { code?: string } };
        return { ok: r.ok, outcome: r.data?.outcome, code: r.error?.code, httpStatus: res.status };
      }
    }
    return { ok: false, code: `HTTP_${res.status}`, httpStatus: res.status };
  }
}

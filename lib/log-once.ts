// A line that every request of a misbehaving client would write — a widget visitor over its rate limit is refused at
// every request — written once per client and window instead: the first time with that request's ids, then, when the
// window has passed, one line saying how many more there were. A flood costs a client two lines a window, not one per
// request, and cannot bury the lines around it. Counted in the process (each web process writes its own lines).
import { currentLogContext, log, outsideLogContext } from "@/lib/log";

interface Open {
  more: number;
  /** what the closing line says: the first line's fields and the ids of its tenant and conversation */
  fields: Record<string, unknown>;
}

export class OncePerWindow {
  private readonly open = new Map<string, Open>();

  constructor(
    private readonly windowMs: number,
    private readonly say: { first: string; more: (n: number, seconds: number) => string },
    /** past this many clients counted at once, any other is counted with the rest ("*"): one line for all of them */
    private readonly mostKeys = 10_000,
  ) {}

  /** Notes one occurrence for `key` (who: never written) — written only if it is the key's first in the window. */
  note(key: string, fields: Record<string, unknown>): void {
    const k = this.open.has(key) || this.open.size < this.mostKeys ? key : "*";
    const open = this.open.get(k);
    if (open) {
      open.more++;
      return;
    }
    log.warn(fields, this.say.first);
    const { tenantId, conversationId } = currentLogContext();
    this.open.set(k, { more: 0, fields: k === "*" ? { ...fields, clients: "many" } : { tenantId, conversationId, ...fields } });
    // The closing line belongs to no request: it says which shop and conversation, not the first request's id.
    outsideLogContext(() => setTimeout(() => this.close(k), this.windowMs).unref());
  }

  private close(k: string): void {
    const open = this.open.get(k);
    this.open.delete(k);
    if (!open?.more) return;
    const seconds = Math.round(this.windowMs / 1000);
    log.warn({ ...open.fields, more: open.more, windowSeconds: seconds }, this.say.more(open.more, seconds));
  }
}

// The worker's after-commit work, beside advancing runs: sealing new audit records into their shops' hash chains
// (lib/audit/chain), sending the webhooks the outbox holds (lib/webhooks), and sending the mail a stopped process
// left queued (lib/mail). All only read what has committed, so no turn waits on them; any number of workers may run
// them at once (advisory locks, leases and skipped row locks keep them apart). A worker does them when told there are
// some (NOTIFY), not by looking every second — but for the mail, which it looks for every 30 s at most.
import { sealAuditChains, sealRetries } from "@/lib/audit/chain";
import { storeOf } from "@/lib/db/kysely";
import { listen } from "@/lib/db/listener";
import { connectivityFailureKind, noteDatabaseFailure } from "@/lib/db/outage";
import { CODE_TTL_MINUTES } from "@/lib/identity/codes";
import { INVITE_TTL_HOURS } from "@/lib/auth/invitations";
import { log } from "@/lib/log";
import { sendStrandedMail } from "@/lib/mail/send";
import { sleep } from "@/lib/sleep";
import { type DeliveryOptions, deliverDueWebhooks, nextWebhookDueInMs, startDueWebhooks } from "@/lib/webhooks/deliver";
import { fanOutRetries, fanOutWebhookEvents } from "@/lib/webhooks/outbox";
import type { RuntimeDeps } from "./deps";

export interface AfterCommitPass {
  sealed: number;
  webhookEvents: number;
  webhookAttempts: number;
  /** mails a stopped process left queued, sent (or recorded failed) by this pass */
  strandedMail: number;
}

/**
 * How often a worker looks for mail left queued (a process stopped between its commit and the send): rare, for it
 * is rare, and a mail found a minute late still carries a code valid for CODE_TTL_MINUTES.
 */
const MAIL_SWEEP_EVERY_MS = 30_000;
/** Each worker's sweep (a process has one worker id): when it last started, and the one in flight. */
const mailSweeps = new Map<string, { startedAt: number; inFlight: Promise<number> | null }>();

/**
 * Sends what stopped processes left queued, at most every MAIL_SWEEP_EVERY_MS and one sweep at a time per worker —
 * but a sweep that reached its limit is followed by another at the next pass (a backlog drains 20 a pass, not 20
 * every 30 s). A code's mail lapses with its code, an invitation's with its link.
 */
function sweepStrandedMail(db: ReturnType<typeof storeOf>, workerId: string): Promise<number> | null {
  const sweep = mailSweeps.get(workerId) ?? { startedAt: 0, inFlight: null };
  if (sweep.inFlight || Date.now() - sweep.startedAt < MAIL_SWEEP_EVERY_MS) return null;
  sweep.startedAt = Date.now();
  sweep.inFlight = sendStrandedMail(db, {
    lapseAfterMs: CODE_TTL_MINUTES * 60_000,
    invitationLapseAfterMs: INVITE_TTL_HOURS * 3_600_000,
  })
    .then(({ sent, lapsed, more }) => {
      if (more) sweep.startedAt = 0;
      return sent + lapsed;
    })
    .finally(() => {
      sweep.inFlight = null;
    });
  mailSweeps.set(workerId, sweep);
  return sweep.inFlight;
}

/** What a loop does in the background (webhook endpoints it serves, a sweep of mail), and what to do as each finishes. */
interface Serving {
  inFlight: Set<Promise<void>>;
  served: () => void;
}

/**
 * One pass: seal, fan out, deliver what is due, send what a stopped process left queued. Each part goes on when
 * another fails (a shop's audit chain that cannot be sealed holds up no webhook): a part's failure is logged and it is
 * tried again at the next pass; a database that cannot be reached fails the pass (the loop tells an outage once). With
 * `serving` (the loop), the deliveries and the mail go on in the background and the pass waits for no receiver;
 * without it, the pass waits for them (`webhookAttempts` counts them then, else the endpoints it started serving;
 * `strandedMail`, the mails a sweep sent or found lapsed).
 */
export async function runAfterCommitOnce(
  deps: RuntimeDeps,
  delivery: Partial<DeliveryOptions> = {},
  serving?: Serving,
): Promise<AfterCommitPass> {
  const db = storeOf(deps.db);
  const sealed = await apart("sealing audit records", () => sealAuditChains(db), 0);
  const fanned = await apart("fanning out webhook events", () => fanOutWebhookEvents(db), { events: 0, deliveries: 0 });
  const options = { workerId: deps.workerId, ...delivery };
  const webhookAttempts = serving
    ? await apart("delivering webhooks", () => startDueWebhooks(db, options, serving.inFlight, serving.served), 0)
    : (await apart("delivering webhooks", () => deliverDueWebhooks(db, options), { endpoints: 0, attempts: 0, delivered: 0 })).attempts;
  // A mail server that hangs holds up nothing else: the loop sends in the background, a lone pass waits.
  const sweep = sweepStrandedMail(db, deps.workerId)?.catch((err: unknown) => {
    if (!noteDatabaseFailure(err, "worker")) log.error({ err }, "after-commit: sending mail left queued failed");
    return 0;
  });
  let strandedMail = 0;
  if (sweep && serving) {
    const inFlight = sweep.then((n) => {
      // A pass for what the sends committed (and, if the sweep reached its limit, the next sweep).
      if (n > 0) serving.served();
    });
    serving.inFlight.add(inFlight);
    void inFlight.finally(() => serving.inFlight.delete(inFlight));
  } else if (sweep) strandedMail = await sweep;
  return { sealed, webhookEvents: fanned.events, webhookAttempts, strandedMail };
}

/** A part of the pass, on its own: its failure is logged and answered with `none`, unless the database is out of reach. */
async function apart<T>(what: string, part: () => Promise<T>, none: T): Promise<T> {
  try {
    return await part();
  } catch (err) {
    if (connectivityFailureKind(err)) throw err;
    log.error({ err }, `after-commit: ${what} failed`);
    return none;
  }
}

/**
 * Runs passes until the signal aborts: at once again while there was work; else, with the process's listener up,
 * when a statement writes audit records or webhook events (their NOTIFY), when a webhook retry comes due (or the retry
 * of a shop's sealing or an event's fan-out that failed), or after `idleMs` at most — a worker at rest asks the
 * database nothing every second (before, each looked for work every `intervalMs`); without a listener, every
 * `intervalMs`. Passes are `intervalMs` apart at least, so under load one pass collects a second's work whatever the
 * notifications.
 */
export async function runAfterCommitLoop(
  deps: RuntimeDeps,
  opts: { signal?: AbortSignal; intervalMs?: number; idleMs?: number; delivery?: Partial<DeliveryOptions> } = {},
): Promise<void> {
  const intervalMs = opts.intervalMs ?? 1000;
  const idleMs = opts.idleMs ?? 30_000;
  const wake = afterCommitWakeups(deps);
  // Receivers are waited for in the background; each one served wakes the loop (more may be due, its own or others').
  const serving: Serving = { inFlight: new Set(), served: () => wake.notice() };
  try {
    while (!opts.signal?.aborted) {
      wake.heard = false; // what commits from now on wakes the next pass
      // A pass begun before the listener listened may have missed a commit no one heard: the next one comes anyway.
      const listened = wake.listening;
      let untilDueMs: number | null = intervalMs;
      try {
        const pass = await runAfterCommitOnce(deps, opts.delivery, serving);
        if (pass.sealed + pass.webhookEvents + pass.webhookAttempts > 0) continue;
        if (listened) untilDueMs = earliest(await nextWebhookDueInMs(storeOf(deps.db)), nextRetryInMs());
      } catch (err) {
        if (!noteDatabaseFailure(err, "worker")) log.error({ err }, "after-commit pass failed");
      }
      await sleep(intervalMs, opts.signal);
      if (wake.heard || !listened || !wake.listening) continue;
      const idle = untilDueMs === null ? idleMs : Math.min(idleMs, untilDueMs - intervalMs);
      if (idle > 0) await wake.until(idle, opts.signal);
    }
  } finally {
    wake.close();
    await Promise.allSettled([...serving.inFlight]); // a stop lets the deliveries in flight finish and be recorded
  }
}

/** When a shop's sealing or an event's fan-out that failed is to be tried again, in ms from now (null: none waits). */
function nextRetryInMs(): number | null {
  const now = Date.now();
  const at = [sealRetries.nextRetryAt(now), fanOutRetries.nextRetryAt(now)].filter((d) => d !== null);
  return at.length ? Math.min(...at.map((d) => d.getTime())) - now : null;
}

const earliest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

/** The NOTIFYs that there is after-commit work, through the process's one listener (lib/db/listener). */
function afterCommitWakeups(deps: RuntimeDeps) {
  let resolveWait: (() => void) | null = null;
  const w = {
    heard: false,
    listening: false,
    until(ms: number, signal?: AbortSignal): Promise<void> {
      return sleep(ms, signal, (stop) => {
        resolveWait = stop;
      }).finally(() => {
        resolveWait = null;
      });
    },
    close: () => undefined as void,
    notice: () => undefined as void,
  };
  // Heard — or the listener reconnected, and what was committed meanwhile was not heard.
  const notice = () => {
    w.heard = true;
    resolveWait?.();
  };
  w.notice = notice;
  if (deps.databaseUrl) {
    let closed = false;
    listen(deps.databaseUrl, "support_after_commit", notice, notice)
      .then((unlisten) => {
        if (closed) return unlisten();
        w.listening = true;
        w.close = () => {
          w.listening = false;
          unlisten();
        };
      })
      .catch(() => undefined); // without a listener the loop polls
    w.close = () => {
      closed = true;
    };
  }
  return w;
}

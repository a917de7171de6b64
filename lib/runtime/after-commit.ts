// The worker's after-commit work, beside advancing runs: sealing new audit records into their shops' hash chains
// (lib/audit/chain) and sending the webhooks the outbox holds (lib/webhooks). Both only read what has committed, so
// no turn waits on them; any number of workers may run them at once (advisory locks and leases keep them apart).
import { sealAuditChains } from "@/lib/audit/chain";
import { storeOf } from "@/lib/db/kysely";
import { noteDatabaseFailure } from "@/lib/db/outage";
import { log } from "@/lib/log";
import { type DeliveryOptions, deliverDueWebhooks } from "@/lib/webhooks/deliver";
import { fanOutWebhookEvents } from "@/lib/webhooks/outbox";
import type { RuntimeDeps } from "./deps";

export interface AfterCommitPass {
  sealed: number;
  webhookEvents: number;
  webhookAttempts: number;
}

/** One pass: seal, fan out, deliver what is due. */
export async function runAfterCommitOnce(deps: RuntimeDeps, delivery: Partial<DeliveryOptions> = {}): Promise<AfterCommitPass> {
  const db = storeOf(deps.db);
  const sealed = await sealAuditChains(db);
  const fanned = await fanOutWebhookEvents(db);
  const sent = await deliverDueWebhooks(db, { workerId: deps.workerId, ...delivery });
  return { sealed, webhookEvents: fanned.events, webhookAttempts: sent.attempts };
}

/** Runs passes until the signal aborts: at once again while there was work, else every `intervalMs`. */
export async function runAfterCommitLoop(deps: RuntimeDeps, opts: { signal?: AbortSignal; intervalMs?: number } = {}): Promise<void> {
  const intervalMs = opts.intervalMs ?? 1000;
  while (!opts.signal?.aborted) {
    let busy = false;
    try {
      const pass = await runAfterCommitOnce(deps);
      busy = pass.sealed + pass.webhookEvents + pass.webhookAttempts > 0;
    } catch (err) {
      if (!noteDatabaseFailure(err, "worker")) log.error({ err }, "after-commit pass failed");
    }
    if (busy) continue;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, intervalMs);
      opts.signal?.addEventListener(
        "abort",
        () => {
          clearTimeout(t);
          resolve();
        },
        { once: true },
      );
    });
  }
}

/**
 * Test-controllable faults of the data a call depends on: the payments/fulfilment provider (transient, an answer
 * lost after the effect committed) and the read of the facts the gates judge a call on. In-process by
 * `injectProviderFault`; across processes by SUPPORT_PROVIDER_FAULTS="refund_order:transient:2,*:facts_unavailable:1".
 */
import { env } from "@/lib/env";

export type ProviderFaultKind = "transient" | "timeout_after_commit" | "facts_unavailable";
const KINDS: readonly string[] = ["transient", "timeout_after_commit", "facts_unavailable"];

interface Armed {
  operation: string; // a tool name, or "*"
  kind: ProviderFaultKind;
  remaining: number;
}

// Read on first use, not at import, so a bad variable is reported by the start-up check rather than by an import.
let armedFaults: Armed[] | undefined;
const armed = (): Armed[] => (armedFaults ??= parseEnv(env().SUPPORT_PROVIDER_FAULTS));

function parseEnv(raw: string | undefined): Armed[] {
  if (!raw) return [];
  return raw.split(",").flatMap((part) => {
    const [operation, kind, times] = part.trim().split(":");
    if (!operation || !kind || !KINDS.includes(kind)) return [];
    return [{ operation, kind: kind as ProviderFaultKind, remaining: Number(times ?? 1) || 1 }];
  });
}

export function injectProviderFault(operation: string, kind: ProviderFaultKind, times = 1) {
  armed().push({ operation, kind, remaining: times });
}

export function clearProviderFaults() {
  armed().length = 0;
}

/** Consumes one armed fault of this kind for the operation, if any. */
export function takeFault(operation: string, kind: ProviderFaultKind): boolean {
  const fault = armed().find((f) => f.kind === kind && f.remaining > 0 && (f.operation === operation || f.operation === "*"));
  if (!fault) return false;
  fault.remaining -= 1;
  return true;
}

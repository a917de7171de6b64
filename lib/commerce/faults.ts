/**
 * Test-controllable faults of the payments/fulfilment provider. In-process by `injectProviderFault`;
 * across processes by SUPPORT_PROVIDER_FAULTS="refund_order:transient:2,cancel_order:timeout_after_commit:1".
 */
export type ProviderFaultKind = "transient" | "timeout_after_commit";

interface Armed {
  operation: string; // a tool name, or "*"
  kind: ProviderFaultKind;
  remaining: number;
}

const armed: Armed[] = parseEnv(process.env.SUPPORT_PROVIDER_FAULTS);

function parseEnv(raw: string | undefined): Armed[] {
  if (!raw) return [];
  return raw.split(",").flatMap((part) => {
    const [operation, kind, times] = part.trim().split(":");
    if (!operation || (kind !== "transient" && kind !== "timeout_after_commit")) return [];
    return [{ operation, kind, remaining: Number(times ?? 1) || 1 }];
  });
}

export function injectProviderFault(operation: string, kind: ProviderFaultKind, times = 1) {
  armed.push({ operation, kind, remaining: times });
}

export function clearProviderFaults() {
  armed.length = 0;
}

/** Consumes one armed fault of this kind for the operation, if any. */
export function takeFault(operation: string, kind: ProviderFaultKind): boolean {
  const fault = armed.find((f) => f.kind === kind && f.remaining > 0 && (f.operation === operation || f.operation === "*"));
  if (!fault) return false;
  fault.remaining -= 1;
  return true;
}

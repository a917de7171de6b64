// A hook a test arms to run once, right after the next call of a function a `vi.mock` factory wraps: something that
// commits between a read and what the code does with it (a race, made to happen at the one moment it matters).

export interface HookSlot {
  hook: null | (() => Promise<void>);
}

/** `fn`, running the slot's hook (disarmed first) after each call that finds one armed. */
export function hookAfter<A extends unknown[], R>(fn: (...args: A) => Promise<R>, slot: HookSlot): (...args: A) => Promise<R> {
  return async (...args) => {
    const out = await fn(...args);
    const hook = slot.hook;
    slot.hook = null;
    await hook?.();
    return out;
  };
}

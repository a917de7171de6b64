/**
 * Resolves after `ms`, when `signal` aborts (at once if it already has), or when the function handed to `onStop` is
 * called — the one wait of the loops that sleep until something happens (the worker, its after-commit work, the
 * widget's event stream).
 */
export function sleep(ms: number, signal?: AbortSignal, onStop?: (stop: () => void) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve(); // its event has fired already
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    onStop?.(done);
  });
}

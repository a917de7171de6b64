import { mkdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import type { OfflineRequest, OfflineStep } from "./types";
import { env } from "@/lib/env";

/**
 * Scripted responses for tests: each request to the offline model takes the next pending step before
 * the deterministic support model is asked. The request bodies received are recorded in `requests` (the
 * most recent `KEEP_REQUESTS`).
 */
export class OfflineScript {
  protected steps: OfflineStep[];
  readonly requests: OfflineRequest[] = [];

  constructor(steps: OfflineStep[] = []) {
    this.steps = [...steps];
  }

  push(...steps: OfflineStep[]): this {
    this.steps.push(...steps);
    return this;
  }

  get pending(): number {
    return this.steps.length;
  }

  /** Removes and returns the next step; undefined when the script is exhausted. */
  take(): OfflineStep | undefined {
    return this.steps.shift();
  }

  /**
   * Records a request body (called by the offline fetch for every request it receives). Only the most recent
   * ones are kept: each holds a whole conversation, and a long-running server must not keep them all.
   */
  record(request: OfflineRequest): void {
    this.requests.push(request);
    if (this.requests.length > OfflineScript.KEEP_REQUESTS) this.requests.shift();
  }

  static readonly KEEP_REQUESTS = 100;

  /**
   * A script read from a JSON file (an array of steps without `fn`). Its cursor lives beside the
   * file, so several processes scripted by the same file (web server, worker, CLI) consume each step
   * once, in order. Steps pushed in code run after the file's.
   */
  static fromFile(path: string): OfflineScript {
    return new FileOfflineScript(path);
  }
}

interface Cursor {
  mtimeMs: number;
  size: number;
  consumed: number;
}

class FileOfflineScript extends OfflineScript {
  private readonly fileSteps: OfflineStep[];
  private readonly identity: { mtimeMs: number; size: number };

  constructor(private readonly path: string) {
    super();
    const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
    const steps = Array.isArray(parsed) ? parsed : (parsed as { steps?: unknown }).steps;
    if (!Array.isArray(steps)) throw new Error(`${path}: expected a JSON array of offline steps`);
    this.fileSteps = steps as OfflineStep[];
    const st = statSync(path);
    this.identity = { mtimeMs: st.mtimeMs, size: st.size };
  }

  override get pending(): number {
    return Math.max(0, this.fileSteps.length - this.readCursor()) + super.pending;
  }

  override take(): OfflineStep | undefined {
    const fromFile = this.withLock(() => {
      const consumed = this.readCursor();
      if (consumed >= this.fileSteps.length) return undefined;
      this.writeCursor(consumed + 1);
      return this.fileSteps[consumed];
    });
    return fromFile ?? super.take();
  }

  // A cursor written for an earlier version of the file (rewritten by the next test) does not count.
  private readCursor(): number {
    try {
      const c = JSON.parse(readFileSync(`${this.path}.cursor`, "utf8")) as Cursor;
      return c.mtimeMs === this.identity.mtimeMs && c.size === this.identity.size ? c.consumed : 0;
    } catch {
      return 0;
    }
  }

  private writeCursor(consumed: number) {
    const cursor: Cursor = { ...this.identity, consumed };
    writeFileSync(`${this.path}.cursor`, JSON.stringify(cursor));
  }

  // mkdir is atomic across processes; a lock older than 2 s belongs to a crashed process.
  private withLock<T>(fn: () => T): T {
    const lock = `${this.path}.lock`;
    const started = Date.now();
    for (;;) {
      try {
        mkdirSync(lock);
        break;
      } catch {
        try {
          if (Date.now() - statSync(lock).mtimeMs > 2000) rmdirSync(lock);
        } catch {
          /* someone else removed it */
        }
        if (Date.now() - started > 5000) throw new Error(`offline script lock ${lock} is held`);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      }
    }
    try {
      return fn();
    } finally {
      rmdirSync(lock);
    }
  }
}

/** The script named by SUPPORT_OFFLINE_SCRIPT, if any, so a child process can be scripted. */
export function scriptFromEnv(): OfflineScript | undefined {
  const path = env().SUPPORT_OFFLINE_SCRIPT;
  return path ? OfflineScript.fromFile(path) : undefined;
}

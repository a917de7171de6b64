// The JSON lines the process's logger writes during each test of the calling suite, captured (and stdout spared).
import { afterEach, beforeEach } from "vitest";
import { sendLogsTo } from "@/lib/log";

export interface LogLine {
  msg: string;
  level: string;
  err?: { message: string };
  [field: string]: unknown;
}

/** Call inside a describe: returns the lines of the test running now. */
export function captureLogLines(): () => LogLine[] {
  let lines: LogLine[] = [];
  let restore: () => void = () => undefined;
  beforeEach(() => {
    lines = [];
    restore = sendLogsTo({ write: (line: string) => lines.push(JSON.parse(line)) });
  });
  afterEach(() => restore());
  return () => lines;
}

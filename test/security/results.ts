// The figures the security suites write for `npm run security:report` (scripts/security-report.ts): one JSON file per
// suite under .data/security-report, rewritten by every run of that suite. The tests still assert everything; the
// files only let the report count what was tried and what held.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

export const RESULTS_DIR = path.join(process.cwd(), ".data", "security-report");

export interface SuiteResults {
  suite: string;
  /** what one case tried, and the failures found (none = stopped / covered) */
  cases: Array<{ id: string; failures: string[] }>;
}

/** Collects a suite's cases and writes them once the file's tests are done (call `write` in afterAll). */
export function resultsFor(suite: string) {
  const cases: SuiteResults["cases"] = [];
  return {
    record(id: string, failures: string[]) {
      cases.push({ id, failures });
    },
    write() {
      mkdirSync(RESULTS_DIR, { recursive: true });
      const body: SuiteResults & { writtenAt: string } = { suite, cases, writtenAt: new Date().toISOString() };
      writeFileSync(path.join(RESULTS_DIR, `${suite}.json`), `${JSON.stringify(body, null, 2)}\n`);
    },
  };
}

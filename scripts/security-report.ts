/**
 * `npm run security:report`: runs the adversarial suites and prints what they tried and what held —
 *   - the injection corpus (test/security/injection.test.ts): attacks tried / stopped,
 *   - the split refunds (tests named "split…" in test/runtime): attempts / stopped,
 *   - the fuzzing (test/fuzz, when present): generated cases / failures,
 *   - the authorization matrix (test/security/authz-matrix.test.ts): cells / covered (answered as expected).
 * Vitest runs them once with its JSON reporter; the security suites also write their own counts under
 * .data/security-report (test/security/results.ts) and the fuzz suites print a tally line each. Exits non-zero when
 * anything failed or did not run.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";

const root = process.cwd();
const dir = path.join(root, ".data", "security-report");
const vitestJson = path.join(dir, "vitest.json");

const SUITES = {
  injection: "test/security/injection.test.ts",
  matrix: "test/security/authz-matrix.test.ts",
  splits: [
    "test/runtime/policy-totals.test.ts",
    "test/runtime/specialists.test.ts",
    "test/runtime/parallel-specialists.test.ts",
    "test/runtime/cross-conversation-race.test.ts",
  ],
  fuzz: "test/fuzz",
};

interface AssertionResult {
  fullName: string;
  status: "passed" | "failed" | "skipped" | "pending" | "todo";
}
interface FileResult {
  name: string;
  status: string;
  message?: string;
  assertionResults: AssertionResult[];
}

// Counts from a previous run must never be reported as this run's.
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });

const fuzzPresent = existsSync(path.join(root, SUITES.fuzz));
const files = [SUITES.injection, SUITES.matrix, ...SUITES.splits, ...(fuzzPresent ? [SUITES.fuzz] : [])];
process.stdout.write(`Running ${files.join(", ")} …\n`);
// The output is shown as it comes and kept: the fuzz suites print one tally line each (`fuzz <suite>: N cases, F failures`).
let output = "";
const status = await new Promise<number | null>((resolve) => {
  const child = spawn("npx", ["vitest", "run", ...files, "--reporter=dot", "--reporter=json", `--outputFile.json=${vitestJson}`], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const tee = (to: NodeJS.WriteStream) => (chunk: Buffer) => {
    output += chunk.toString();
    to.write(chunk);
  };
  child.stdout.on("data", tee(process.stdout));
  child.stderr.on("data", tee(process.stderr));
  child.on("close", (code) => resolve(code));
});
const run = { status };

if (!existsSync(vitestJson)) {
  process.stderr.write(`vitest wrote no results (exit ${run.status}); nothing to report.\n`);
  process.exit(1);
}
const report = JSON.parse(readFileSync(vitestJson, "utf8")) as { testResults: FileResult[] };
const under = (prefix: string) => report.testResults.filter((f) => path.relative(root, f.name).startsWith(prefix));
const tests = (fs: FileResult[]) => fs.flatMap((f) => f.assertionResults);
const broken = (fs: FileResult[]) => fs.filter((f) => f.status === "failed" && f.assertionResults.every((a) => a.status !== "failed"));

/** A suite's own counts (test/security/results.ts), or null when it wrote none. */
function suiteFile(name: string): { cases: number; failures: number } | null {
  const file = path.join(dir, `${name}.json`);
  if (!existsSync(file)) return null;
  const body = JSON.parse(readFileSync(file, "utf8")) as { cases: unknown; failures?: unknown };
  if (Array.isArray(body.cases)) {
    const cases = body.cases as Array<{ failures?: unknown[] }>;
    return { cases: cases.length, failures: cases.filter((c) => (c.failures?.length ?? 0) > 0).length };
  }
  if (typeof body.cases === "number") return { cases: body.cases, failures: Number(body.failures ?? 0) };
  return null;
}

const rows: Array<{ what: string; tried: number; held: number; words: [string, string]; ok: boolean; note?: string }> = [];

// Injection: every attack is one case of the suite's file; a crash before it wrote counts as nothing stopped.
{
  const files = under(SUITES.injection);
  const counted = suiteFile("injection");
  const attacks = tests(files).filter((t) => t.fullName.startsWith("injection "));
  const tried = counted?.cases ?? attacks.length;
  const stopped = counted ? counted.cases - counted.failures : attacks.filter((t) => t.status === "passed").length;
  const ok = tried > 0 && stopped === tried && attacks.every((t) => t.status === "passed") && !broken(files).length;
  rows.push({ what: "injection attacks", tried, held: stopped, words: ["tried", "stopped"], ok });
}

// Split refunds: the runtime's split tests (each an attempt to get around a band by splitting).
{
  const files = SUITES.splits.flatMap(under);
  const splits = tests(files).filter((t) => /split/i.test(t.fullName));
  const stopped = splits.filter((t) => t.status === "passed").length;
  rows.push({
    what: "split refunds",
    tried: splits.length,
    held: stopped,
    words: ["attempts", "stopped"],
    ok: splits.length > 0 && stopped === splits.length,
  });
}

// Fuzzing: the suites' own counts of generated cases, else their tests.
if (!fuzzPresent) {
  rows.push({ what: "fuzz cases", tried: 0, held: 0, words: ["cases", "failures"], ok: true, note: "test/fuzz not present" });
} else {
  const files = under(SUITES.fuzz);
  // Tallies the suites printed, else counts they wrote (fuzz*.json), else their tests.
  const printed = [...output.replace(/\x1b\[[0-9;]*m/g, "").matchAll(/fuzz ([\w-]+): (\d+) cases, (\d+) failures/g)];
  const tallies = new Map(printed.map((m) => [m[1]!, { cases: Number(m[2]), failures: Number(m[3]) }]));
  const written = readdirSync(dir)
    .filter((f) => /^fuzz.*\.json$/.test(f))
    .map((f) => suiteFile(f.replace(/\.json$/, "")))
    .filter((c): c is { cases: number; failures: number } => c !== null);
  const own = tallies.size ? [...tallies.values()] : written;
  const all = tests(files);
  const failedTests = all.filter((t) => t.status === "failed").length + broken(files).length;
  const cases = own.length ? own.reduce((n, c) => n + c.cases, 0) : all.length;
  const failures = own.length ? own.reduce((n, c) => n + c.failures, 0) + failedTests : failedTests;
  rows.push({
    what: "fuzz cases",
    tried: cases,
    held: failures,
    words: ["cases", "failures"],
    ok: cases > 0 && failures === 0,
    note: own.length ? `${own.length} suites` : "counted as tests: the fuzz suites reported no case counts",
  });
}

// The matrix: every cell answered as expected; and the row check (every action and route has a row) passed.
{
  const files = under(SUITES.matrix);
  const counted = suiteFile("authz-matrix");
  const rowsComplete = tests(files).find((t) => /every server action and route handler has a row/.test(t.fullName));
  const cells = counted?.cases ?? 0;
  const covered = counted ? counted.cases - counted.failures : 0;
  rows.push({
    what: "authorization matrix cells",
    tried: cells,
    held: covered,
    words: ["cells", "covered"],
    ok: cells > 0 && covered === cells && rowsComplete?.status === "passed" && !broken(files).length,
    note: rowsComplete?.status === "passed" ? "every action and route has a row" : "an action or route has NO row",
  });
}

process.stdout.write("\nSecurity report\n");
for (const r of rows) {
  const figures = `${r.words[0]} ${r.tried} / ${r.words[1]} ${r.held}`;
  process.stdout.write(`  ${r.ok ? "ok  " : "FAIL"}  ${r.what.padEnd(28)} ${figures.padEnd(34)}${r.note ? ` (${r.note})` : ""}\n`);
}
const failedFiles = report.testResults.filter((f) => f.status === "failed").map((f) => path.relative(root, f.name));
if (failedFiles.length) process.stdout.write(`\nFailed: ${failedFiles.join(", ")}\n`);
const ok = rows.every((r) => r.ok) && run.status === 0;
process.stdout.write(`\n${ok ? "Everything held." : "Something did NOT hold: see above."}\n`);
process.exit(ok ? 0 : 1);

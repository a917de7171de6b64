// Imported first by the commands an operator runs (migrations, seed, benchmarks, load): a bad environment variable
// stops the command at once with the environment check's message (lib/env.ts) — what to fix, for a person — never
// with a stack trace after work has begun. `npm start` and `npm run worker` check it themselves, the same way.
import path from "node:path";
import { env } from "@/lib/env";
import { AppError } from "@/lib/errors";

try {
  env();
} catch (err) {
  if (!(err instanceof AppError)) throw err;
  const command = process.env.npm_lifecycle_event ?? path.basename(process.argv[1] ?? "script", ".ts");
  process.stderr.write(`[${command}] ${err.message}\n`);
  process.exit(1);
}

// The hooks of a file whose every test runs on a harness of its own: tool retries 1 ms apart (the runtime's backoff
// measured in test time, not seconds), and no provider fault carried from one test into the next.
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { savedEnv } from "../saved-env";
import { clearProviderFaults } from "@/lib/commerce/faults";

/** Registers the hooks; `take` receives each test's harness before the test runs. `env` is set for the whole file. */
export function harnessPerTest(
  take: (h: Harness) => void,
  options: { harness?: Parameters<typeof createHarness>[0]; env?: Record<string, string> } = {},
): void {
  const env = { SUPPORT_RETRY_BASE_MS: "1", ...options.env };
  const before = savedEnv(...Object.keys(env));
  let h: Harness | undefined;
  beforeAll(() => {
    Object.assign(process.env, env);
  });
  afterAll(() => before.restore());
  beforeEach(async () => {
    clearProviderFaults();
    h = await createHarness(options.harness);
    take(h);
  });
  afterEach(async () => {
    clearProviderFaults();
    await h?.close();
  });
}

import { type ChildProcess, spawn } from "node:child_process";
import { agentCliIn } from "./fixtures/cli";
import { expect, type Page, test } from "@playwright/test";
import { Storefront } from "./fixtures/widget";

// A customer of the demo shop (offline model) asks, in their own words, for a refund over the automatic limit. The
// front-line agent hands it to the returns & refunds specialist, whose refund parks the whole run. The web server is
// then stopped and started again on the same database; the reviewer — told which specialist asked — approves in the
// console, the refund runs exactly once, and the customer sees the outcome without asking again.

const port = Number(process.env.E2E_PORT ?? 3100) + 45;
const origin = `http://localhost:${port}`;
const DB = `${process.env.SUPPORT_DB_NAME ?? "support_e2e"}_specialist`;
const env = { ...process.env, SUPPORT_DB_NAME: DB };

let server: ChildProcess | undefined;

async function startServer(reset: boolean): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", ...(reset ? ["--reset-db"] : [])], {
    env: { ...env, PORT: String(port), NEXTAUTH_URL: origin, SUPPORT_WORKER_INTERVAL_MS: "500" },
    stdio: "ignore",
    // Its own process group: stopping it stops `next start` under it too.
    detached: true,
  });
  const deadline = Date.now() + 200_000;
  for (;;) {
    const ok = await fetch(`${origin}/api/health`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return child;
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})`);
    if (Date.now() > deadline) throw new Error("the server did not start");
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function stopServer(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid!, "SIGTERM");
  // A graceful stop waits for open connections (the customer's live stream); past a few seconds, it is killed.
  const stopped = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 10_000))]);
  if (!stopped) {
    process.kill(-child.pid!, "SIGKILL");
    await exited;
  }
  // Nothing answers any more: every process of the web server is gone.
  await expect
    .poll(
      () =>
        fetch(`${origin}/api/health`).then(
          () => "up",
          () => "down",
        ),
      { timeout: 20_000 },
    )
    .toBe("down");
}

/** The operator CLI on this spec's database. */
function cli<T>(...args: string[]): T {
  return agentCliIn<T>(env, ...args);
}

async function signIn(page: Page, email: string) {
  await page.goto(`${origin}/login`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("demo-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Queue", level: 1 })).toBeVisible();
}

test.beforeAll(async () => {
  test.setTimeout(240_000);
  server = await startServer(true);
});

test.afterAll(async () => {
  if (server) await stopServer(server);
});

test("a refund over the limit, in the customer's words, goes through the returns specialist and is approved after a restart", async ({
  page,
  browser,
}) => {
  test.setTimeout(300_000);
  const shop = new Storefront(page);
  await page.goto(`${origin}/shop/acme?as=dana`);
  await shop.open();
  await shop.send("hii, the backpack from my ordr a1002 showed up with a torn strap :( can i get what i paid put back on my card?");

  // Parked honestly: with our team, nothing claimed.
  await expect(shop.status).toContainText("Your $250.00 refund for A-1002 is with our team", { timeout: 60_000 });
  await expect(shop.log).not.toContainText(/I've refunded|has been refunded/i);

  const { handoffs } = cli<{ handoffs: Array<{ id: string; kind: string; runId: string; conversationId: string }> }>(
    "handoffs",
    "--tenant",
    "acme",
    "--status",
    "PENDING",
    "--limit",
    "500", // one page: this spec's database holds the demo's handoffs and this one
  );
  const approvals = handoffs.filter((h) => h.kind === "APPROVAL");
  expect(approvals, "one handoff for the whole tree").toHaveLength(1);
  const handoff = approvals[0]!;
  // The shop's demo history has effects of its own: only this run's count.
  const effectsOfThisRun = () => cli<{ effects: Array<{ toolName: string; runId: string }> }>("run", handoff.runId).effects;
  expect(effectsOfThisRun()).toHaveLength(0);

  // Every process of the web server stops; a new one starts on the same database.
  await stopServer(server!);
  server = await startServer(false);

  // The run inspector (supervisors) shows the specialist the agent consulted, waiting on its refund.
  const supervisor = await browser.newContext();
  const inspector = await supervisor.newPage();
  await signIn(inspector, "sol@acme.test");
  await inspector.goto(`${origin}/console/runs/${handoff.runId}`);
  const tree = inspector.getByTestId("specialist-tree");
  await expect(inspector.getByRole("heading", { name: "Specialists consulted (1)" })).toBeVisible();
  await expect(tree).toContainText("Returns & refunds specialist");
  await expect(tree).toContainText("waiting");
  await expect(tree).toContainText("refund_order");

  const reviewer = await browser.newContext();
  const console = await reviewer.newPage();
  await signIn(console, "raj@acme.test");

  // The reviewer sees which specialist asked, and approves.
  await console.goto(`${origin}/console/handoffs/${handoff.id}`);
  await expect(console.getByTestId("record-specialist")).toContainText("returns & refunds specialist");
  await expect(console.getByTestId("record-amount")).toContainText("$250.00");
  await console.getByRole("button", { name: /^Claim/ }).click();
  await expect(console.getByTestId("claim-bar")).toContainText("You are working on this item.");
  await console.getByRole("button", { name: /^Approve$/ }).click();
  await expect(console.getByTestId("decision-result")).toContainText("Approved.", { timeout: 60_000 });

  // The refund ran exactly once, inside the specialist's scope.
  await expect
    .poll(effectsOfThisRun, { timeout: 60_000 })
    .toEqual([expect.objectContaining({ toolName: "refund_order", runId: handoff.runId })]);

  // The customer sees the outcome by themselves (the widget reconnects to the restarted server).
  const outcome = shop
    .messagesFrom("agent")
    .filter({ hasText: /approved/i })
    .last();
  await expect(outcome).toBeVisible({ timeout: 60_000 });
  await expect(outcome).toContainText("refunded $250.00 on order A-1002");
  await expect(shop.status).not.toContainText("with our team");

  // The inspector now shows the specialist done, and the run completed.
  await inspector.reload();
  await expect(tree).toContainText("done");
  const run = cli<{ run: { phase: string } }>("run", handoff.runId);
  expect(run.run.phase).toBe("COMPLETED");
  expect(effectsOfThisRun()).toHaveLength(1);
  await reviewer.close();
  await supervisor.close();
});

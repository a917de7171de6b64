import fs from "node:fs/promises";
import path from "node:path";
import { agentCli, anonymousRequest, expect, RunsPage, seedEscalation, seedRefundApproval, test } from "./fixtures/console";

// A supervisor finds a run by order number, reads its outcome, final reply and deciders, and exports the filtered
// runs as CSV and JSON Lines; reviewers and anonymous callers are refused the runs and their export.

function csvLines(text: string): string[] {
  return text.split("\r\n").filter(Boolean);
}

test("a supervisor finds a run by order number, reads who decided, and exports the filtered runs", async ({ page, as, baseURL }) => {
  const approved = await seedRefundApproval(250);
  agentCli("decide", approved.handoffId, "--as", "raj@acme.test", "--decision", "approve");
  const escalated = await seedEscalation();

  await as("sol");
  const runs = new RunsPage(page);
  await runs.goto();
  await runs.find(approved.orderNumber);
  await expect(page).toHaveURL(new RegExp(`q=${approved.orderNumber}`));
  await expect(runs.rows).toHaveCount(1);
  const row = runs.row(approved.runId);
  await expect(row.getByTestId("run-customer")).toContainText(approved.customerEmail);
  await expect(row.getByTestId("run-orders")).toHaveText(approved.orderNumber);
  await expect(row.getByTestId("run-outcome")).toContainText("Approved by a reviewer");
  await expect(row.getByTestId("run-handoffs")).toHaveText("Approval: Approved by Raj");
  await page.screenshot({ path: path.resolve("docs/screenshots/console-runs.png"), fullPage: true });

  // The date range narrows it: nothing started tomorrow.
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  await runs.from.fill(tomorrow);
  await Promise.all([page.waitForURL(/from=/), runs.submit.click()]);
  await expect(runs.count).toHaveText("No runs match.");
  await runs.from.fill("");
  await Promise.all([page.waitForURL((u) => u.searchParams.get("from") === ""), runs.submit.click()]);
  await expect(runs.rows).toHaveCount(1);

  // Exported as the page is filtered: one run, as CSV (a real download) and as JSON Lines.
  const download = page.waitForEvent("download");
  await runs.exportCsv.click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(/^runs-\d{8}-\d{4}\.csv$/);
  const csv = csvLines(await fs.readFile((await file.path())!, "utf8"));
  expect(csv).toHaveLength(2);
  expect(csv[0]).toMatch(/^run_id,started_at,ended_at,outcome,/);
  expect(csv[1]).toContain(`${approved.runId},`);
  expect(csv[1]).toContain(",approved,COMPLETED,");
  expect(csv[1]).toContain(`,${approved.customerEmail},${approved.orderNumber},approval: Approved by Raj,Raj,`);
  const jsonl = await page.request.get((await runs.exportJsonl.getAttribute("href"))!);
  expect(jsonl.status()).toBe(200);
  expect(jsonl.headers()["content-type"]).toContain("application/x-ndjson");
  const lines = (await jsonl.text()).split("\n").filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({
    run_id: approved.runId,
    outcome: "approved",
    orders: [approved.orderNumber],
    decided_by: ["Raj"],
    customer: { email: approved.customerEmail },
  });

  // The run page: the final reply as the customer saw it, and the people who decided.
  await row.getByRole("link").first().click();
  await expect(page).toHaveURL(new RegExp(`/console/runs/${approved.runId}$`));
  await expect(page.getByTestId("final-reply")).toContainText("$250.00");
  await expect(page.getByTestId("final-reply")).toContainText("The agent");
  await expect(page.getByTestId("run-decisions")).toContainText(
    /Approved by Raj on \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} — \$250\.00 refunded/,
  );
  await expect(page.getByTestId("run-customer")).toContainText(approved.customerEmail);
  // Each model request says what it carried: this short conversation's, the whole transcript.
  await expect(page.getByTestId("model-call-carried").first()).toHaveText(/^every message through #\d+$/);
  await page.screenshot({ path: path.resolve("docs/screenshots/console-run.png") });

  // An escalation the agent ended with end_turn reads as escalated, not as a success.
  await runs.goto();
  await runs.find(escalated.conversationId);
  await expect(runs.rows).toHaveCount(1);
  await expect(runs.rows.first().getByTestId("run-outcome")).toContainText("Escalated to a person");
  await expect(runs.rows.first().getByTestId("run-outcome")).toContainText("completed · end_turn");
  const escalatedRunId = (await runs.rows.first().getAttribute("data-run-id"))!;
  // …and the outcome filter keeps success and escalation apart.
  const sam = encodeURIComponent("sam@example.com");
  await runs.goto(`?q=${sam}&outcome=escalated`);
  await expect(runs.row(escalatedRunId)).toHaveCount(1);
  await expect(runs.rows.locator('[data-outcome]:not([data-outcome="escalated"])')).toHaveCount(0);
  await runs.goto(`?q=${sam}&outcome=resolved_by_agent`);
  await expect(runs.row(escalatedRunId)).toHaveCount(0);

  // A bad filter is said plainly, and its export is refused the same way.
  await runs.goto("?from=2026-02-30");
  await expect(page.getByTestId("runs-error")).toHaveText("From: use a date like 2026-12-01");
  const bad = await page.request.get("/api/console/runs/export?format=csv&from=2026-02-30");
  expect(bad.status()).toBe(400);
  expect((await bad.json()).error.code).toBe("INVALID_INPUT");

  const anonymous = await anonymousRequest(baseURL!);
  expect((await anonymous.get("/api/console/runs/export?format=csv")).status()).toBe(401);
  await anonymous.dispose();
});

test("a reviewer cannot reach the runs, a run or their export", async ({ page, as }) => {
  const seeded = await seedRefundApproval(250);
  await as("rita");
  await page.goto("/console/runs");
  await expect(page.getByRole("heading", { name: "Supervisors and admins only" })).toBeVisible();
  await page.goto(`/console/runs/${seeded.runId}`);
  await expect(page.getByRole("heading", { name: "Supervisors and admins only" })).toBeVisible();
  for (const url of ["/api/console/runs/export?format=csv", "/api/console/runs/export?format=jsonl", `/api/console/runs/${seeded.runId}`]) {
    const res = await page.request.get(url);
    expect(res.status(), url).toBe(403);
    expect((await res.json()).error.code).toBe("FORBIDDEN");
  }
});

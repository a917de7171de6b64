import path from "node:path";
import { addDays, dayIn } from "../lib/console/dates";
import { HISTORY_DAYS } from "../lib/setup/seed-history";
import { expect, RunsPage, signedInAs, test } from "./fixtures/console";

// A supervisor reads the metrics of the seeded history (lib/setup/seed-history), in their own time zone; every number
// opens the runs behind it, and the runs list says the same number. A dead letter of that history is retried from
// its run page and completes; a second, late retry is refused plainly; a reviewer sees no metrics.

test.use({ timezoneId: "Europe/Berlin" });

/**
 * The seeded history's days, in Berlin, ending the day before yesterday: every run in it was written when the database
 * was seeded. The specs running beside this one start runs of their own (today, or yesterday for a run that crossed
 * midnight) and decide them; over a period that held those, a figure could change between reading it and opening the
 * runs behind it. The history's newest dead letter (two days ago) is inside.
 */
function historyPeriod(): string {
  const today = dayIn(new Date(), "Europe/Berlin");
  return `/console/metrics?from=${addDays(today, -(HISTORY_DAYS + 1))}&to=${addDays(today, -2)}&tz=Europe%2FBerlin`;
}

/** The number a metric shows, and the runs its link opens (the list's total). */
async function followMetric(page: import("@playwright/test").Page, testId: string): Promise<number> {
  const link = page.getByTestId(testId).first();
  const shown = Number(await link.getAttribute("data-runs"));
  expect(shown).toBeGreaterThan(0);
  await Promise.all([page.waitForURL(/\/console\/runs\?/), link.click()]);
  const runs = new RunsPage(page);
  await expect(runs.count).toHaveAttribute("data-total", String(shown));
  await expect(runs.rows).toHaveCount(Math.min(shown, 50));
  return shown;
}

test("the metrics page shows the seeded history, each number opening exactly the runs behind it", async ({ page, as }) => {
  test.setTimeout(120_000);
  await as("sol");
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Metrics" }).click();
  // The page carries the viewer's zone, so the period's days are theirs.
  await expect(page).toHaveURL(/\/console\/metrics\?tz=Europe%2FBerlin/);
  await expect(page.getByTestId("period-title")).toContainText("Last 30 days");
  await expect(page.getByTestId("period-title")).toContainText("(Europe/Berlin)");
  await expect(page.getByTestId("chart-outcomes").locator(".recharts-bar-rectangle").first()).toBeVisible();
  await page.screenshot({ path: path.resolve("docs/screenshots/console-metrics.png"), fullPage: true });

  // Real numbers from the history, over its own days (see historyPeriod): runs resolved alone, escalations by reason,
  // decisions, refunds, spend.
  await page.goto(historyPeriod());
  await expect(page.getByTestId("period-title")).toContainText("(Europe/Berlin)");
  const resolved = Number(await page.getByTestId("metric-resolved").getAttribute("data-runs"));
  expect(resolved).toBeGreaterThan(20);
  await expect(page.getByTestId("escalations").locator("tr")).toHaveCount(4);
  await expect(page.getByTestId("metric-median")).toHaveText(/\d/);
  await expect(page.getByTestId("reviewers")).toContainText("Raj");
  await expect(page.getByTestId("refund-auto-amount")).toHaveText(/^\$[1-9][\d,]*\.\d\d$/);
  await expect(page.getByTestId("metric-spend")).toHaveText(/^\$[1-9]\d*\.\d\d$/);

  // Each number opens the runs behind it, and the runs list counts the same.
  await followMetric(page, "metric-resolved");
  await expect(page.getByTestId("run-outcome").first()).toContainText("Resolved by the agent");
  await page.goBack();
  await followMetric(page, "escalation-policy_ceiling");
  await expect(page.getByTestId("runs-drill")).toContainText("escalated because: Over the refund ceiling");
  await page.goBack();
  await followMetric(page, "refund-denied");
  await expect(page.getByTestId("run-outcome").first()).toContainText("Denied by a reviewer");
  await page.goBack();
  await followMetric(page, "reviewer-approved");
  await expect(page.getByTestId("runs-drill")).toContainText("an approval approved by");

  // A custom range before the history: nothing, said plainly.
  await page.goto("/console/metrics?from=2020-01-01&to=2020-01-31&tz=Europe%2FBerlin");
  await expect(page.getByTestId("metrics-empty")).toHaveText("No runs started in this period.");
  await expect(page.getByTestId("metric-resolved")).toHaveText("0");
  // A broken one is refused with the reason, and the default period is shown instead.
  await page.goto("/console/metrics?from=2026-02-30&to=2026-03-01&tz=Europe%2FBerlin");
  await expect(page.getByTestId("metrics-error")).toContainText("From: use a date like 2026-12-01");
});

test("a supervisor retries a dead letter from its run page and it completes; a late second retry is refused", async ({
  page,
  as,
  browser,
  baseURL,
}) => {
  test.setTimeout(120_000);
  const history = historyPeriod(); // once: the same days before and after the retry
  await as("sol");
  await page.goto(history);
  const deadLetters = await followMetric(page, "metric-dead-letters");
  const row = new RunsPage(page).rows.first();
  const runId = (await row.getAttribute("data-run-id"))!;
  await row.getByRole("link").first().click();
  await expect(page).toHaveURL(new RegExp(`/console/runs/${runId}$`));
  await expect(page.getByTestId("dead-letter")).toBeVisible();

  // Ada has the same page open; Sol retries first.
  const ada = await signedInAs(browser, "ada", baseURL!);
  await ada.page.goto(`/console/runs/${runId}`);
  await expect(ada.page.getByTestId("dead-letter")).toBeVisible();

  await page.getByRole("button", { name: "Retry this run" }).click();
  // The run continued on the server and completed: the page re-reads it.
  await expect(page.getByTestId("dead-letter")).toHaveCount(0, { timeout: 60_000 });
  await expect(page.locator(`[data-phase="COMPLETED"]`)).toBeVisible();

  await ada.page.getByRole("button", { name: "Retry this run" }).click();
  await expect(ada.page.getByTestId("retry-error")).toContainText("already retried");
  // The refusal stays until she reloads; then the page shows the run as it is now.
  await ada.page.getByTestId("retry-error").getByRole("button", { name: "Reload" }).click();
  await expect(ada.page.getByTestId("dead-letter")).toHaveCount(0);
  await expect(ada.page.locator(`[data-phase="COMPLETED"]`)).toBeVisible();
  await ada.close();

  // One dead letter fewer.
  await page.goto(history);
  await expect(page.getByTestId("metric-dead-letters")).toHaveAttribute("data-runs", String(deadLetters - 1));
});

test("a reviewer sees no metrics", async ({ page, as }) => {
  await as("rita");
  await expect(page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Metrics" })).toHaveCount(0);
  await page.goto("/console/metrics");
  await expect(page.getByRole("heading", { name: "Supervisors and admins only" })).toBeVisible();
});

import { expect, seedRefundApproval, test } from "./fixtures/console";

// A reviewer far from the server: every date the console shows is in the browser's zone, the server's HTML says
// UTC, and the switch after hydration causes no mismatch.
test.use({ timezoneId: "Asia/Tokyo", locale: "en-US" });

const tokyo = (iso: string) =>
  new Intl.DateTimeFormat("en-US", {
    timeZone: "Asia/Tokyo",
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "numeric",
    minute: "2-digit",
  }).format(new Date(iso));
const spaces = (s: string | null) => (s ?? "").replace(/\s+/g, " ").trim();

test("run and handoff times are shown in the viewer's time zone, without a hydration mismatch", async ({ page, as }) => {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(m.text());
  });
  page.on("pageerror", (e) => problems.push(e.message));
  const seeded = await seedRefundApproval();
  await as("sol");

  await page.goto(`/console/runs/${seeded.runId}`);
  const started = page.locator("dd time").first();
  const iso = await started.getAttribute("datetime");
  expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  await expect.poll(async () => spaces(await started.textContent())).toBe(spaces(tokyo(iso!)));
  // The server rendered the same instant in UTC (it cannot know the viewer's zone).
  const html = await (await page.request.get(`/console/runs/${seeded.runId}`)).text();
  expect(html).toMatch(new RegExp(`<time dateTime="${iso!.replace(/\./g, "\\.")}"[^>]*>[^<]*UTC</time>`));

  await page.goto(`/console/handoffs/${seeded.handoffId}`);
  const opened = page.getByText(/^opened /).locator("time");
  const openedIso = await opened.getAttribute("datetime");
  await expect.poll(async () => spaces(await opened.textContent())).toBe(spaces(tokyo(openedIso!)));

  // In a production build React reports a mismatch as minified error #418 (text) or #425.
  expect(problems.filter((p) => /hydrat|did not match|server rendered|#418|#425/i.test(p))).toEqual([]);
});

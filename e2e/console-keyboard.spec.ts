import { effectsOfRun, expect, seedRefundApproval, test } from "./fixtures/console";

// The console works from the keyboard: j / k / Enter on the queue; c, d, e, a on a handoff — and the
// shortcuts stay out of the way while typing.

test("queue: j / k move the selection, Enter opens; handoff: c claims, d focuses the reason, e edits, a approves", async ({ page, as, queue, handoff }) => {
  const first = await seedRefundApproval(250);
  const second = await seedRefundApproval(250);
  await as("raj");
  await queue.goto("?claimed=nobody");
  const ids = await queue.items.evaluateAll((els) => els.map((e) => e.getAttribute("data-handoff-id")));
  const a = ids.indexOf(first.handoffId);
  const b = ids.indexOf(second.handoffId);
  expect(a).toBeGreaterThanOrEqual(0);
  expect(b).toBe(a + 1); // oldest first

  // Move to the first seeded item with j, then one further, then back with k.
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  for (let i = 0; i < a; i++) await page.keyboard.press("j");
  await expect(queue.item(first.handoffId)).toHaveAttribute("data-selected", "true");
  await page.keyboard.press("j");
  await expect(queue.item(second.handoffId)).toHaveAttribute("data-selected", "true");
  await expect(queue.item(second.handoffId)).toBeFocused();
  await page.keyboard.press("k");
  await expect(queue.item(first.handoffId)).toHaveAttribute("data-selected", "true");
  // Typing in a filter does not move the selection.
  await page.getByLabel("Min amount ($)").focus();
  await page.keyboard.type("j");
  await expect(queue.item(first.handoffId)).toHaveAttribute("data-selected", "true");
  await page.getByLabel("Min amount ($)").fill("");
  await queue.item(first.handoffId).focus();
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(new RegExp(`/console/handoffs/${first.handoffId}$`));

  // c claims.
  await expect(handoff.title).toBeVisible();
  await page.keyboard.press("c");
  await expect(handoff.claimBar).toContainText("You are working on this item.");

  // d focuses the reason, and letters typed there are text, not shortcuts ("a" must not approve).
  await page.keyboard.press("d");
  await expect(handoff.denyReason).toBeFocused();
  await page.keyboard.type("a damaged box");
  await expect(handoff.denyReason).toHaveValue("a damaged box");
  await expect(handoff.result).toHaveCount(0);
  await handoff.denyReason.fill("");

  // e opens the editor with the amount focused; Escape-free: leave it with Tab/Cancel.
  await page.locator("h1").click();
  await page.keyboard.press("e");
  await expect(handoff.editAmount).toBeFocused();
  await page.getByRole("button", { name: "Cancel edit" }).click();

  // a approves.
  await page.locator("h1").click();
  await page.keyboard.press("a");
  await expect(handoff.result).toContainText("refunded $250.00");
  expect(effectsOfRun(first.runId)).toHaveLength(1);
  expect(effectsOfRun(second.runId)).toHaveLength(0);
});

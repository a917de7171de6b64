import { effectsOfRun, expect, seedRefundApproval, test, unusedApprovalAmount } from "./fixtures/console";

// The console works from the keyboard: j / k / Enter on the queue; c, d, e, a on a handoff — and the
// shortcuts stay out of the way while typing.

test("queue: j / k move the selection, Enter opens; handoff: c claims, d focuses the reason, e edits, a approves", async ({
  page,
  as,
  queue,
  handoff,
}) => {
  // Two items of an amount nobody else asks for: the queue filtered to it holds exactly these two, whatever other
  // specs add to or take from the shop's queue meanwhile (the selection is a position in the list).
  const amount = await unusedApprovalAmount();
  const first = await seedRefundApproval(amount);
  const second = await seedRefundApproval(amount);
  await as("raj");
  await queue.goto(`?claimed=nobody&min=${amount}&max=${amount}`);
  await expect(queue.items).toHaveCount(2);
  const ids = await queue.items.evaluateAll((els) => els.map((e) => e.getAttribute("data-handoff-id")));
  expect(ids).toEqual([first.handoffId, second.handoffId]); // oldest first

  // The first item is selected; j moves one further, k back.
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await expect(queue.item(first.handoffId)).toHaveAttribute("data-selected", "true");
  await page.keyboard.press("j");
  await expect(queue.item(second.handoffId)).toHaveAttribute("data-selected", "true");
  await expect(queue.item(second.handoffId)).toBeFocused();
  await page.keyboard.press("k");
  await expect(queue.item(first.handoffId)).toHaveAttribute("data-selected", "true");
  // Typing in a filter does not move the selection.
  const minAmount = page.getByLabel("Min amount ($)");
  await minAmount.focus();
  await page.keyboard.type("j");
  await expect(queue.item(first.handoffId)).toHaveAttribute("data-selected", "true");
  await minAmount.fill(String(amount));
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
  await expect(handoff.result).toContainText(`refunded $${amount.toFixed(2)}`);
  expect(await effectsOfRun(first.runId)).toHaveLength(1);
  expect(await effectsOfRun(second.runId)).toHaveLength(0);
});

import path from "node:path";
import {
  captureActions,
  effectsOfRun,
  expect,
  runPhase,
  seedCancelApproval,
  seedEscalation,
  seedRefundApproval,
  test,
} from "./fixtures/console";

// A reviewer works single-approver refunds (the A-1002 case: $250, delivered, arrived damaged) in the
// console: approve, deny (a reason is required), edit to another amount (shown as a diff, re-checked).

const SCREENSHOTS = path.resolve("docs/screenshots");

test("a parked $250 refund appears in the queue live; the reviewer claims and approves it; exactly one effect", async ({
  page,
  as,
  queue,
  handoff,
}) => {
  // Other work in the queue, as on a real morning (and for the screenshot).
  const bigger = await seedRefundApproval(460);
  await seedEscalation();
  await as("raj");
  await queue.goto();
  await expect(queue.item(bigger.handoffId)).toContainText("0 of 2 approvals");
  // Created while the queue is open: it appears without a reload.
  const seeded = await seedRefundApproval(250);
  const item = queue.item(seeded.handoffId);
  await expect(item).toBeVisible();
  await expect(item).toContainText(`Refund $250.00 on ${seeded.orderNumber}`);
  await expect(item).toContainText("$250.00");
  await expect(item).toContainText("Unclaimed");
  await expect(item.locator("[data-sla]")).toHaveAttribute("data-sla", "ok"); // green: minutes old
  await expect(item).toContainText(/expires in 2\d h|expires in 1 d/);
  await page.screenshot({ path: path.join(SCREENSHOTS, "console-queue.png") });

  await item.click();
  await expect(page).toHaveURL(new RegExp(`/console/handoffs/${seeded.handoffId}$`));
  // The self-contained record: who, what was asked, what was tried, why, how much, the exact call and rule.
  await expect(page.getByTestId("record-customer")).toContainText(seeded.customerEmail);
  await expect(page.getByTestId("record-asked")).toContainText(`my order ${seeded.orderNumber} arrived damaged, please refund it`);
  await expect(page.getByTestId("record-tried")).toContainText(`Looked up order ${seeded.orderNumber}`);
  await expect(page.getByTestId("record-root-cause")).toHaveText(
    `A person's approval is needed: a refund of $250.00 on ${seeded.orderNumber} is over the automatic limit of $100.00.`,
  );
  await expect(page.getByTestId("record-amount")).toHaveText("$250.00");
  await expect(page.getByTestId("record-recommended")).toHaveText(`Approve: Refund $250.00 on ${seeded.orderNumber}.`);
  await expect(page.getByTestId("call-tool")).toHaveText("refund_order");
  await expect(page.getByLabel("Proposed input (JSON)")).toContainText('"amount_cents": 25000');
  await expect(page.getByTestId("call-rule")).toContainText("refund_policy");
  await expect(page.getByTestId("call-rule")).toContainText("(policy v1)");
  await expect(handoff.runPhase).toContainText("WAITING_FOR_APPROVAL");

  // Claim before working: the decision buttons wait for it.
  await expect(handoff.approve).toBeDisabled();
  await handoff.claimAndWait();

  const actions = captureActions(page);
  await handoff.approve.click();
  // While the server works, nothing can be sent again: the button is disabled, or already gone with the decision.
  await expect(handoff.approve.and(page.locator(":enabled"))).toHaveCount(0);
  await expect(handoff.result).toContainText("Approved.");
  await expect(handoff.result).toContainText("The customer was refunded $250.00.");
  await expect(handoff.result).toContainText("The run is now COMPLETED.");
  await expect(handoff.runPhase).toContainText("COMPLETED");
  await expect(handoff.status).toHaveText("approved");
  await expect(page.getByTestId("decision-outcome")).toContainText(/^Approved by Raj on .+ — \$250\.00 refunded$/);
  // The decision quoted the version the reviewer saw.
  expect(actions).toHaveLength(1);
  expect(actions[0]!.body).toContain('"version":1');

  const effects = await effectsOfRun(seeded.runId);
  expect(effects).toHaveLength(1);
  expect(effects[0]!.toolName).toBe("refund_order");
  expect(effects[0]!.input.amount_cents).toBe(25000);
  expect(await runPhase(seeded.runId)).toBe("COMPLETED");

  // Back in the queue (live): the item has left the open list.
  await page.goto("/console");
  await expect(queue.item(seeded.handoffId)).toHaveCount(0);
  await page.goto("/console?status=decided");
  await expect(queue.item(seeded.handoffId)).toContainText("Approved by Raj");
});

test("deny requires a reason; the run ends with no effect", async ({ page, as, handoff }) => {
  const seeded = await seedRefundApproval(250);
  await as("rita");
  await handoff.goto(seeded.handoffId);
  await handoff.claimAndWait();
  const actions = captureActions(page);

  await handoff.deny.click();
  await expect(page.getByText("A reason is required to deny. The customer is told it.")).toBeVisible();
  await expect(handoff.denyReason).toBeFocused();
  expect(actions, "no request without a reason").toHaveLength(0);

  await handoff.denyReason.fill("The photos show the damage predates delivery.");
  await handoff.deny.click();
  await expect(handoff.result).toContainText("Denied.");
  await expect(handoff.result).toContainText("Nothing was done.");
  await expect(handoff.status).toHaveText("denied");
  await expect(page.getByTestId("decision-outcome")).toHaveText(/^Denied by Rita on .+: The photos show the damage predates delivery\.$/);
  await expect(handoff.runPhase).toContainText("COMPLETED");
  expect(actions).toHaveLength(1);
  expect(await effectsOfRun(seeded.runId)).toHaveLength(0);
});

test("edit to $150: the change is shown as a diff, re-checked on the server, and $150 is what runs", async ({ as, handoff }) => {
  const seeded = await seedRefundApproval(250);
  await as("rita");
  await handoff.goto(seeded.handoffId);
  await handoff.claimAndWait();

  await handoff.edit.click();
  await expect(handoff.editAmount).toBeFocused();
  await expect(handoff.editAmount).toHaveValue("250.00");
  await expect(handoff.approveWithEdits).toBeDisabled(); // nothing changed yet
  await handoff.editAmount.fill("150");
  const changed = handoff.diff.locator('tr[data-change="changed"]');
  await expect(changed).toHaveCount(1);
  await expect(changed).toContainText("amount_cents");
  await expect(changed).toContainText("25000");
  await expect(changed).toContainText("15000");
  await expect(handoff.diff.locator('tr[data-change="same"]')).toHaveCount(2); // order_number, reason unchanged

  await handoff.approveWithEdits.click();
  await expect(handoff.result).toContainText("Approved with your edits.");
  await expect(handoff.result).toContainText("refunded $150.00");
  await expect(handoff.status).toHaveText("edited");
  await expect(handoff.runPhase).toContainText("COMPLETED");

  const effects = await effectsOfRun(seeded.runId);
  expect(effects).toHaveLength(1);
  expect(effects[0]!.input.amount_cents).toBe(15000);
  expect(effects[0]!.input.order_number).toBe(seeded.orderNumber);
});

test("an edit the gates refuse is refused, and nothing runs", async ({ as, handoff }) => {
  const seeded = await seedRefundApproval(250);
  await as("raj");
  await handoff.goto(seeded.handoffId);
  await handoff.claimAndWait();
  await handoff.edit.click();
  await handoff.editAmount.fill("900"); // more than the $250 order: the refund gate denies it
  await handoff.approveWithEdits.click();
  await expect(handoff.error).toHaveAttribute("data-code", "GATE_DENIED");
  await expect(handoff.error).toContainText("still refundable");
  await expect(handoff.status).toHaveText("pending");
  expect(await effectsOfRun(seeded.runId)).toHaveLength(0);
});

test("other tools are edited as JSON: invalid JSON is caught, the diff shows the change, the edit runs", async ({ as, handoff }) => {
  const seeded = await seedCancelApproval();
  await as("raj");
  await handoff.goto(seeded.handoffId);
  await expect(handoff.page.getByTestId("call-tool")).toHaveText("cancel_order");
  await handoff.claimAndWait();
  await handoff.edit.click();
  await expect(handoff.editJson).toBeFocused();

  await handoff.editJson.fill('{"order_number": "oops"');
  await expect(handoff.page.getByText("This is not valid JSON yet.")).toBeVisible();
  await expect(handoff.approveWithEdits).toBeDisabled();

  const edited = { order_number: seeded.orderNumber, reason: "Customer ordered the wrong size; confirmed by phone" };
  await handoff.editJson.fill(JSON.stringify(edited, null, 2));
  const changed = handoff.diff.locator('tr[data-change="changed"]');
  await expect(changed).toHaveCount(1);
  await expect(changed).toContainText("reason");
  await expect(changed).toContainText("confirmed by phone");

  await handoff.approveWithEdits.click();
  await expect(handoff.result).toContainText("Approved with your edits.");
  await expect(handoff.runPhase).toContainText("COMPLETED");
  const effects = await effectsOfRun(seeded.runId);
  expect(effects).toHaveLength(1);
  expect(effects[0]!.toolName).toBe("cancel_order");
  expect(effects[0]!.input).toMatchObject(edited);
});

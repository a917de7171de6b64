import path from "node:path";
import { agentCli, effectsOfRun, expect, seedCustomerHistory, seedRefundApproval, test } from "./fixtures/console";

// A reviewer decides from the full picture: the order beside the decision (status, items, amounts, delivery,
// what was already refunded or replaced), the conversation inline, what the agent tried in words, the rule that
// stopped it, and after the decision who decided what and when — in words, not JSON. Over-authority is said on
// the card and on the page before acting.

const SCREENSHOTS = path.resolve("docs/screenshots");
const WHEN = /\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}/.source; // "1 Dec 2026, 10:42"

test("a reviewer decides from the full picture, and the decision reads in words", async ({ page, as, queue, handoff }) => {
  const seeded = await seedRefundApproval(250);
  const history = await seedCustomerHistory(seeded.customerEmail);
  await as("raj");
  await queue.goto();
  await expect(queue.item(seeded.handoffId)).toBeVisible();
  await expect(queue.item(seeded.handoffId).getByTestId("queue-over-authority")).toHaveCount(0); // Raj may approve $1,000

  await handoff.goto(seeded.handoffId);
  // The order, beside the decision.
  const order = page.getByTestId("order-panel");
  await expect(page.getByRole("heading", { name: `Order ${seeded.orderNumber}` })).toBeVisible();
  await expect(page.getByTestId("order-status")).toContainText("delivered");
  await expect(page.getByTestId("order-status")).toContainText("arrived damaged");
  await expect(page.getByTestId("order-items")).toContainText("1 × Alpine 45L backpack");
  await expect(page.getByTestId("order-amounts")).toHaveText("$250.00 · refunded $0.00 · still refundable $250.00");
  await expect(page.getByTestId("order-shipments")).toContainText(/Shipment: UPS 1ZE2E\w+ — delivered/);
  await expect(order.getByTestId("order-history")).toHaveText("No refunds or replacements yet.");
  // What the customer already got on their other orders, dated.
  const others = page.getByTestId("customer-history");
  await expect(others).toContainText(
    new RegExp(`\\d{1,2} [A-Z][a-z]{2} \\d{4}, ${history.orderNumber}: refunded \\$30\\.00 — “wrong colour”`),
  );
  await expect(others).toContainText(new RegExp(`${history.orderNumber}: replacement sent \\(UPS 1ZREPL\\w+ — delivered\\)`));

  // The conversation as the customer saw it, inline.
  const conversation = page.getByTestId("conversation-inline");
  await expect(conversation.locator('[data-from="customer"]').first()).toContainText(
    `my order ${seeded.orderNumber} arrived damaged, please refund it`,
  );
  await expect(conversation.locator('[data-from="system"]').last()).toContainText(`refund for ${seeded.orderNumber} is with our team`);

  // The customer's words apart from the agent's; what the agent tried, in words; the rule and its policy version.
  await expect(page.getByTestId("record-customer-words")).toHaveText(`my order ${seeded.orderNumber} arrived damaged, please refund it`);
  await expect(page.getByTestId("record-agent-reason")).not.toBeEmpty();
  const tried = page.getByTestId("record-tried");
  await expect(tried).toContainText(`Looked up order ${seeded.orderNumber} — delivered, $250.00`);
  await expect(tried).toContainText(`Asked to refund $250.00 on ${seeded.orderNumber} — waiting for approval`);
  await expect(page.getByTestId("call-rule")).toHaveText(
    `Refund policy (refund_policy) — A person's approval is needed: a refund of $250.00 on ${seeded.orderNumber} is over the automatic limit of $100.00. (policy v1)`,
  );
  await expect(page.getByTestId("call-words")).toHaveText(`Refund $250.00 on ${seeded.orderNumber}`);
  // No JSON on the page: the raw records wait behind "Technical details".
  await expect(page.locator("pre:visible")).toHaveCount(0);

  await handoff.claimAndWait();
  await page.screenshot({ path: path.join(SCREENSHOTS, "console-handoff.png"), fullPage: true });
  await handoff.approve.click();
  await expect(handoff.result).toContainText("Approved. The customer was refunded $250.00.");

  // After the decision: who decided what, when — in words.
  await expect(page.getByTestId("decision-outcome")).toHaveText(new RegExp(`^Approved by Raj on ${WHEN} — \\$250\\.00 refunded$`));
  await expect(tried).toContainText(`Refunded $250.00 on ${seeded.orderNumber} — approved by Raj`);
  await expect(order.getByTestId("order-history")).toContainText(/refunded \$250\.00/);
  await expect(page.getByTestId("order-amounts")).toHaveText("$250.00 · refunded $250.00 · still refundable $0.00");
  await expect(page.locator("pre:visible")).toHaveCount(0);
  await page.getByText("Technical details").last().click();
  await expect(page.getByLabel("Result the agent read (JSON)")).toContainText('"status": "refunded"');

  const effects = await effectsOfRun(seeded.runId);
  expect(effects).toHaveLength(1);
  expect(effects[0]!.input.amount_cents).toBe(25000);
});

test("over authority: said on the card and on the page, Approve is off; a four-eyes decision names both approvers", async ({
  page,
  as,
  queue,
  handoff,
}) => {
  const seeded = await seedRefundApproval(460);
  await as("rita");
  await queue.goto();
  await expect(queue.item(seeded.handoffId).getByTestId("queue-over-authority")).toHaveText("Over your authority ($300.00)");

  await handoff.goto(seeded.handoffId);
  const hint = page.getByTestId("authority-hint");
  await expect(hint).toHaveText(
    "$460.00 is above your approval authority of $300.00, so you cannot approve it. You can deny it, or edit it to an amount within your authority.",
  );
  await handoff.claimAndWait();
  await expect(handoff.approve).toBeDisabled();
  await expect(handoff.approve).toHaveAccessibleDescription(/above your approval authority/);
  await expect(handoff.deny).toBeEnabled();
  // Editing down is the way through; an edit still above the authority cannot be sent either.
  await handoff.edit.click();
  await handoff.editAmount.fill("400");
  await expect(page.getByTestId("edit-authority")).toHaveText("$400.00 is above your approval authority of $300.00.");
  await expect(handoff.approveWithEdits).toBeDisabled();
  await handoff.editAmount.fill("280");
  await expect(page.getByTestId("edit-authority")).toHaveCount(0);
  await expect(handoff.approveWithEdits).toBeEnabled();
  await page.getByRole("button", { name: "Cancel edit" }).click();
  await page.getByRole("button", { name: "Release" }).click();
  await expect(handoff.claim).toBeVisible();

  // Raj and Ada approve (from the CLI: the same rules); Rita's page follows and names both, with times.
  agentCli("decide", seeded.handoffId, "--as", "raj@acme.test", "--decision", "approve");
  await expect(page.getByTestId("decision-outcome")).toHaveText(
    new RegExp(`^Approved by Raj on ${WHEN} — waiting for a second, different reviewer$`),
  );
  agentCli("decide", seeded.handoffId, "--as", "ada@acme.test", "--decision", "approve");
  await expect(handoff.status).toHaveText("approved");
  await expect(page.getByTestId("decision-outcome")).toHaveText(
    new RegExp(`^Approved by Raj on ${WHEN}, then by Ada on ${WHEN} — \\$460\\.00 refunded$`),
  );
  await page.getByTestId("changed-notice").getByRole("button", { name: "Reload" }).click();
  await expect(handoff.approvals).toContainText(/2 of 2 approvals \(by Raj, .+; Ada, .+\)/);

  // The decided card names every approver, not only the last.
  await queue.goto("?status=decided");
  await expect(queue.item(seeded.handoffId).getByTestId("queue-claim")).toHaveText("Approved by Raj and Ada");
  await expect(queue.item(seeded.handoffId).getByTestId("queue-over-authority")).toHaveCount(0);
});

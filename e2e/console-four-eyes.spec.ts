import {
  agentCliError,
  effectsOfRun,
  expect,
  forgeNextDecision,
  HandoffPage,
  seedRefundApproval,
  signedInAs,
  test,
} from "./fixtures/console";

// A $460 refund (the A-1004 case) needs two different approvers, each within their authority.

test("over authority: Rita ($300) is refused on a $460 item", async ({ as, handoff }) => {
  const seeded = await seedRefundApproval(460);
  await as("rita");
  await handoff.goto(seeded.handoffId);
  await expect(handoff.page.getByTestId("authority-hint")).toContainText("$460.00 is above your approval authority of $300.00");
  await handoff.claimAndWait();
  await expect(handoff.approve).toBeDisabled();
  // An approval that slips past the page (here: an allowed $250 edit rewritten into "approve") is refused by the server.
  await forgeNextDecision(handoff.page, (body) => body.replace('"decision":"edit"', '"decision":"approve"'));
  await handoff.edit.click();
  await handoff.editAmount.fill("250");
  await handoff.approveWithEdits.click();
  await expect(handoff.error).toHaveAttribute("data-code", "OVER_AUTHORITY");
  await expect(handoff.error).toHaveText("$460.00 is above your approval authority of $300.00.");
  await expect(handoff.status).toHaveText("pending");
  await expect(handoff.approvals).toContainText("0 of 2 approvals");
  expect(await effectsOfRun(seeded.runId)).toHaveLength(0);
});

test("four eyes: Raj's approval leaves it pending, Raj cannot approve twice, Ada's completes it", async ({
  browser,
  baseURL,
  as,
  handoff,
}) => {
  const seeded = await seedRefundApproval(460);
  await as("raj");
  await handoff.goto(seeded.handoffId);
  await expect(handoff.approvals).toHaveText("0 of 2 approvals");

  // Ada has the item open before Raj decides.
  const ada = await signedInAs(browser, "ada", baseURL!);
  const adaPage = new HandoffPage(ada.page);
  await adaPage.goto(seeded.handoffId);

  await handoff.claimAndWait();
  await handoff.approve.click();
  await expect(handoff.result).toHaveText("Your approval is recorded: 1 of 2 approvals — needs a second, different reviewer.");
  await expect(handoff.status).toHaveText("pending");
  await expect(handoff.approvals).toContainText("1 of 2 approvals — needs a second, different reviewer");
  await expect(handoff.approvals).toContainText("by Raj");
  await expect(handoff.runPhase).toContainText("WAITING_FOR_APPROVAL");
  expect(await effectsOfRun(seeded.runId)).toHaveLength(0);

  // Raj again: the server refuses a second approval by the same person.
  await expect(handoff.page.getByText("You approved this already; a second, different reviewer must approve it.")).toBeVisible();
  await handoff.claimAndWait(); // the first approval released his claim
  await handoff.approve.click();
  await expect(handoff.error).toHaveAttribute("data-code", "SAME_APPROVER");
  await expect(handoff.error).toHaveText("You already approved this; a second, different reviewer must approve it.");
  // The same rule holds for every surface, not only this page.
  expect(agentCliError("decide", seeded.handoffId, "--as", "raj@acme.test", "--decision", "approve").code).toBe("SAME_APPROVER");
  await handoff.page.getByRole("button", { name: "Release" }).click();
  await expect(handoff.claim).toBeVisible();

  // Ada's page noticed the change by itself; she reloads the record before deciding.
  await expect(ada.page.getByTestId("changed-notice")).toContainText("This changed since you opened it");
  await expect(adaPage.approve).toBeDisabled();
  await ada.page.getByTestId("changed-notice").getByRole("button", { name: "Reload" }).click();
  await expect(adaPage.approvals).toContainText("1 of 2 approvals — needs a second, different reviewer");
  await adaPage.claimAndWait();
  await adaPage.approve.click();
  await expect(adaPage.result).toContainText("Approved.");
  await expect(adaPage.result).toContainText("The customer was refunded $460.00.");
  await expect(adaPage.status).toHaveText("approved");
  await expect(adaPage.approvals).toContainText("2 of 2 approvals");
  await expect(adaPage.runPhase).toContainText("COMPLETED");

  // Raj's page follows: approved, by Ada.
  await expect(handoff.status).toHaveText("approved");
  const effects = await effectsOfRun(seeded.runId);
  expect(effects).toHaveLength(1);
  expect(effects[0]!.input.amount_cents).toBe(46000);
  await ada.close();
});

import {
  effectsOfRun,
  expect,
  forgeNextDecision,
  performEveryConsoleAction,
  replayAction,
  seedEscalation,
  seedRefundApproval,
  signedInAs,
  test,
} from "./fixtures/console";

// Every console mutation, sent by another shop's reviewer, is refused as "not found" and changes nothing;
// a reviewer over their authority is refused for every money-moving decision (approve, edit).

test("another shop's reviewer is refused for each mutation", async ({ page, as, browser, baseURL }) => {
  test.setTimeout(150_000);
  const approval = await seedRefundApproval(250);
  const escalation = await seedEscalation();
  await as("raj");
  const captured = await performEveryConsoleAction(page, { handoffId: approval.handoffId, conversationId: escalation.conversationId });

  const gus = await signedInAs(browser, "gus", baseURL!);
  const before = await page.request.get(`/api/console/conversations/${escalation.conversationId}`).then((r) => r.json());
  for (const action of captured) {
    const { text } = await replayAction(gus.page.request, action);
    expect(text, `gus replaying ${action.body.slice(0, 80)}`).toContain('"code":"NOT_FOUND"');
  }
  const after = await page.request.get(`/api/console/conversations/${escalation.conversationId}`).then((r) => r.json());
  expect(after.data.view.messages).toHaveLength(before.data.view.messages.length);
  expect(await effectsOfRun(approval.runId)).toHaveLength(0);
  await gus.close();
});

test("a reviewer over their authority is refused for approve and for edit", async ({ as, handoff }) => {
  const seeded = await seedRefundApproval(460);
  await as("rita");
  await handoff.goto(seeded.handoffId);
  await handoff.claimAndWait();
  // The page does not offer either (Approve is off, an edit above $300 cannot be sent); requests that slip past
  // it — an allowed $250 edit rewritten into an approval, then into a $400 edit — are refused by the server.
  await expect(handoff.approve).toBeDisabled();
  await handoff.edit.click();
  await handoff.editAmount.fill("250");
  await forgeNextDecision(handoff.page, (body) => body.replace('"decision":"edit"', '"decision":"approve"'));
  await handoff.approveWithEdits.click();
  await expect(handoff.error).toHaveAttribute("data-code", "OVER_AUTHORITY");
  await forgeNextDecision(handoff.page, (body) => body.replace('"amount_cents":25000', '"amount_cents":40000'));
  await handoff.approveWithEdits.click();
  await expect(handoff.error).toHaveAttribute("data-code", "OVER_AUTHORITY");
  await expect(handoff.error).toContainText("$400.00 is above Rita's approval authority of $300.00.");
  await expect(handoff.status).toHaveText("pending");
  await expect(handoff.approvals).toContainText("0 of 2 approvals");
  expect(await effectsOfRun(seeded.runId)).toHaveLength(0);
});

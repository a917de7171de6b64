import { captureActions, ConversationPage, effectsOfRun, expect, HandoffPage, replayAction, seedEscalation, seedRefundApproval, signedInAs, test } from "./fixtures/console";

// Every console mutation, sent by another shop's reviewer, is refused as "not found" and changes nothing;
// a reviewer over their authority is refused for every money-moving decision (approve, edit).

test("another shop's reviewer is refused for each mutation", async ({ page, as, browser, baseURL }) => {
  test.setTimeout(150_000);
  const approval = await seedRefundApproval(250);
  const escalation = await seedEscalation();
  const captured = captureActions(page);
  await as("raj");
  const handoff = new HandoffPage(page);
  await handoff.goto(approval.handoffId);
  await handoff.claimAndWait(); // claim
  await page.getByRole("button", { name: "Release" }).click(); // release
  await expect(handoff.claim).toBeVisible();
  await handoff.claimAndWait();
  await handoff.denyReason.fill("Checking refusals");
  await handoff.deny.click(); // decide
  await expect(handoff.result).toContainText("Denied");
  const conversation = new ConversationPage(page);
  await conversation.goto(escalation.conversationId);
  await conversation.takeOver.click(); // take over
  await conversation.reply.fill("Hello from a person");
  await conversation.send.click(); // reply
  await expect(conversation.result).toHaveText("Reply sent.");
  await conversation.handBack.click(); // hand back
  await expect(conversation.result).toHaveText("Handed back to the agent.");
  expect(new Set(captured.map((c) => c.headers["next-action"])).size, "six different server actions").toBe(6);

  const gus = await signedInAs(browser, "gus", baseURL!);
  const before = await page.request.get(`/api/console/conversations/${escalation.conversationId}`).then((r) => r.json());
  for (const action of captured) {
    const { text } = await replayAction(gus.page.request, action);
    expect(text, `gus replaying ${action.body.slice(0, 80)}`).toContain('"code":"NOT_FOUND"');
  }
  const after = await page.request.get(`/api/console/conversations/${escalation.conversationId}`).then((r) => r.json());
  expect(after.data.view.messages).toHaveLength(before.data.view.messages.length);
  expect(effectsOfRun(approval.runId)).toHaveLength(0);
  await gus.close();
});

test("a reviewer over their authority is refused for approve and for edit", async ({ as, handoff }) => {
  const seeded = await seedRefundApproval(460);
  await as("rita");
  await handoff.goto(seeded.handoffId);
  await handoff.claimAndWait();
  await handoff.approve.click();
  await expect(handoff.error).toHaveAttribute("data-code", "OVER_AUTHORITY");
  await handoff.edit.click();
  await handoff.editAmount.fill("400");
  await handoff.approveWithEdits.click();
  await expect(handoff.error).toHaveAttribute("data-code", "OVER_AUTHORITY");
  await expect(handoff.status).toHaveText("pending");
  await expect(handoff.approvals).toContainText("0 of 2 approvals");
  expect(effectsOfRun(seeded.runId)).toHaveLength(0);
});

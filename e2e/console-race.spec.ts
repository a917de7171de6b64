import {
  captureActions,
  effectsOfRun,
  expect,
  forgeNextDecision,
  HandoffPage,
  replayAction,
  seedRefundApproval,
  sendTogether,
  signedInAs,
  test,
} from "./fixtures/console";

// Two reviewers on one item at the same moment, and a double-clicked approve: one claim wins, one request
// is sent, one effect happens, and the loser is told plainly who has it and what happened.

test("Rita and Raj race for one item; a double-clicked approve sends one request; one effect", async ({ browser, baseURL }) => {
  const seeded = await seedRefundApproval(250);
  const rita = await signedInAs(browser, "rita", baseURL!);
  const raj = await signedInAs(browser, "raj", baseURL!);
  const pages = { Rita: new HandoffPage(rita.page), Raj: new HandoffPage(raj.page) };
  await Promise.all([pages.Rita.goto(seeded.handoffId), pages.Raj.goto(seeded.handoffId)]);

  // Both claim at once: neither request leaves before the other is sent (else the first claim's live update can
  // take the second page's Claim button away before it is clicked); the server serialises them, exactly one wins.
  const together = await sendTogether([rita.page, raj.page]);
  await Promise.all([pages.Rita.claim.click(), pages.Raj.claim.click()]);
  await together.released;
  const holds = async (p: HandoffPage) => (await p.claimBar.textContent())?.includes("You are working on this item.");
  await expect
    .poll(async () => [await holds(pages.Rita), await holds(pages.Raj)].filter(Boolean).length, {
      message: "exactly one reviewer holds the claim",
    })
    .toBe(1);
  await expect
    .poll(async () => (await pages.Rita.claimBar.textContent()) + " | " + (await pages.Raj.claimBar.textContent()))
    .toMatch(/Claimed by (Rita|Raj)/);
  const winnerName = (await holds(pages.Rita)) ? "Rita" : "Raj";
  const loserName = winnerName === "Rita" ? "Raj" : "Rita";
  const winner = pages[winnerName];
  const loser = pages[loserName];
  // The loser sees who has it, and cannot decide.
  await expect(loser.claimBar).toHaveText(`Claimed by ${winnerName}`);
  await expect(loser.page.getByText(`${winnerName} is working on this item.`)).toBeVisible();
  await expect(loser.approve).toBeDisabled();

  // The winner double-clicks Approve: one request, one effect.
  const sent = captureActions(winner.page);
  await winner.approve.dblclick();
  await expect(winner.result).toContainText("refunded $250.00");
  await expect(winner.runPhase).toContainText("COMPLETED");
  expect(sent.filter((a) => a.body.includes('"decision":"approve"'))).toHaveLength(1);

  // The loser's page follows live: decided, by whom.
  await expect(loser.status).toHaveText("approved");
  await expect(loser.page.getByTestId("changed-notice")).toHaveText(new RegExp(`Already approved by ${winnerName}\\.`));

  // Even a request that slips past the page (the same decision sent again, from the loser's session)
  // is refused with a clear message and changes nothing.
  const replay = await replayAction(loser.page.request, sent[0]!);
  expect(replay.text).toContain('"code":"ALREADY_DECIDED"');
  expect(replay.text).toContain(`Already approved by ${winnerName}.`);
  const again = await replayAction(winner.page.request, sent[0]!);
  expect(again.text).toContain('"code":"ALREADY_DECIDED"');

  const effects = await effectsOfRun(seeded.runId);
  expect(effects).toHaveLength(1);
  expect(effects[0]!.input.amount_cents).toBe(25000);
  await Promise.all([rita.close(), raj.close()]);
});

test("a decision quoting an old version is refused: 'This changed since you opened it — reload'", async ({ browser, baseURL }) => {
  const seeded = await seedRefundApproval(460); // two approvers: the first approval bumps the version
  const rita = await signedInAs(browser, "rita", baseURL!);
  const raj = await signedInAs(browser, "raj", baseURL!);
  const ada = await signedInAs(browser, "ada", baseURL!);

  // Rita (version 1) sends an approval the page does not offer her (an allowed edit, rewritten) and is refused for
  // authority; her request is kept, as a stale page would send it.
  const ritaPage = new HandoffPage(rita.page);
  await ritaPage.goto(seeded.handoffId);
  await ritaPage.claimAndWait();
  await expect(ritaPage.approve).toBeDisabled();
  const ritaSent = captureActions(rita.page);
  await forgeNextDecision(rita.page, (body) => body.replace('"decision":"edit"', '"decision":"approve"'));
  await ritaPage.edit.click();
  await ritaPage.editAmount.fill("250");
  await ritaPage.approveWithEdits.click();
  await expect(ritaPage.error).toHaveAttribute("data-code", "OVER_AUTHORITY");
  await rita.page.getByRole("button", { name: "Cancel edit" }).click();
  await rita.page.getByRole("button", { name: "Release" }).click();
  await expect(ritaPage.claim).toBeVisible();

  // Raj approves first: version 2.
  const rajPage = new HandoffPage(raj.page);
  await rajPage.goto(seeded.handoffId);
  await rajPage.claimAndWait();
  await rajPage.approve.click();
  await expect(rajPage.result).toContainText("1 of 2 approvals");

  // Rita's page noticed; the version-1 decision itself is refused as stale by the server.
  await expect(rita.page.getByTestId("changed-notice")).toContainText("This changed since you opened it");
  const stale = await replayAction(rita.page.request, ritaSent.find((a) => a.body.includes('"decision"'))!);
  expect(stale.text).toContain('"code":"STALE_VERSION"');

  // Ada's page sends a decision quoting version 1 (as a page that missed the update would): the page says
  // so plainly, offers a reload, and nothing happens.
  const adaPage = new HandoffPage(ada.page);
  await adaPage.goto(seeded.handoffId);
  await adaPage.claimAndWait();
  await ada.page.route("**/console/handoffs/**", async (route) => {
    const req = route.request();
    if (req.method() === "POST" && req.headers()["next-action"] && (req.postData() ?? "").includes('"decision"')) {
      await route.continue({ postData: req.postData()!.replace('"version":2', '"version":1') });
    } else {
      await route.continue();
    }
  });
  await adaPage.approve.click();
  await expect(adaPage.error).toHaveAttribute("data-code", "STALE_VERSION");
  await expect(adaPage.error).toContainText("This changed since you opened it — reload.");
  await expect(adaPage.status).toHaveText("pending");
  expect(await effectsOfRun(seeded.runId)).toHaveLength(0);

  await ada.page.unroute("**/console/handoffs/**");
  await adaPage.error.getByRole("button", { name: "Reload" }).click();
  await adaPage.approve.click();
  await expect(adaPage.result).toContainText("The customer was refunded $460.00.");
  expect(await effectsOfRun(seeded.runId)).toHaveLength(1);
  await Promise.all([rita.close(), raj.close(), ada.close()]);
});

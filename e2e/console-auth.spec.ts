import {
  anonymousRequest,
  expect,
  performEveryConsoleAction,
  replayAction,
  seedEscalation,
  seedRefundApproval,
  test,
} from "./fixtures/console";

// Staff sign-in, sign-out, tenancy and refusals: who may see and do what in the console.

test("a reviewer signs in, sees who and which shop, and signs out", async ({ page, login, queue }) => {
  await page.goto("/console");
  // Anonymous: sent to sign in, with the way back remembered.
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fconsole/);

  await login.signIn("raj", "not-the-password");
  await expect(login.error).toHaveText("Wrong email or password.");
  await expect(page).toHaveURL(/\/login/);

  await login.signIn("raj");
  await expect(page).toHaveURL(/\/console$/);
  await expect(queue.signedInAs).toContainText("Raj");
  await expect(queue.signedInAs).toContainText("raj@acme.test");
  await expect(page.getByTestId("signed-in-shop")).toHaveText("Acme Outfitters");
  await expect(queue.signedInAs).toContainText("approves up to $1,000.00");
  // Reviewers get no runs link; supervisors do (checked below).
  await expect(page.getByRole("link", { name: "Runs" })).toHaveCount(0);

  await queue.signOut.click();
  await expect(page).toHaveURL(/\/login/);
  await page.goto("/console");
  await expect(page).toHaveURL(/\/login\?callbackUrl=/);
});

test("sign-in returns to the page that was asked for", async ({ page, login, handoff }) => {
  const { handoffId } = await seedRefundApproval(250);
  await page.goto(`/console/handoffs/${handoffId}`);
  await expect(page).toHaveURL(/\/login\?callbackUrl=/);
  await login.signIn("rita");
  await expect(page).toHaveURL(new RegExp(`/console/handoffs/${handoffId}$`));
  await expect(handoff.title).toHaveText(/^Refund \$250\.00 on A-\d+$/);
});

test("another shop's handoff, conversation and run are not found", async ({ page, as }) => {
  const { handoffId, conversationId, runId } = await seedRefundApproval(250);
  await as("gus");
  await expect(page.getByTestId("signed-in-shop")).toHaveText("Globex Corp");

  for (const url of [`/console/handoffs/${handoffId}`, `/console/conversations/${conversationId}`]) {
    const res = await page.goto(url);
    expect(res?.status(), url).toBe(404);
    await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
    await expect(page.getByText("Refund $250.00")).toHaveCount(0);
  }
  // The JSON routes say the same: not found, never "forbidden" (which would confirm the id exists).
  for (const url of [`/api/console/handoffs/${handoffId}`, `/api/console/conversations/${conversationId}`]) {
    const res = await page.request.get(url);
    expect(res.status(), url).toBe(404);
    expect(await res.json()).toEqual({ ok: false, error: { code: "NOT_FOUND", message: expect.any(String) } });
  }
  // Gus's queue never shows acme's work.
  await page.goto("/console?status=all");
  await expect(page.locator(`[data-handoff-id="${handoffId}"]`)).toHaveCount(0);
  // Runs are for supervisors: a reviewer is refused before tenancy even matters.
  expect((await page.request.get(`/api/console/runs/${runId}`)).status()).toBe(403);
});

test("supervisors see runs; reviewers are refused", async ({ page, as }) => {
  const { runId } = await seedRefundApproval(250);
  await as("rita");
  await page.goto("/console/runs");
  await expect(page.getByRole("heading", { name: "Supervisors and admins only" })).toBeVisible();
  await page.goto(`/console/runs/${runId}`);
  await expect(page.getByRole("heading", { name: "Supervisors and admins only" })).toBeVisible();
  const refused = await page.request.get(`/api/console/runs/${runId}`);
  expect(refused.status()).toBe(403);
  expect((await refused.json()).error.code).toBe("FORBIDDEN");

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login/);
  await as("sol");
  await page.getByRole("link", { name: "Runs" }).click();
  await expect(page.getByRole("heading", { name: "Runs", level: 1 })).toBeVisible();
  await page.goto(`/console/runs/${runId}`);
  await expect(page.getByRole("heading", { name: /Messages as the model saw them/ })).toBeVisible();
  await expect(page.getByText("WAITING_FOR_APPROVAL").first()).toBeVisible();
  await expect(page.getByText("refund_order").first()).toBeVisible();
  const exported = await page.request.get(`/api/console/runs/${runId}`);
  expect(exported.status()).toBe(200);
  expect((await exported.json()).data.run.id).toBe(runId);
});

test("anonymous requests to every console route and server action are refused", async ({ page, as, baseURL }) => {
  const anon = await anonymousRequest(baseURL!);
  // Route handlers, without cookies.
  for (const url of [
    "/api/console/events?cursor=0",
    "/api/console/queue",
    "/api/console/handoffs/x",
    "/api/console/conversations/x",
    "/api/console/runs/x",
  ]) {
    const res = await anon.get(url);
    expect(res.status(), url).toBe(401);
    expect(await res.json(), url).toEqual({ ok: false, error: { code: "UNAUTHENTICATED", message: "Sign in to continue." } });
  }
  // Pages send anonymous visitors to sign in.
  for (const path of ["/console", "/console/runs", "/console/handoffs/x", "/console/conversations/x"]) {
    const res = await anon.get(path, { maxRedirects: 0 });
    expect(res.status(), path).toBe(307);
    expect(res.headers()["location"], path).toMatch(/^\/login\?callbackUrl=/);
  }

  // Server actions: perform each once signed in (capturing the exact requests), then send each again
  // with no cookies. Every one answers UNAUTHENTICATED, and nothing happened twice.
  const approval = await seedRefundApproval(250);
  const escalation = await seedEscalation();
  await as("raj");
  const captured = await performEveryConsoleAction(page, { handoffId: approval.handoffId, conversationId: escalation.conversationId });
  const messagesBefore = await page.request.get(`/api/console/conversations/${escalation.conversationId}`).then((r) => r.json());
  for (const action of captured) {
    const { text } = await replayAction(anon, action);
    expect(text, `anonymous replay of ${action.body.slice(0, 80)}`).toContain('"code":"UNAUTHENTICATED"');
  }
  const messagesAfter = await page.request.get(`/api/console/conversations/${escalation.conversationId}`).then((r) => r.json());
  expect(messagesAfter.data.view.messages).toHaveLength(messagesBefore.data.view.messages.length);
  await anon.dispose();
});

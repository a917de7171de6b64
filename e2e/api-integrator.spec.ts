import { randomBytes } from "node:crypto";
import type { APIRequestContext } from "@playwright/test";
import { agentCli, effectsOfRun, expect, HandoffPage, seedRefundApproval, test } from "./fixtures/console";

// An integrator of the shop, with a token the operator created, decides a parked refund over HTTP (the JSON API),
// exactly as a reviewer would in the console: the run continues, one effect, and the console shows who decided.
// An admin manages tokens in Settings → API tokens: shown once, revoked at once.

interface ApiHandoff {
  id: string;
  status: string;
  version: number;
  runId: string;
  amountCents: number;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function pendingApprovals(request: APIRequestContext, token: string): Promise<ApiHandoff[]> {
  const out: ApiHandoff[] = [];
  let cursor: string | null = null;
  do {
    const res = await request.get(`/api/v1/handoffs?status=PENDING&kind=APPROVAL&limit=100${cursor ? `&cursor=${cursor}` : ""}`, {
      headers: bearer(token),
    });
    expect(res.status()).toBe(200);
    const body = (await res.json()) as { data: ApiHandoff[]; nextCursor: string | null };
    out.push(...body.data);
    cursor = body.nextCursor;
  } while (cursor);
  return out;
}

test("an integrator's token decides a parked refund over HTTP; the run continues once and the console shows the outcome", async ({
  request,
  as,
  page,
}) => {
  const created = agentCli<{ token: string; id: string; scopes: string[] }>(
    "token",
    "create",
    "--tenant",
    "acme",
    "--name",
    `helpdesk ${randomBytes(3).toString("hex")}`,
  );
  expect(created.token).toMatch(/^sa_live_/);
  expect(created.scopes).toContain("handoffs:decide");
  const seeded = await seedRefundApproval(250);

  // Refusals first: no token, a stale version. Nothing happens.
  const anonymous = await request.get("/api/v1/handoffs");
  expect(anonymous.status()).toBe(401);
  expect((await anonymous.json()).error.code).toBe("UNAUTHENTICATED");

  const listed = (await pendingApprovals(request, created.token)).find((h) => h.id === seeded.handoffId);
  expect(listed).toMatchObject({ status: "PENDING", amountCents: 25000, runId: seeded.runId });
  const decisionUrl = `/api/v1/handoffs/${seeded.handoffId}/decision`;
  const stale = await request.post(decisionUrl, {
    headers: bearer(created.token),
    data: { decision: "approve", version: listed!.version + 1, actor: "raj@acme.test" },
  });
  expect(stale.status()).toBe(409);
  expect((await stale.json()).error).toMatchObject({ code: "STALE_VERSION", details: { currentVersion: listed!.version } });
  const outsider = await request.post(decisionUrl, {
    headers: bearer(created.token),
    data: { decision: "approve", version: listed!.version, actor: "gus@globex.test" },
  });
  expect(outsider.status()).toBe(403); // another shop's reviewer cannot act through acme's token
  expect(await effectsOfRun(seeded.runId)).toHaveLength(0);

  // The decision, as Raj.
  const decided = await request.post(decisionUrl, {
    headers: bearer(created.token),
    data: { decision: "approve", version: listed!.version, actor: "raj@acme.test" },
  });
  expect(decided.status()).toBe(200);
  const body = await decided.json();
  expect(body).toMatchObject({
    outcome: "approved",
    resumeFailed: false,
    handoff: { id: seeded.handoffId, status: "APPROVED", decidedBy: { name: "Raj" } },
    run: { id: seeded.runId },
  });
  expect(body.run.phase).not.toBe("WAITING_FOR_APPROVAL");
  expect(decided.headers()["ratelimit-limit"]).toBeTruthy();

  // Sent again (a retry after a timeout): refused, still one effect.
  const again = await request.post(decisionUrl, {
    headers: bearer(created.token),
    data: { decision: "approve", version: listed!.version, actor: "raj@acme.test" },
  });
  expect(again.status()).toBe(409);
  expect((await again.json()).error.code).toBe("ALREADY_DECIDED");
  await expect.poll(async () => (await effectsOfRun(seeded.runId)).length).toBe(1);

  // The run, over the API: the refund ran, approved by a person.
  const run = await request.get(`/api/v1/runs/${seeded.runId}`, { headers: bearer(created.token) });
  expect(run.status()).toBe(200);
  const detail = await run.json();
  expect(detail.toolCalls.find((c: { name: string }) => c.name === "refund_order")).toMatchObject({
    status: "SUCCEEDED",
    review: { decision: "approved", by: "Raj" },
  });

  // And in the console: the handoff is approved, by Raj.
  await as("sol");
  const handoff = new HandoffPage(page);
  await handoff.goto(seeded.handoffId);
  await expect(handoff.status).toContainText(/approved/i);
  await expect(page.getByText(/Raj/).first()).toBeVisible();
});

test("an admin creates a token in Settings (shown once), it works, and once revoked it is refused; reviewers are refused the page", async ({
  request,
  as,
  page,
  browser,
  baseURL,
}) => {
  await as("ada");
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Settings" }).click();
  await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "API tokens" }).click();
  await expect(page.getByRole("heading", { name: "API tokens", level: 1 })).toBeVisible();
  const name = `Reporting ${randomBytes(3).toString("hex")}`;
  await page.getByLabel("Name").fill(name);
  await page.getByRole("checkbox", { name: /handoffs:decide/ }).uncheck();
  await page.getByRole("button", { name: "Create token" }).click();
  const value = page.getByTestId("new-api-token-value");
  await expect(value).toHaveValue(/^sa_live_/);
  const token = await value.inputValue();
  // Copy puts the token itself on the clipboard, and says so.
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseURL });
  await page.getByTestId("new-api-token").getByRole("button", { name: "Copy" }).click();
  await expect(page.getByTestId("new-api-token").getByText("Copied")).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
  const row = page.getByTestId("api-token-row").filter({ hasText: name });
  await expect(row).toContainText(token.slice(0, 16));
  await expect(row).not.toContainText(token);
  await expect(row).not.toContainText("handoffs:decide");
  await expect(row.getByTestId("api-token-last-used")).toHaveText("never");

  // It works for what it was given, and only that.
  expect((await request.get("/api/v1/conversations", { headers: bearer(token) })).status()).toBe(200);
  const decide = await request.post("/api/v1/handoffs/anything/decision", {
    headers: bearer(token),
    data: { decision: "approve", version: 1, actor: "ada@acme.test" },
  });
  expect(decide.status()).toBe(403);
  expect((await decide.json()).error).toMatchObject({ code: "FORBIDDEN", details: { requiredScope: "handoffs:decide" } });

  // Shown once: after a reload, only its first characters; its last use is recorded.
  await page.getByRole("button", { name: "Done" }).click();
  await page.reload();
  await expect(page.getByTestId("new-api-token")).toHaveCount(0);
  await expect(page.locator("body")).not.toContainText(token);
  await expect(row.getByTestId("api-token-last-used")).not.toHaveText("never");

  // Revoke, confirming first.
  await row.getByRole("button", { name: "Revoke…" }).click();
  await row
    .getByRole("group", { name: `Confirm revoking ${name}` })
    .getByRole("button", { name: "Revoke token" })
    .click();
  await expect(row.getByTestId("api-token-state")).toContainText("revoked");
  const refused = await request.get("/api/v1/conversations", { headers: bearer(token) });
  expect(refused.status()).toBe(401);
  expect((await refused.json()).error.code).toBe("UNAUTHENTICATED");

  // A reviewer is refused the page (the data layer decides, not a hidden link).
  const rita = await browser.newContext({ baseURL });
  const ritaPage = await rita.newPage();
  await ritaPage.goto("/login");
  await ritaPage.getByLabel("Email").fill("rita@acme.test");
  await ritaPage.getByLabel("Password").fill("demo-password");
  await ritaPage.getByRole("button", { name: "Sign in" }).click();
  await expect(ritaPage).toHaveURL(/\/console/);
  await expect(ritaPage.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Settings" })).toHaveCount(0);
  await ritaPage.goto("/console/settings/api-tokens");
  await expect(ritaPage.getByRole("heading", { name: "Admins only" })).toBeVisible();
  await expect(ritaPage.getByTestId("api-token-row")).toHaveCount(0);
  await rita.close();
});

test("the OpenAPI document is served and the reference page renders it, with a curl example per endpoint", async ({ request, page }) => {
  const doc = await (await request.get("/api/v1/openapi.json")).json();
  expect(doc.openapi).toBe("3.1.0");
  const operations = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((p) => Object.values(p));
  await page.goto("/docs/api");
  await expect(page.getByRole("heading", { name: doc.info.title, level: 1 })).toBeVisible();
  for (const op of operations) await expect(page.getByTestId(`curl-${op.operationId}`)).toContainText("curl -sS");
  await expect(page.getByTestId("curl-decideHandoff")).toContainText('"decision":"approve"');
  await expect(page.locator("#error-STALE_VERSION")).toContainText("409");
});

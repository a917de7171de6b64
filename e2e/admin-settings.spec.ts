import { randomBytes, randomInt } from "node:crypto";
import bcrypt from "bcryptjs";
import pg from "pg";
import { DEMO_POLICY_RULES } from "../lib/setup/seed";
import { ensureDatabaseUrl, stopEmbeddedIfOwner } from "../lib/db/server";
import { agentCli, expect, HandoffPage, PASSWORD, test } from "./fixtures/console";

// An admin changes the refund band after looking at the what-if, and publishes. A conversation started afterwards
// parks under the new version, while a handoff opened before keeps its original one. The spec brings its own shop
// (so the demo shop's policy, which other specs rely on, never changes): an admin, a customer, three orders.

const tag = randomBytes(4).toString("hex");
const SHOP = `settings-${tag}`;
const ADMIN = { email: `admin.${tag}@settings.test`, name: "Ines" };
const CUSTOMER = `kim.${tag}@example.com`;
const ORDERS = {
  small: `S-${randomInt(100_000, 999_999)}`,
  large: `S-${randomInt(100_000, 999_999)}`,
  later: `S-${randomInt(100_000, 999_999)}`,
};

async function withDb<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: await ensureDatabaseUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
    await stopEmbeddedIfOwner();
  }
}

test.beforeAll(async () => {
  const hash = await bcrypt.hash(PASSWORD, 10);
  await withDb(async (c) => {
    const tenantId = `e2eten${tag}`;
    await c.query(`INSERT INTO "Tenant" (id, slug, name, "widgetSecret", "policyVersion") VALUES ($1, $2, 'Settings Outfitters', $3, 1)`, [
      tenantId,
      SHOP,
      `secret-${tag}`,
    ]);
    await c.query(`INSERT INTO "PolicyVersion" (id, "tenantId", version, rules) VALUES ($1, $2, 1, $3)`, [
      `e2epol${tag}`,
      tenantId,
      JSON.stringify(DEMO_POLICY_RULES),
    ]);
    await c.query(`INSERT INTO "StaffUser" (id, "tenantId", email, name, "passwordHash", role) VALUES ($1, $2, $3, $4, $5, 'admin')`, [
      `e2esta${tag}`,
      tenantId,
      ADMIN.email,
      ADMIN.name,
      hash,
    ]);
    await c.query(`INSERT INTO "Customer" (id, "tenantId", email, name) VALUES ($1, $2, $3, 'Kim Park')`, [
      `e2ecus${tag}`,
      tenantId,
      CUSTOMER,
    ]);
    for (const [i, [number, cents]] of (
      [
        [ORDERS.small, 9000],
        [ORDERS.large, 25000],
        [ORDERS.later, 9500],
      ] as const
    ).entries()) {
      await c.query(
        `INSERT INTO "Order" (id, "tenantId", "customerId", number, "totalCents", status, note, "shippingAddress", "placedAt")
         VALUES ($1, $2, $3, $4, $5, 'delivered', 'arrived damaged', $6, now() - interval '10 days')`,
        [
          `e2eord${tag}${i}`,
          tenantId,
          `e2ecus${tag}`,
          number,
          cents,
          JSON.stringify({ line1: "1 Main St", city: "Portland", postalCode: "97204", country: "US" }),
        ],
      );
      await c.query(`INSERT INTO "Shipment" (id, "orderId", carrier, tracking, status) VALUES ($1, $2, 'UPS', $3, 'delivered')`, [
        `e2eshp${tag}${i}`,
        `e2eord${tag}${i}`,
        `1ZSET${tag}${i}`,
      ]);
    }
  });
});

interface Said {
  conversationId: string;
  runId: string | null;
  phase: string | null;
}

function customerSays(text: string): Said {
  return agentCli<Said>("say", "--tenant", SHOP, "--customer", CUSTOMER, text);
}

/** The pending approval of a conversation, once its run has parked (a worker may advance it instead of the CLI). */
async function pendingApproval(conversationId: string): Promise<{ id: string; runId: string }> {
  let found: { id: string; runId: string } | undefined;
  await expect
    .poll(
      async () => {
        found = await withDb(
          async (c) =>
            (
              await c.query(
                `SELECT h.id, h."runId" FROM "Handoff" h JOIN "Run" r ON r.id = h."runId"
                 WHERE h."conversationId" = $1 AND h.kind = 'APPROVAL' AND h.status = 'PENDING' AND r.phase = 'WAITING_FOR_APPROVAL'`,
                [conversationId],
              )
            ).rows[0],
        );
        return Boolean(found);
      },
      { message: `a parked approval in conversation ${conversationId}`, timeout: 30_000 },
    )
    .toBe(true);
  return found!;
}

test("an admin lowers the automatic refund limit after the what-if; new runs park under the new version, an older handoff keeps its own", async ({
  page,
}) => {
  test.setTimeout(180_000);
  // History under v1: a $90 refund ran by itself; a $250 one waits for a person.
  const automatic = customerSays(`my order ${ORDERS.small} arrived damaged, please refund it`);
  await expect
    .poll(() => withDb(async (c) => (await c.query(`SELECT phase::text FROM "Run" WHERE id = $1`, [automatic.runId])).rows[0]?.phase))
    .toBe("COMPLETED");
  const before = await pendingApproval(customerSays(`my order ${ORDERS.large} arrived damaged, please refund it`).conversationId);

  await page.goto("/login");
  await page.getByLabel("Email").fill(ADMIN.email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/console/);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Settings" }).click();
  await expect(page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Policy" })).toHaveAttribute(
    "aria-current",
    "page",
  );
  await expect(page.getByTestId("policy-current")).toContainText("Version 1 is in force");

  // Publishing waits for a preview of the exact draft; a broken band is refused inline.
  const autoLimit = page.getByLabel("Refunds run automatically up to ($)");
  const publish = page.getByRole("button", { name: "Publish version 2" });
  await autoLimit.fill("450");
  await expect(page.locator("#policy-refund-twoApproversFromCents-error")).toHaveText("Must be at least the automatic limit ($450.00).");
  await expect(publish).toBeDisabled();
  await autoLimit.fill("80.00");
  await expect(page.getByTestId("policy-draft-changes")).toContainText("Refunds run automatically up to: $100.00 → $80.00");
  await expect(publish).toBeDisabled();
  await expect(page.locator("#publish-hint")).toContainText("Preview the changes first");

  await page.getByRole("button", { name: "Preview changes" }).click();
  const whatIf = page.getByTestId("what-if");
  await expect(whatIf.getByTestId("what-if-scope")).toContainText("of the last 28 days");
  const automaticRow = whatIf.getByTestId("what-if-automatic");
  const approvalRow = whatIf.getByTestId("what-if-approval");
  await expect(automaticRow.getByTestId("before")).toContainText("$90.00");
  await expect(automaticRow.getByTestId("after")).toContainText("$0.00");
  await expect(approvalRow.getByTestId("before")).toHaveText("1 · $250.00");
  await expect(approvalRow.getByTestId("after")).toHaveText("2 · $340.00");
  await expect(whatIf.getByTestId("what-if-moves")).toHaveText("1 call ($90.00): runs automatically → needs approval");
  const changed = whatIf.getByTestId("what-if-call");
  await expect(changed).toHaveCount(1);
  await expect(changed.getByRole("link")).toHaveAttribute("href", `/console/runs/${automatic.runId}`);
  await expect(changed).toContainText(
    `A person's approval is needed: a refund of $90.00 on ${ORDERS.small} is over the automatic limit of $80.00.`,
  );

  await expect(publish).toBeEnabled();
  await publish.click();
  await expect(page.getByTestId("policy-published")).toContainText("Published version 2");
  await expect(page.getByTestId("policy-current")).toContainText(`Version 2 is in force — published by ${ADMIN.name}`);
  await expect(page.locator('[data-testid="policy-version"][data-version="2"]')).toContainText(
    "Refunds run automatically up to: $100.00 → $80.00",
  );
  await expect(page.getByLabel("Refunds run automatically up to ($)")).toHaveValue("80.00");

  // A conversation started now: $95 no longer runs by itself, it parks under version 2.
  const after = await pendingApproval(customerSays(`my order ${ORDERS.later} arrived damaged, please refund it`).conversationId);
  const handoff = new HandoffPage(page);
  await handoff.goto(after.id);
  await expect(page.getByTestId("call-rule")).toHaveText(
    `Refund policy (refund_policy) — A person's approval is needed: a refund of $95.00 on ${ORDERS.later} is over the automatic limit of $80.00. (policy v2)`,
  );
  // The handoff opened before keeps the version it was made under.
  await handoff.goto(before.id);
  await expect(page.getByTestId("call-rule")).toHaveText(
    `Refund policy (refund_policy) — A person's approval is needed: a refund of $250.00 on ${ORDERS.large} is over the automatic limit of $100.00. (policy v1)`,
  );

  // A what-if's call links to the run it replayed.
  await page.goto("/console/settings/policy");
  await page.getByLabel("Refunds run automatically up to ($)").fill("60");
  await page.getByRole("button", { name: "Preview changes" }).click();
  await page.getByTestId("what-if-call").getByRole("link").click();
  await expect(page).toHaveURL(new RegExp(`/console/runs/${automatic.runId}$`));
});

async function signIn(page: import("@playwright/test").Page, email: string, password = PASSWORD) {
  await page.goto("/login");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

test("an admin invites a person, who sets a password from the mailed link; deactivated, their session stops at once", async ({
  page,
  browser,
  baseURL,
}) => {
  const invitee = { name: "Theo", email: `theo.${tag}@settings.test`, password: "a long enough password" };
  await signIn(page, ADMIN.email);
  await expect(page).toHaveURL(/\/console/);
  await page.goto("/console/settings/staff");
  const invite = page.getByRole("form", { name: "Invite a person" });
  await invite.getByLabel("Name").fill(invitee.name);
  await invite.getByLabel("Email").fill(invitee.email);
  await invite.getByLabel("Approves up to ($)").fill("150");
  await invite.getByRole("button", { name: "Invite" }).click();
  // No mail server here: the admin is told where the link is, and the list says it beside the person.
  await expect(page.getByTestId("staff-outcome")).toHaveText(
    "Invited Theo: no mail server is set up, so the link is in the demo mailbox (admins only).",
  );
  const row = page.locator(`[data-testid="staff-row"][data-email="${invitee.email}"]`);
  await expect(row.getByTestId("staff-status")).toContainText("invited");
  await expect(row.getByTestId("invite-mail")).toHaveText("· link in the demo mailbox");
  // A new link (the first stops working): said the same way; the newest mail below carries it.
  await row.getByRole("button", { name: "Send a new link" }).click();
  await expect(page.getByTestId("staff-outcome")).toHaveText(
    "A new link for Theo: no mail server is set up, so the link is in the demo mailbox (admins only).",
  );

  // No mail server here: the link waits in the demo mailbox, for admins.
  await page.goto("/console/mailbox");
  const mail = page.getByTestId("demo-mail").filter({ hasText: invitee.email }).first();
  const link = (await mail.getByTestId("demo-mail-text").innerText()).match(/https?:\/\/\S+\/console\/invite\/[\w-]+/)?.[0];
  expect(link, "the invitation mail carries the link").toBeTruthy();

  const theirs = await browser.newContext({ baseURL });
  const them = await theirs.newPage();
  await them.goto(new URL(link!).pathname);
  await expect(them.getByRole("heading", { name: "Welcome, Theo" })).toBeVisible();
  await them.getByLabel("New password").fill(invitee.password);
  await them.getByLabel("The same password again").fill(invitee.password);
  await them.getByRole("button", { name: "Set password" }).click();
  await expect(them.getByTestId("invite-done")).toContainText("Your password is set.");
  await them.goto(new URL(link!).pathname);
  await expect(them.getByTestId("invite-state")).toHaveText("This link was already used. Sign in with the password you set.");
  await signIn(them, invitee.email, invitee.password);
  await expect(them.getByRole("heading", { name: "Queue", level: 1 })).toBeVisible();
  await expect(them.getByTestId("signed-in-as")).toContainText("approves up to $150.00");

  await page.goto("/console/settings/staff");
  await expect(row.getByTestId("staff-status")).toContainText("active");
  page.once("dialog", (d) => void d.accept());
  await row.getByRole("button", { name: "Deactivate" }).click();
  await expect(page.getByTestId("staff-outcome")).toHaveText("Theo is deactivated: signed out, and cannot sign in.");
  await expect(row.getByTestId("staff-status")).toContainText("deactivated");

  // Their open session is refused at the next request, and signing in again fails.
  await them.goto("/console");
  await expect(them).toHaveURL(/\/login/);
  await signIn(them, invitee.email, invitee.password);
  await expect(them.locator("#login-error")).toHaveText("Wrong email or password.");
  await theirs.close();
});

test("reviewers and supervisors get no settings", async ({ as, page }) => {
  for (const who of ["rita", "sol"] as const) {
    await as(who);
    await expect(page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Settings" })).toHaveCount(0);
    for (const path of ["policy", "staff", "widget"]) {
      await page.goto(`/console/settings/${path}`);
      await expect(page.getByRole("heading", { name: "Admins only" })).toBeVisible();
    }
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page).toHaveURL(/\/login/);
  }
});

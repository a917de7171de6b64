import { randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import type { IncomingHttpHeaders } from "node:http";
import { Webhook } from "standardwebhooks";
import { agentCli, expect, seedRefundApproval, test } from "./fixtures/console";

// An admin points a webhook endpoint at the integrator's receiver (started here, on localhost); the integrator's
// token decides a parked refund over the JSON API; the `handoff.decided` webhook arrives signed (checked with the
// standardwebhooks library), the admin sees it in the endpoint's delivery log, and the decision in Settings → Audit.

/** A receiver on an ephemeral port: prints {"port"} once, then each request as one JSON line; answers 204. */
const RECEIVER = `
const server = require("node:http").createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    process.stdout.write(JSON.stringify({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") }) + "\\n");
    res.statusCode = 204;
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(JSON.stringify({ port: server.address().port }) + "\\n"));
`;

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

test("an integrator's decision over the API arrives as a signed webhook, in the delivery log and in the audit trail", async ({
  as,
  page,
  request,
}) => {
  test.slow(); // several CLI processes and a whole decision round trip
  // The receiver runs in a process of its own: the CLI calls below block this one while they run, and a receiver
  // that cannot answer would only show retries here.
  const receiver = spawn(process.execPath, ["-e", RECEIVER], { stdio: ["ignore", "pipe", "inherit"] });
  const received: Received[] = [];
  let port = 0;
  let buffered = "";
  receiver.stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      const line = JSON.parse(buffered.slice(0, nl)) as { port?: number } & Received;
      buffered = buffered.slice(nl + 1);
      if (line.port) port = line.port;
      else received.push({ headers: line.headers, body: line.body });
    }
  });
  await expect.poll(() => port, { message: "the receiver listens" }).toBeGreaterThan(0);
  const receiverUrl = `http://127.0.0.1:${port}/support-hooks`;

  try {
    // The admin adds the endpoint; its signing secret is shown this once.
    await as("ada");
    await page.goto("/console/settings/webhooks");
    await expect(page.getByRole("heading", { name: "Webhooks", level: 1 })).toBeVisible();
    await page.getByLabel("Endpoint URL").fill(receiverUrl);
    await page.getByLabel("Description (optional)").fill("Helpdesk");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secretField = page.getByTestId("new-webhook-secret-value");
    await expect(secretField).toHaveValue(/^whsec_/);
    const secret = await secretField.inputValue();
    await page.getByRole("button", { name: "Done" }).click();
    await expect(page.getByTestId("new-webhook-secret")).toHaveCount(0);
    await expect(page.getByText(secret)).toHaveCount(0); // never shown again
    const endpointRow = page.getByTestId("webhook-endpoint").filter({ hasText: receiverUrl });
    await expect(endpointRow).toContainText("enabled");

    // The integrator decides a parked refund with its token, as Raj.
    const { token } = agentCli<{ token: string }>(
      "token",
      "create",
      "--tenant",
      "acme",
      "--name",
      `helpdesk ${randomBytes(3).toString("hex")}`,
    );
    const seeded = await seedRefundApproval(250);
    const listed = await request.get(`/api/v1/handoffs/${seeded.handoffId}`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status()).toBe(200);
    const { version } = (await listed.json()) as { version: number };
    const decided = await request.post(`/api/v1/handoffs/${seeded.handoffId}/decision`, {
      headers: { authorization: `Bearer ${token}` },
      data: { decision: "approve", version, actor: "raj@acme.test" },
    });
    expect(decided.status()).toBe(200);

    // The webhook arrives, signed: the library verifies it with the endpoint's secret, and refuses another secret.
    const decidedHook = () =>
      received.find((r) => {
        const body = JSON.parse(r.body) as { type: string; data: { handoffId?: string } };
        return body.type === "handoff.decided" && body.data.handoffId === seeded.handoffId;
      });
    await expect.poll(() => decidedHook() !== undefined, { message: "the handoff.decided webhook arrives", timeout: 30_000 }).toBe(true);
    const hook = decidedHook()!;
    const headers = {
      "webhook-id": String(hook.headers["webhook-id"]),
      "webhook-timestamp": String(hook.headers["webhook-timestamp"]),
      "webhook-signature": String(hook.headers["webhook-signature"]),
    };
    expect(new Webhook(secret).verify(hook.body, headers)).toMatchObject({
      type: "handoff.decided",
      data: { handoffId: seeded.handoffId, status: "APPROVED", decidedBy: "raj@acme.test" },
    });
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`).verify(hook.body, headers)).toThrow();
    // The handoff's creation came first, to the same endpoint.
    const types = received.map((r) => JSON.parse(r.body) as { type: string; data: { handoffId?: string } });
    const createdAt = types.findIndex((b) => b.type === "handoff.created" && b.data.handoffId === seeded.handoffId);
    const decidedAt = types.findIndex((b) => b.type === "handoff.decided" && b.data.handoffId === seeded.handoffId);
    expect(createdAt).toBeGreaterThanOrEqual(0);
    expect(createdAt).toBeLessThan(decidedAt);

    // The admin sees the delivery, with its attempt, in the endpoint's log.
    await page.reload();
    await endpointRow.getByRole("link", { name: "Delivery log" }).click();
    await expect(page.getByRole("heading", { name: "Delivery log" })).toBeVisible();
    const delivery = page.getByTestId("webhook-delivery").filter({ has: page.getByText(headers["webhook-id"], { exact: true }) });
    await expect(delivery).toContainText("handoff.decided");
    await expect(delivery).toContainText("delivered");
    await expect(delivery.getByTestId("webhook-attempt")).toHaveCount(1);
    await expect(delivery.getByTestId("webhook-attempt")).toContainText("HTTP 204");

    // And the decision is in Settings → Audit, sealed into the chain.
    await page.goto("/console/settings/audit");
    await page.getByLabel("Kind").selectOption("handoff.approved");
    await page.getByLabel("Actor").fill("raj@acme.test");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect(page).toHaveURL(/kind=handoff\.approved/);
    const record = page.getByTestId("audit-record").filter({ hasText: seeded.handoffId });
    await expect(record).toHaveCount(1);
    await expect(record).toContainText("raj@acme.test");
    await expect
      .poll(
        async () => {
          await page.reload();
          return (await record.textContent()) ?? "";
        },
        { message: "the record is sealed into the chain" },
      )
      .toMatch(/#\d+ [0-9a-f]{10}/);

    // Tidy up: the endpoint goes, so later specs' events are not queued for a receiver that is gone.
    await page.goto("/console/settings/webhooks");
    await endpointRow.getByRole("button", { name: "Delete…" }).click();
    await endpointRow.getByRole("button", { name: "Delete endpoint" }).click();
    await expect(page.getByTestId("webhook-endpoint").filter({ hasText: receiverUrl })).toHaveCount(0);
  } finally {
    receiver.kill();
  }
});

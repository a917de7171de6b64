// A mail server that hangs, while a worker sends the mail a stopped process left queued: the worker's other
// after-commit work (sealing audit records) goes on meanwhile. Alone in its file: a process sweeps for such mail every
// 30 s at most, and this test needs the loop's first pass to sweep.
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { stopListeners } from "@/lib/db/listener";
import { STRANDED_AFTER_MS } from "@/lib/mail/send";
import { runAfterCommitLoop } from "@/lib/runtime/after-commit";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { createWebhookEndpoint } from "@/lib/settings/webhooks";
import { createTestDatabase, type TestDatabase } from "./db";
import { savedEnv } from "./saved-env";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let tdb: TestDatabase;
const mailEnv = savedEnv("SMTP_URL", "MAIL_FROM");
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  mailEnv.restore();
  await tdb.drop();
});

it("a mail server that never answers holds up no audit sealing while a worker sends mail left queued", async () => {
  // Accepts the connection and never greets: the sender waits for its greeting timeout (10 s).
  const sockets: Socket[] = [];
  const hung = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
  process.env.SMTP_URL = `smtp://mailer:s3cret@127.0.0.1:${(hung.address() as AddressInfo).port}`;
  process.env.MAIL_FROM = "Acme Support <support@acme.test>";

  const acme = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const ada = await tdb.prisma.staffUser.findFirstOrThrow({ where: { email: "ada@acme.test" } });
  const left = await tdb.prisma.mailOutbox.create({
    data: {
      tenantId: acme.id,
      to: "dana@example.com",
      subject: "Your Acme Outfitters verification code",
      text: "Your code for Acme Outfitters support is 123456.",
      status: "queued",
      createdAt: new Date(Date.now() - STRANDED_AFTER_MS - 5_000),
    },
  });
  const deps = { db: tdb.prisma, databaseUrl: tdb.url, workerId: "mail-sweeper" } as unknown as RuntimeDeps;
  const stop = new AbortController();
  const loop = runAfterCommitLoop(deps, { signal: stop.signal, intervalMs: 100 });
  try {
    const deadline = Date.now() + 5_000;
    while (sockets.length === 0) {
      if (Date.now() > deadline) throw new Error("the worker never tried to send the mail left queued");
      await sleep(25);
    }
    const hangingSince = Date.now();
    // A setting changes (an audit record); the worker seals it while the mail server still has not answered.
    await createWebhookEndpoint(
      tdb.prisma,
      { tenantId: acme.id, staffId: ada.id },
      { url: "https://hooks.example.com/x", eventTypes: ["run.completed"] },
    );
    const unsealed = () => tdb.prisma.auditEvent.count({ where: { tenantId: acme.id, seq: null } });
    while ((await unsealed()) > 0 && Date.now() - hangingSince < 8_000) await sleep(50);
    expect(await unsealed()).toBe(0);
    expect(Date.now() - hangingSince).toBeLessThan(8_000); // inside the sender's 10 s wait for a greeting
    expect((await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: left.id } })).status).toBe("queued");
  } finally {
    stop.abort();
    for (const s of sockets) s.destroy(); // the mail server goes away: the send in flight fails, and is recorded
    await loop; // a stop waits for it
    hung.close();
    await stopListeners();
  }
  expect(await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: left.id } })).toMatchObject({ status: "failed" });
}, 60_000);

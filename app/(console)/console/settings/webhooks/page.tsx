import type { Metadata } from "next";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { listWebhookEndpoints, WEBHOOK_EVENT_DESCRIPTIONS } from "@/lib/settings/webhooks";
import { AdminsOnly } from "../admins-only";
import { WebhooksView } from "./webhooks-view";

export const metadata: Metadata = { title: "Webhooks · Settings · Support console" };
export const dynamic = "force-dynamic";

/** Where the shop's events go: endpoints (secret shown once), enable/disable, delete, a test event, the delivery log. */
export default async function WebhooksPage() {
  const staff = await requireStaffPage("/console/settings/webhooks");
  let endpoints: Awaited<ReturnType<typeof listWebhookEndpoints>>;
  try {
    endpoints = await listWebhookEndpoints(await getPrisma(), staff);
  } catch (err) {
    if (err instanceof AppError && err.code === "FORBIDDEN") return <AdminsOnly />;
    throw err;
  }
  return (
    <div className="space-y-4">
      <div>
        <h1 className="text-xl font-semibold">Webhooks</h1>
        <p className="text-sm text-slate-600">
          {staff.tenantName} posts these events to your endpoints, signed with the Standard Webhooks scheme (headers <code>webhook-id</code>
          , <code>webhook-timestamp</code>, <code>webhook-signature</code>). Failed deliveries are retried with growing delays;{" "}
          <code>webhook-id</code> stays the same on every retry, so de-duplicate on it.
        </p>
      </div>
      <WebhooksView initialEndpoints={endpoints} eventDescriptions={WEBHOOK_EVENT_DESCRIPTIONS} />
    </div>
  );
}

"use server";
// Server actions of Settings → Webhooks: admins only (the chain refuses other roles, and lib/settings/webhooks checks
// again in the data layer).
import { z } from "zod";
import type { StaffRole } from "@/lib/auth/claims";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookEndpoints,
  sendTestWebhook,
  setWebhookEndpointEnabled,
} from "@/lib/settings/webhooks";
import { staffAction } from "./safe-action";

const ADMINS: readonly StaffRole[] = ["admin"];
const endpointId = z.string().trim().min(1).max(64);

/** Adds an endpoint; the answer carries its signing secret this once, with the shop's endpoints as they are now. */
export const createWebhookEndpointAction = staffAction(
  {
    name: "createWebhookEndpoint",
    roles: ADMINS,
    input: z.object({ url: z.string().max(2100), description: z.string().max(500).optional(), eventTypes: z.array(z.string()).max(20) }),
  },
  async (input, ctx) => {
    const created = await createWebhookEndpoint(ctx.db, ctx, input);
    return { secret: created.secret, created: created.endpoint, endpoints: await listWebhookEndpoints(ctx.db, ctx) };
  },
);

export const setWebhookEndpointEnabledAction = staffAction(
  { name: "setWebhookEndpointEnabled", roles: ADMINS, input: z.object({ endpointId, enabled: z.boolean() }) },
  async ({ endpointId: id, enabled }, ctx) => {
    await setWebhookEndpointEnabled(ctx.db, ctx, id, enabled);
    return { endpoints: await listWebhookEndpoints(ctx.db, ctx) };
  },
);

export const deleteWebhookEndpointAction = staffAction(
  { name: "deleteWebhookEndpoint", roles: ADMINS, input: z.object({ endpointId }) },
  async ({ endpointId: id }, ctx) => {
    await deleteWebhookEndpoint(ctx.db, ctx, id);
    return { endpoints: await listWebhookEndpoints(ctx.db, ctx) };
  },
);

export const sendTestWebhookAction = staffAction(
  { name: "sendTestWebhook", roles: ADMINS, input: z.object({ endpointId }) },
  ({ endpointId: id }, ctx) => sendTestWebhook(ctx.db, ctx, id),
);

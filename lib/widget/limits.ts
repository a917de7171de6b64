import "server-only";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { storeOf } from "@/lib/db/kysely";
import { poolOf } from "@/lib/db/sql";
import { env } from "@/lib/env";
import { AppError } from "@/lib/errors";
import { log } from "@/lib/log";
import { rateLimitCounter, type RateLimitPolicy } from "@/lib/api/rate-limit";
import { loadPolicy } from "@/lib/runtime/policy";
import type { WidgetTenant } from "./session";

/**
 * The public widget's limits, counted in PostgreSQL (the API tokens' store, lib/api/rate-limit.ts) so they hold across
 * every web process. Messages are limited per conversation, per client IP and per shop, new conversations per client
 * IP — the numbers are the shop's policy (`limits`, Settings → Policy). Reads (the view, live updates) are limited per
 * client IP by SUPPORT_WIDGET_READS_PER_MIN. Over a limit: 429 RATE_LIMITED, a Retry-After, and a sentence
 * the widget shows as it is. Nothing is stored for a refused request, so nothing is half-written.
 */

export const RATE_LIMITED_MESSAGE = (seconds: number) =>
  `You're sending messages faster than we can answer them. Please wait ${waitInWords(seconds)} and try again — everything you sent before this has been received.`;

const SHOP_BUSY_MESSAGE = (seconds: number) =>
  `We're receiving a lot of messages right now. Please wait ${waitInWords(seconds)} and try again — everything you sent before this has been received.`;

const OPENING_LIMITED_MESSAGE = (seconds: number) =>
  `Too many chats have been started from your network just now. Please wait ${waitInWords(seconds)} and try again.`;

const READS_LIMITED_MESSAGE = (seconds: number) =>
  `The chat is refreshing too often. Please wait ${waitInWords(seconds)}; nothing you sent is lost.`;

function waitInWords(seconds: number): string {
  if (seconds <= 1) return "a second";
  if (seconds < 90) return `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minutes`;
}

type Scope = "conversation" | "ip" | "shop";

async function limitsOf(db: PrismaClient, tenant: WidgetTenant) {
  return (await loadPolicy(storeOf(db), tenant.id, tenant.policyVersion)).rules.limits;
}

/** Counts `key` against a limit; over it → AppError RATE_LIMITED with `retryAfterSeconds` and which limit. */
async function count(
  db: PrismaClient,
  name: string,
  policy: RateLimitPolicy,
  key: string,
  scope: Scope,
  message: (seconds: number) => string,
) {
  const pool = poolOf(db);
  if (!pool) throw new Error("the widget's database client has no pg pool (create it with createPrisma)");
  const res = await rateLimitCounter(pool, name, policy).count(key);
  if (!("refused" in res)) return;
  log.warn({ limit: name, scope, points: policy.points, windowSeconds: policy.windowSeconds }, "widget rate limit reached");
  throw new AppError("RATE_LIMITED", message(res.retryAfterSeconds), {
    retryAfterSeconds: res.retryAfterSeconds,
    scope,
  });
}

/** Before a message (or a request for a person) is taken: per conversation, per client IP, per shop. */
export async function limitMessage(db: PrismaClient, tenant: WidgetTenant, conversationId: string, ip: string | null) {
  const limits = await limitsOf(db, tenant);
  const perMinute = (points: number) => ({ points, windowSeconds: 60 });
  await count(db, "wmsgconv", perMinute(limits.messagesPerMinutePerConversation), conversationId, "conversation", RATE_LIMITED_MESSAGE);
  // Without a usable address (no proxy header at all) the shop's own limit still holds.
  if (ip) await count(db, "wmsgip", perMinute(limits.messagesPerMinutePerIp), `${tenant.id}:${ip}`, "ip", RATE_LIMITED_MESSAGE);
  await count(db, "wmsgshop", perMinute(limits.messagesPerMinutePerShop), tenant.id, "shop", SHOP_BUSY_MESSAGE);
}

/** Before a new conversation is opened (a resumed one is not counted): per client IP, per hour. */
export async function limitNewConversation(db: PrismaClient, tenant: WidgetTenant, ip: string | null) {
  if (!ip) return;
  const limits = await limitsOf(db, tenant);
  await count(
    db,
    "wconvip",
    { points: limits.conversationsPerHourPerIp, windowSeconds: 3600 },
    `${tenant.id}:${ip}`,
    "ip",
    OPENING_LIMITED_MESSAGE,
  );
}

/** Before a read (the conversation's view, live updates): per client IP, per minute, over every shop. */
export async function limitRead(db: PrismaClient, ip: string | null) {
  if (!ip) return;
  await count(db, "wread", { points: env().SUPPORT_WIDGET_READS_PER_MIN, windowSeconds: 60 }, ip, "ip", READS_LIMITED_MESSAGE);
}

import "server-only";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { storeOf } from "@/lib/db/kysely";
import { poolOf } from "@/lib/db/sql";
import { setting } from "@/lib/env";
import { AppError } from "@/lib/errors";
import { OncePerWindow } from "@/lib/log-once";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { type CountedLimit, countTogether, rateLimitCounter, type RateLimitPolicy } from "@/lib/api/rate-limit";
import { loadPolicy } from "@/lib/runtime/policy";
import type { WidgetTenant } from "./session";

/**
 * The public widget's limits, counted in PostgreSQL (the API tokens' store, lib/api/rate-limit.ts) so they hold across
 * every web process. Messages are limited per conversation, per client (its address: lib/identity/client-address
 * `clientKey`) and per shop, new conversations per client — the numbers are the shop's policy (`limits`, Settings →
 * Policy). Reads (the view, live updates) are limited per client by SUPPORT_WIDGET_READS_PER_MIN, in each process's memory (see limitRead). Over a limit: 429 RATE_LIMITED,
 * a Retry-After, and a sentence the widget shows as it is. Nothing is stored for a refused request, so nothing is
 * half-written.
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

function poolFor(db: PrismaClient) {
  const pool = poolOf(db);
  if (!pool) throw new Error("the widget's database client has no pg pool (create it with createPrisma)");
  return pool;
}

// A client held over a limit is refused at every request; the log says so once a minute per client and limit.
const g = globalThis as typeof globalThis & { __supportRateLimitLines?: OncePerWindow };
const limitLines = (g.__supportRateLimitLines ??= new OncePerWindow(60_000, {
  first: "widget rate limit reached",
  more: (n, seconds) => `widget rate limit: ${n} more request(s) refused in ${seconds} s`,
}));

function refuse(
  l: { name: string; policy: RateLimitPolicy; key: string; scope: Scope; message: (seconds: number) => string },
  retryAfterSeconds: number,
): never {
  const { points, windowSeconds } = l.policy;
  limitLines.note(`${l.name}:${l.key}`, { limit: l.name, scope: l.scope, points, windowSeconds });
  throw new AppError("RATE_LIMITED", l.message(retryAfterSeconds), { retryAfterSeconds, scope: l.scope });
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
  const res = await rateLimitCounter(poolFor(db), name, policy).count(key);
  if ("refused" in res) refuse({ name, policy, key, scope, message }, res.retryAfterSeconds);
}

/**
 * Before a message (or a request for a person) is taken: per conversation, per client IP, per shop — counted together,
 * in one statement; over any of them, the first in that order answers.
 */
export async function limitMessage(db: PrismaClient, tenant: WidgetTenant, conversationId: string, client: string) {
  const limits = await limitsOf(db, tenant);
  const perMinute = (points: number) => ({ points, windowSeconds: 60 });
  const counted: (CountedLimit & { scope: Scope; message: (seconds: number) => string })[] = [
    {
      name: "wmsgconv",
      policy: perMinute(limits.messagesPerMinutePerConversation),
      key: conversationId,
      scope: "conversation",
      message: RATE_LIMITED_MESSAGE,
    },
    {
      name: "wmsgip",
      policy: perMinute(limits.messagesPerMinutePerIp),
      key: `${tenant.id}:${client}`,
      scope: "ip",
      message: RATE_LIMITED_MESSAGE,
    },
    { name: "wmsgshop", policy: perMinute(limits.messagesPerMinutePerShop), key: tenant.id, scope: "shop", message: SHOP_BUSY_MESSAGE },
  ];
  const refused = await countTogether(poolFor(db), counted);
  if (refused) refuse(counted[refused.index]!, refused.retryAfterSeconds);
}

/** Before a new conversation is opened (a resumed one is not counted): per client IP, per hour. */
export async function limitNewConversation(db: PrismaClient, tenant: WidgetTenant, client: string) {
  const limits = await limitsOf(db, tenant);
  await count(
    db,
    "wconvip",
    { points: limits.conversationsPerHourPerIp, windowSeconds: 3600 },
    `${tenant.id}:${client}`,
    "ip",
    OPENING_LIMITED_MESSAGE,
  );
}

const readLimiters = new Map<number, RateLimiterMemory>();

/**
 * Before a read (the conversation's view, live updates): per client IP, per minute, over every shop. Counted in this
 * process's memory, not in PostgreSQL: the widget reads on every live update, and a read that wrote a counter row (and
 * waited for its commit) cost more than the read. A flood is refused by the process it reaches; with N web processes
 * one address may make up to N× the number. What writes — messages, new conversations — is counted in PostgreSQL.
 */
export async function limitRead(client: string) {
  const points = setting("SUPPORT_WIDGET_READS_PER_MIN"); // on every read: the one variable, not all (lib/env)
  let limiter = readLimiters.get(points);
  if (!limiter) {
    limiter = new RateLimiterMemory({ points, duration: 60 });
    readLimiters.set(points, limiter);
  }
  try {
    await limiter.consume(client);
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    const retryAfterSeconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
    refuse(
      { name: "wread", policy: { points, windowSeconds: 60 }, key: client, scope: "ip", message: READS_LIMITED_MESSAGE },
      retryAfterSeconds,
    );
  }
}

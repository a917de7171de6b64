// Requests per JSON API token, counted in PostgreSQL so the limit holds across every web process: rate-limiter-flexible's
// PostgreSQL store on the PrismaClient's own pool, its table (`ApiRateLimit`) created by our migrations, not at run
// time. One statement per request (an upsert of the token's window); a token over its limit is then refused from
// memory until its window ends, so a flood costs no further writes.
import pg from "pg";
import { RateLimiterPostgres, RateLimiterRes } from "rate-limiter-flexible";
import { AppError } from "@/lib/errors";

export interface RateLimitPolicy {
  /** Requests allowed per window. */
  points: number;
  windowSeconds: number;
}

/** What the caller may still do in this window (sent as RateLimit-* headers). */
export interface RateLimitState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

export interface ApiRateLimiter {
  /** Counts one request of `key`; over the limit → AppError RATE_LIMITED with `retryAfterSeconds` in its details. */
  consume(key: string): Promise<RateLimitState>;
}

// Our pool reads int8 as bigint (lib/db/sql.ts); the store does arithmetic on `expire` (epoch ms, int8) with numbers.
// Its queries run with pg's stock parsers instead — an epoch in milliseconds is exact as a JS number.
function storeClientOn(pool: pg.Pool) {
  return { query: (q: pg.QueryConfig) => pool.query({ ...q, types: pg.types }) };
}

const counters = new WeakMap<pg.Pool, Map<string, RateLimitCounter>>();

/** One counter per key within a window, in PostgreSQL; the widget's limits (lib/widget/limits.ts) use it too. */
export interface RateLimitCounter {
  /** Counts one request of `key`: its state, or `refused` with the seconds until the window ends. */
  count(key: string): Promise<RateLimitState | { refused: true; retryAfterSeconds: number }>;
}

/**
 * The counter of a pool, name and policy (one per process: its in-memory block list is per instance). The name and
 * the policy are part of each row's key, so counters never mix, and a changed limit starts a fresh window.
 */
export function rateLimitCounter(pool: pg.Pool, name: string, policy: RateLimitPolicy): RateLimitCounter {
  const byPolicy = counters.get(pool) ?? new Map<string, RateLimitCounter>();
  counters.set(pool, byPolicy);
  const id = `${name}${policy.points}per${policy.windowSeconds}s`;
  let counter = byPolicy.get(id);
  if (!counter) {
    counter = createCounter(pool, id, policy);
    byPolicy.set(id, counter);
  }
  return counter;
}

function createCounter(pool: pg.Pool, keyPrefix: string, policy: RateLimitPolicy): RateLimitCounter {
  const store = new RateLimiterPostgres({
    storeClient: storeClientOn(pool),
    storeType: "pool",
    tableName: "ApiRateLimit",
    tableCreated: true, // prisma/migrations made it; never DDL at run time
    keyPrefix,
    points: policy.points,
    duration: policy.windowSeconds,
    // The first refused request is counted in the database; later ones are refused from memory until the window ends.
    inMemoryBlockOnConsumed: policy.points + 1,
  });
  return {
    async count(key) {
      try {
        const res = await store.consume(key);
        return { limit: policy.points, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err; // the database failed: not the caller's fault
        return { refused: true, retryAfterSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
      }
    },
  };
}

/** One limit a request is counted against: the row `rateLimitCounter(pool, name, policy)` counts for `key`. */
export interface CountedLimit {
  name: string;
  policy: RateLimitPolicy;
  key: string;
}

// Rows over their limit, with when their window ends: refused from memory until then (per pool, as the counters' own).
const blockedRows = new WeakMap<pg.Pool, Map<string, number>>();

/**
 * Counts one request against several limits in ONE statement — one round trip and one commit instead of one each —
 * on the same rows as `rateLimitCounter`, so both see the same counts. Every limit is counted; the answer is the first
 * limit over its number, in the order given (its index), or null. A row over its limit is then refused from this
 * process's memory until its window ends, so a flood costs no further writes.
 */
export async function countTogether(pool: pg.Pool, limits: CountedLimit[]): Promise<{ index: number; retryAfterSeconds: number } | null> {
  const now = Date.now();
  const rows = limits.map((l) => `${l.name}${l.policy.points}per${l.policy.windowSeconds}s:${l.key}`);
  const blocked = blockedRows.get(pool) ?? new Map<string, number>();
  blockedRows.set(pool, blocked);
  for (const [index, row] of rows.entries()) {
    const until = blocked.get(row);
    if (until === undefined) continue;
    if (until > now) return { index, retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) };
    blocked.delete(row);
  }
  const fresh = new Map(rows.map((row, i) => [row, now + limits[i]!.policy.windowSeconds * 1000]));
  // Rows are locked in key order, so two requests sharing rows (the shop's) never wait for each other crosswise.
  const { rows: counted } = await pool.query<{ key: string; points: number; expire: string | null }>({
    text: `INSERT INTO "ApiRateLimit" (key, points, expire)
      SELECT k, 1, e FROM unnest($1::text[], $2::int8[]) AS x(k, e) ORDER BY k
      ON CONFLICT (key) DO UPDATE SET
        points = CASE WHEN "ApiRateLimit".expire <= $3 THEN 1 ELSE "ApiRateLimit".points + 1 END,
        expire = CASE WHEN "ApiRateLimit".expire <= $3 THEN EXCLUDED.expire ELSE "ApiRateLimit".expire END
      RETURNING key, points, expire`,
    values: [[...fresh.keys()], [...fresh.values()], now],
    types: pg.types, // the epoch in milliseconds as text, not our pool's bigint
  });
  const byRow = new Map(counted.map((r) => [r.key, r]));
  for (const [index, row] of rows.entries()) {
    const r = byRow.get(row);
    if (!r || r.points <= limits[index]!.policy.points) continue;
    const until = r.expire === null ? now + 1000 : Number(r.expire);
    if (blocked.size > 10_000) for (const [k, t] of blocked) if (t <= now) blocked.delete(k);
    blocked.set(row, until);
    return { index, retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) };
  }
  return null;
}

/** The limiter of a pool and policy for API tokens. */
export function apiRateLimiter(pool: pg.Pool, policy: RateLimitPolicy): ApiRateLimiter {
  const counter = rateLimitCounter(pool, "api", policy);
  return {
    async consume(key) {
      const res = await counter.count(key);
      if (!("refused" in res)) return res;
      const { retryAfterSeconds } = res;
      throw new AppError("RATE_LIMITED", `Too many requests with this API token. Try again in ${retryAfterSeconds} s.`, {
        retryAfterSeconds,
        limit: policy.points,
        windowSeconds: policy.windowSeconds,
      });
    },
  };
}

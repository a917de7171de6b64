// The widget in settings: the snippet a shop pastes, the parent pages allowed to host it, and the identity secret
// its backend signs customers with. Rotating the secret keeps the previous one verifying for an overlap window, so
// the shop can deploy the new one without signed-in customers being refused meanwhile. Secrets never reach the
// audit trail, and a new secret is shown once (it is returned by the rotation, never read back).
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { addAudit } from "@/lib/store/audit";
import { Statement } from "@/lib/store/statement";
import { normalizeOrigin } from "@/lib/widget/origins";
import { requireAdmin, type SettingsActor } from "./admin";

export const DEFAULT_OVERLAP_HOURS = 24;
export const MAX_OVERLAP_HOURS = 168;
export const MAX_ALLOWED_ORIGINS = 50;

export interface WidgetSettings {
  slug: string;
  allowedOrigins: string[];
  secretRotatedAt: Date | null;
  /** the previous secret still verifies until then (null: no overlap running) */
  previousSecretValidUntil: Date | null;
}

export async function widgetSettings(client: object, actor: SettingsActor, now = new Date()): Promise<WidgetSettings> {
  const db = storeOf(client);
  await requireAdmin(db, actor);
  const t = await db
    .selectFrom("Tenant")
    .select(["slug", "allowedOrigins", "widgetSecretRotatedAt", "widgetSecretPrevious", "widgetSecretPreviousUntil"])
    .where("id", "=", actor.tenantId)
    .executeTakeFirstOrThrow();
  const overlap = t.widgetSecretPrevious && t.widgetSecretPreviousUntil && t.widgetSecretPreviousUntil > now;
  return {
    slug: t.slug,
    allowedOrigins: t.allowedOrigins,
    secretRotatedAt: t.widgetSecretRotatedAt,
    previousSecretValidUntil: overlap ? t.widgetSecretPreviousUntil : null,
  };
}

/** The tag a shop pastes into its pages (the demo storefront does exactly this). */
export function embedSnippet(appUrl: string, slug: string): string {
  return `<script src="${appUrl.replace(/\/+$/, "")}/embed.js" data-shop="${slug}" async></script>`;
}

/** A fresh widget secret: 32 random bytes, URL-safe. */
export function newWidgetSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

/**
 * Rotates the widget secret: a new one signs from now on; the current one becomes the previous and keeps verifying
 * for `overlapHours` (0: stops at once). A rotation during an overlap ends the older secret at once (only one
 * previous is kept). Returns the new secret — the only time it is shown. Audited without any secret.
 */
export async function rotateWidgetSecret(
  client: object,
  actor: SettingsActor,
  input: { overlapHours: number },
  now = new Date(),
): Promise<{ secret: string; previousValidUntil: Date | null }> {
  const hours = input.overlapHours;
  if (!Number.isFinite(hours) || hours < 0 || hours > MAX_OVERLAP_HOURS)
    throw new AppError("INVALID_INPUT", `The overlap is between 0 and ${MAX_OVERLAP_HOURS} hours.`);
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const secret = newWidgetSecret();
  const until = hours > 0 ? new Date(now.getTime() + hours * 3_600_000) : null;
  const s = Statement.plain();
  // In SET, "widgetSecret" is the value before this update: the current secret becomes the previous one.
  s.update(
    "rotated",
    "Tenant",
    {
      widgetSecretPrevious: until ? sql`"widgetSecret"` : null,
      widgetSecretPreviousUntil: until,
      widgetSecret: secret,
      widgetSecretRotatedAt: now,
    },
    sql<boolean>`"Tenant".id = ${actor.tenantId}`,
  );
  addAudit(
    s,
    "audit",
    {
      tenantId: actor.tenantId,
      actor: admin.email,
      action: "widget.secret_rotated",
      subject: "widget:secret",
      data: { overlapHours: hours, previousValidUntil: until?.toISOString() ?? null },
    },
    { from: ["rotated"] },
  );
  await s.run(db);
  return { secret, previousValidUntil: until };
}

/**
 * An allowed parent origin as the admin wrote it, checked: `scheme://host[:port]` without a path; https, or http
 * only for localhost (a page on plain http could have its customer's identity token read on the way).
 */
export function parseAllowedOrigin(raw: unknown): string {
  const text = typeof raw === "string" ? raw.trim() : "";
  const origin = normalizeOrigin(text);
  if (!origin) throw new AppError("INVALID_INPUT", "Write an origin like https://shop.example.com.", { field: "origin" });
  const url = new URL(text);
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash || url.username || url.password)
    throw new AppError("INVALID_INPUT", `An origin has no path: write ${origin}.`, { field: "origin" });
  const local = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol === "http:" && !local)
    throw new AppError("INVALID_INPUT", "Use https (plain http only for localhost).", { field: "origin" });
  return origin;
}

/** Allows a parent origin (audited). Already there → CONFLICT; at most MAX_ALLOWED_ORIGINS. */
export async function addAllowedOrigin(client: object, actor: SettingsActor, raw: unknown): Promise<string[]> {
  const origin = parseAllowedOrigin(raw);
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const s = Statement.plain();
  // Conditional on the row as it is now: two admins adding at once both land, and a duplicate is never added.
  s.update(
    "added",
    "Tenant",
    { allowedOrigins: sql`array_append("allowedOrigins", ${origin}::text)` },
    sql<boolean>`"Tenant".id = ${actor.tenantId} AND NOT (${origin}::text = ANY("allowedOrigins"))
      AND cardinality("allowedOrigins") < ${MAX_ALLOWED_ORIGINS}`,
    { returning: sql`"Tenant"."allowedOrigins"` },
  );
  addAudit(
    s,
    "audit",
    { tenantId: actor.tenantId, actor: admin.email, action: "widget.origin_added", subject: "widget:origins", data: { origin } },
    { from: ["added"] },
  );
  const row = await s.run<{ origins: string[] | null }>(db, sql`(SELECT "allowedOrigins" FROM added) AS origins`);
  if (row?.origins) return row.origins;
  const now = await db.selectFrom("Tenant").select("allowedOrigins").where("id", "=", actor.tenantId).executeTakeFirstOrThrow();
  if (now.allowedOrigins.includes(origin)) throw new AppError("CONFLICT", `${origin} is already allowed.`, { field: "origin" });
  throw new AppError("INVALID_INPUT", `At most ${MAX_ALLOWED_ORIGINS} origins.`, { field: "origin" });
}

/** Stops allowing a parent origin (audited). Not in the list → NOT_FOUND. */
export async function removeAllowedOrigin(client: object, actor: SettingsActor, raw: unknown): Promise<string[]> {
  const origin = typeof raw === "string" ? raw : "";
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const s = Statement.plain();
  s.update(
    "removed",
    "Tenant",
    { allowedOrigins: sql`array_remove("allowedOrigins", ${origin}::text)` },
    sql<boolean>`"Tenant".id = ${actor.tenantId} AND ${origin}::text = ANY("allowedOrigins")`,
    { returning: sql`"Tenant"."allowedOrigins"` },
  );
  addAudit(
    s,
    "audit",
    { tenantId: actor.tenantId, actor: admin.email, action: "widget.origin_removed", subject: "widget:origins", data: { origin } },
    { from: ["removed"] },
  );
  const row = await s.run<{ origins: string[] | null }>(db, sql`(SELECT "allowedOrigins" FROM removed) AS origins`);
  if (!row?.origins) throw new AppError("NOT_FOUND", `${origin || "This origin"} is not in the list.`);
  return row.origins;
}

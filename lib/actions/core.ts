import { z } from "zod";
import { noteDatabaseFailure } from "@/lib/db/outage";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { AppError, toPublicError } from "@/lib/errors";
import { ALL_STAFF_ROLES, type SessionClaims, type StaffRole } from "@/lib/auth/claims";
import { loadStaffContext, type StaffContext } from "@/lib/auth/staff-context";
import { addLogContext, currentLogContext, log, requestIdFrom, withLogContext } from "@/lib/log";
import { assertStorable } from "@/lib/storable-text";
import type { ActionResult } from "./result";

/** What the wrapper needs from the outside; the real ones read the session cookie and the shared database. */
export interface OperationDeps {
  getClaims: () => Promise<Pick<SessionClaims, "staffId" | "tenantId"> | null>;
  getDb: () => Promise<PrismaClient>;
  /** Re-throws framework control flow (redirect, notFound) so it is never reported as an error. */
  rethrow?: (err: unknown) => void;
  logError?: (operation: string, err: unknown) => void;
  /** The request's headers, for its `x-request-id` (server actions: next/headers). */
  requestHeaders?: () => Promise<Pick<Headers, "get"> | null>;
}

export interface OperationSpec<S extends z.ZodType> {
  /** Names the operation in logs. */
  name: string;
  input: S;
  /** Roles allowed to call it (default: every staff role). */
  roles?: readonly StaffRole[];
}

/** What every operation receives: the caller as the database says right now, and the database. */
export type OperationContext = StaffContext & { db: PrismaClient };

export type Operation<T> = (raw: unknown) => Promise<ActionResult<T>>;

const defaultLog = (operation: string, err: unknown) => {
  if (!noteDatabaseFailure(err, operation)) log.error({ err, operation }, "console operation failed"); // an outage is logged once
};

/**
 * The one chain every server action and console route handler goes through:
 *   session → staff row re-read (anonymous or deleted → UNAUTHENTICATED) → role (FORBIDDEN)
 *   → zod input (INVALID_INPUT) → handler → `{ ok: true, data }`.
 * Errors become `{ ok: false, error: { code, message } }`: an AppError keeps its code and user message;
 * anything else is logged and reported as INTERNAL without its details. Object-level access is not decided
 * here: handlers pass `ctx.tenantId` to data functions that put it in their `where`.
 * Each call runs in a log context with a request id, the operation's name, then the caller's tenant and staff
 * ids and the ids its input names (conversationId, handoffId, runId).
 */
export function createOperationFactory(deps: OperationDeps) {
  return function defineOperation<S extends z.ZodType, T>(
    spec: OperationSpec<S>,
    handler: (input: z.output<S>, ctx: OperationContext) => Promise<T>,
  ): Operation<T> {
    const roles = spec.roles ?? ALL_STAFF_ROLES;
    return async (raw: unknown): Promise<ActionResult<T>> => {
      const requestId = currentLogContext().requestId ?? requestIdFrom(await headersOf(deps));
      return withLogContext({ requestId, operation: spec.name }, () => run(raw));
    };
    async function run(raw: unknown): Promise<ActionResult<T>> {
      try {
        const claims = await deps.getClaims();
        if (!claims) throw new AppError("UNAUTHENTICATED", "Sign in to continue.");
        const db = await deps.getDb();
        const staff = await loadStaffContext(db, claims);
        if (!staff) throw new AppError("UNAUTHENTICATED", "Your session is no longer valid. Sign in again.");
        addLogContext({ tenantId: staff.tenantId, staffId: staff.staffId });
        if (!roles.includes(staff.role)) throw new AppError("FORBIDDEN", "Your role cannot do this.");
        assertStorable(raw, "request"); // nothing the database cannot store reaches an operation: a 400, not a 500
        const parsed = spec.input.safeParse(raw);
        if (!parsed.success) throw new AppError("INVALID_INPUT", describeIssues(parsed.error));
        addLogContext(idsIn(parsed.data));
        return { ok: true, data: await handler(parsed.data, { ...staff, db }) };
      } catch (err) {
        deps.rethrow?.(err);
        if (err instanceof z.ZodError) return { ok: false, error: { code: "INVALID_INPUT", message: describeIssues(err) } };
        if (!(err instanceof AppError)) (deps.logError ?? defaultLog)(spec.name, err);
        return { ok: false, error: toPublicError(err) };
      }
    }
  };
}

/** The request's headers if there is a request (a server action called outside one — a test, a job — has none). */
async function headersOf(deps: OperationDeps): Promise<Pick<Headers, "get"> | null> {
  try {
    return (await deps.requestHeaders?.()) ?? null;
  } catch {
    return null;
  }
}

function idsIn(input: unknown): { conversationId?: string; handoffId?: string; runId?: string } {
  if (!input || typeof input !== "object") return {};
  const { conversationId, handoffId, runId } = input as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  return { conversationId: str(conversationId), handoffId: str(handoffId), runId: str(runId) };
}

function describeIssues(err: z.ZodError): string {
  return err.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
}

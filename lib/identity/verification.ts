import type { Transaction } from "kysely";
import { type DB, storeOf } from "@/lib/db/kysely";
import { deliverMail, queueMail, type QueuedMail } from "@/lib/mail/send";
import { mailSettings } from "@/lib/mail/config";
import { normaliseOrderNumber } from "@/lib/commerce/order-number";
import {
  ATTEMPT_LIMITS,
  attemptOfCall,
  lockAttemptScope,
  overFailureLimit,
  recentAttempts,
  recordAttempt,
  type AttemptScope,
} from "./attempts";
import { CODE_TTL_MINUTES, newCode, redeemCode, storeCode } from "./codes";
import { ADDRESS_CHANGE_LEVEL, meetsLevel, strongerLevel, type VerificationLevel } from "./levels";
import { emailHash, normaliseEmail, postcodesMatch } from "./normalise";

/**
 * Proving who an anonymous visitor is, by something a stranger can't know: the account email together with an
 * order number on that account (plus the postcode of that order's delivery address, for address changes), or a
 * one-time code sent to the account email. Every failure reads the same whatever was wrong — no account
 * enumeration — and costs the same work; attempts are limited per conversation, per IP and per email.
 */

type Tx = Transaction<DB>;

export interface IdentityContext {
  /** The runtime's transaction (verify_customer and send_verification_code run in it), or a client: one is opened. */
  db: object;
  tenantId: string;
  conversationId: string;
  /** The tool call doing this: running the same call again returns the first outcome instead of trying again. */
  toolCallId: string | null;
  now?: Date;
  /** Work to do after the transaction commits (deliver a mail it queued); without it, done once this returns. */
  afterCommit?: (work: () => Promise<void>) => void;
  /** The store (for work after commit, when `db` is the runtime's transaction). */
  store?: object;
}

export interface VerifyIdentityInput {
  email: string;
  order_number?: string;
  postcode?: string;
  code?: string;
}

const DETAILS_DONT_MATCH =
  "Those details don't match our records. Ask the customer to check the email address and the order number (do not say which one looked wrong), or offer to send a one-time code to the account email with send_verification_code.";
const CODE_DOESNT_MATCH =
  "Those details don't match our records: the code is wrong, used or expired. Ask the customer to check it, or send a new code with send_verification_code.";
const TRY_LATER = `Those details don't match our records, and there have been too many attempts, so nothing was checked. Ask the customer to try again later (in about ${ATTEMPT_LIMITS.windowMinutes} minutes).`;

export const notVerified = (byCode: boolean) => ({ status: "not_verified", message: byCode ? CODE_DOESNT_MATCH : DETAILS_DONT_MATCH });
const triesExhausted = () => ({ status: "not_verified", retry_later: true, message: TRY_LATER });

function verified(customer: { id: string; name: string; email: string }, level: VerificationLevel) {
  const canChangeAddress = meetsLevel(level, ADDRESS_CHANGE_LEVEL);
  return {
    status: "verified",
    customer_id: customer.id,
    name: customer.name,
    email: customer.email,
    level,
    can_change_address: canChangeAddress,
    message: canChangeAddress
      ? "The customer is verified."
      : "The customer is verified by email and order number. Changing a delivery address also needs the postcode of that order's current delivery address (verify_customer again with postcode) or a one-time code.",
  };
}

// Duck-typed, not `instanceof Kysely`: a built app may hold two copies of kysely's classes.
const isTransaction = (db: object) => (db as { isTransaction?: unknown }).isTransaction === true;

async function inTransaction<T>(db: object, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (isTransaction(db)) return fn(db as Tx);
  return storeOf(db).transaction().execute(fn);
}

async function conversationOf(tx: Tx, ctx: IdentityContext) {
  const conversation = await tx
    .selectFrom("Conversation")
    .select(["clientIp", "verifiedCustomerId", "verificationLevel", "verificationExpiresAt"])
    .where("id", "=", ctx.conversationId)
    .where("tenantId", "=", ctx.tenantId)
    .executeTakeFirst();
  if (!conversation) throw new Error(`conversation ${ctx.conversationId} not found in tenant ${ctx.tenantId}`);
  return conversation;
}

function postcodeOf(address: unknown): string {
  const postalCode = address && typeof address === "object" ? (address as Record<string, unknown>).postalCode : undefined;
  return typeof postalCode === "string" ? postalCode : "";
}

/**
 * verify_customer's work. Email + order number → `order_email`; with the matching postcode of that order's current
 * delivery address → `order_email_postcode`; email + the latest code sent in this conversation → `email_code`.
 * A re-verification of the customer the conversation is already verified as never lowers its level.
 */
export async function verifyIdentity(ctx: IdentityContext, input: VerifyIdentityInput): Promise<Record<string, unknown>> {
  const byCode = input.code !== undefined;
  if (!byCode && input.order_number === undefined) {
    // Nothing was checked, so nothing is counted: a name, or an email alone, proves nothing.
    return {
      status: "needs_more",
      message:
        "The email alone proves nothing. Ask the customer for an order number on the account, or send a one-time code to the email with send_verification_code.",
    };
  }
  const now = ctx.now ?? new Date();
  const email = normaliseEmail(input.email);
  return inTransaction(ctx.db, async (tx) => {
    const conversation = await conversationOf(tx, ctx);
    const scope: AttemptScope = {
      tenantId: ctx.tenantId,
      conversationId: ctx.conversationId,
      ip: conversation.clientIp,
      emailHash: emailHash(email),
    };
    await lockAttemptScope(tx, scope);

    if (ctx.toolCallId) {
      const earlier = await attemptOfCall(tx, ctx.tenantId, ctx.toolCallId);
      if (earlier) return replayed(tx, ctx.tenantId, earlier, byCode);
    }
    const kind = byCode ? "email_code" : "order_email";
    if (await overFailureLimit(tx, scope, now)) {
      await recordAttempt(tx, scope, { toolCallId: ctx.toolCallId, kind, outcome: "limited" });
      return triesExhausted();
    }

    let customer: { id: string; name: string; email: string } | null = null;
    let level: VerificationLevel | null = null;
    if (byCode) {
      const customerId = await redeemCode(tx, {
        tenantId: ctx.tenantId,
        conversationId: ctx.conversationId,
        emailHash: scope.emailHash,
        code: input.code!,
        now,
      });
      customer = customerId
        ? ((await tx
            .selectFrom("Customer")
            .select(["id", "name", "email"])
            .where("id", "=", customerId)
            .where("tenantId", "=", ctx.tenantId)
            .executeTakeFirst()) ?? null)
        : null;
      level = "email_code";
    } else {
      // One query whatever is wrong (unknown email, unknown order, another customer's order): same work, same answer.
      const order = await tx
        .selectFrom("Order as o")
        .innerJoin("Customer as c", "c.id", "o.customerId")
        .select(["o.shippingAddress", "c.id", "c.name", "c.email"])
        .where("o.tenantId", "=", ctx.tenantId)
        .where("o.number", "=", normaliseOrderNumber(input.order_number!))
        .where("c.email", "=", email)
        .executeTakeFirst();
      const postcodeOk = input.postcode === undefined || (!!order && postcodesMatch(input.postcode, postcodeOf(order.shippingAddress)));
      customer = order && postcodeOk ? { id: order.id, name: order.name, email: order.email } : null;
      level = input.postcode === undefined ? "order_email" : "order_email_postcode";
    }

    if (!customer) {
      await recordAttempt(tx, scope, { toolCallId: ctx.toolCallId, kind, outcome: "failed" });
      return notVerified(byCode);
    }
    const alreadyThisCustomer =
      conversation.verifiedCustomerId === customer.id && !!conversation.verificationExpiresAt && conversation.verificationExpiresAt > now;
    const effective = alreadyThisCustomer ? strongerLevel(level, conversation.verificationLevel) : level;
    await recordAttempt(tx, scope, { toolCallId: ctx.toolCallId, kind, outcome: "verified", customerId: customer.id, level: effective });
    return verified(customer, effective);
  });
}

async function replayed(
  tx: Tx,
  tenantId: string,
  earlier: { outcome: string; customerId: string | null; level: VerificationLevel | null },
  byCode: boolean,
): Promise<Record<string, unknown>> {
  if (earlier.outcome === "limited") return triesExhausted();
  if (earlier.outcome === "verified" && earlier.customerId && earlier.level) {
    const customer = await tx
      .selectFrom("Customer")
      .select(["id", "name", "email"])
      .where("id", "=", earlier.customerId)
      .where("tenantId", "=", tenantId)
      .executeTakeFirst();
    if (customer) return verified(customer, earlier.level);
  }
  return notVerified(byCode);
}

const CODE_REQUESTED = `If an account exists for that email address, a 6-digit code was sent to it; it is valid for ${CODE_TTL_MINUTES} minutes. Ask the customer to type the code here, then call verify_customer with the email and the code. Do not say whether an account exists.`;
const TOO_MANY_CODES = `Too many codes were requested, so none was sent. Ask the customer to try again later (in about ${ATTEMPT_LIMITS.windowMinutes} minutes), or to verify with the account email and an order number.`;

/**
 * send_verification_code's work: the same answer whatever the email. When the email belongs to an account of this
 * shop (and that inbox has not had too many codes lately), a fresh code goes out — through SMTP once this
 * transaction has committed, or into the demo mailbox. Requests are limited per conversation and per IP.
 */
export async function requestVerificationCode(ctx: IdentityContext, input: { email: string }): Promise<Record<string, unknown>> {
  const settings = mailSettings(); // a half-configured mailer fails here, before anything is written
  const now = ctx.now ?? new Date();
  const email = normaliseEmail(input.email);
  let queued = null as QueuedMail | null; // set inside the transaction, delivered after it commits
  const result = await inTransaction(ctx.db, async (tx) => {
    const conversation = await conversationOf(tx, ctx);
    const scope: AttemptScope = {
      tenantId: ctx.tenantId,
      conversationId: ctx.conversationId,
      ip: conversation.clientIp,
      emailHash: emailHash(email),
    };
    await lockAttemptScope(tx, scope);
    if (ctx.toolCallId) {
      const earlier = await attemptOfCall(tx, ctx.tenantId, ctx.toolCallId);
      if (earlier)
        return earlier.outcome === "limited"
          ? { status: "not_sent", retry_later: true, message: TOO_MANY_CODES }
          : { status: "code_requested", expires_in_minutes: CODE_TTL_MINUTES, message: CODE_REQUESTED };
    }
    const requests = await recentAttempts(tx, scope, ["code_request"], ["requested"], now);
    if (requests.conversation >= ATTEMPT_LIMITS.codeRequestsPerConversation || requests.ip >= ATTEMPT_LIMITS.codeRequestsPerIp) {
      await recordAttempt(tx, scope, { toolCallId: ctx.toolCallId, kind: "code_request", outcome: "limited" });
      return { status: "not_sent", retry_later: true, message: TOO_MANY_CODES };
    }
    const customer = await tx
      .selectFrom("Customer")
      .select(["id", "email"])
      .where("tenantId", "=", ctx.tenantId)
      .where("email", "=", email)
      .executeTakeFirst();
    const tenant = await tx.selectFrom("Tenant").select("name").where("id", "=", ctx.tenantId).executeTakeFirstOrThrow();
    const mailTo = customer && requests.email < ATTEMPT_LIMITS.codeMailsPerEmail ? customer : null;
    const code = newCode();
    await storeCode(tx, {
      tenantId: ctx.tenantId,
      conversationId: ctx.conversationId,
      emailHash: scope.emailHash,
      customerId: mailTo?.id ?? null,
      code,
      now,
    });
    if (mailTo) queued = await queueMail(tx, ctx.tenantId, codeMail(tenant.name, mailTo.email, code), settings);
    await recordAttempt(tx, scope, { toolCallId: ctx.toolCallId, kind: "code_request", outcome: "requested" });
    return { status: "code_requested", expires_in_minutes: CODE_TTL_MINUTES, message: CODE_REQUESTED };
  });
  if (queued) {
    const mail = queued;
    // Delivered once what it announces has committed (the runtime's transaction, when the tool runs in it).
    const deliver = async () => {
      await deliverMail(isTransaction(ctx.db) ? storeOfTx(ctx) : ctx.db, mail);
    };
    // In a run, after its commit and in the background (lib/runtime/execution): the customer's answer never waits for
    // a mail server, so its time tells nothing of whether the email has an account. Called on its own, delivered here.
    if (ctx.afterCommit) ctx.afterCommit(deliver);
    else await deliver();
  }
  return result;
}

export function codeMail(shopName: string, to: string, code: string) {
  return {
    to,
    subject: `Your ${shopName} verification code`,
    text: [
      `Your verification code for ${shopName} support is ${code}.`,
      "",
      `Type it in the chat to confirm it's you. It works once and expires in ${CODE_TTL_MINUTES} minutes.`,
      "",
      "If you didn't ask for it, ignore this mail: the code only works in the chat where it was requested.",
    ].join("\n"),
  };
}

/** After the runtime's transaction committed, the mail is delivered on the store (the transaction is gone). */
function storeOfTx(ctx: IdentityContext): object {
  if (!ctx.store) throw new Error("a mail queued in the runtime's transaction needs the store to deliver it");
  return ctx.store;
}

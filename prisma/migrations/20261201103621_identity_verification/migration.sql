-- CreateEnum
CREATE TYPE "VerificationLevel" AS ENUM ('order_email', 'order_email_postcode', 'email_code', 'shop_signed');

-- CreateEnum
CREATE TYPE "VerificationAttemptKind" AS ENUM ('order_email', 'email_code', 'code_request');

-- CreateEnum
CREATE TYPE "VerificationOutcome" AS ENUM ('verified', 'failed', 'limited', 'requested');

-- CreateEnum
CREATE TYPE "MailStatus" AS ENUM ('demo', 'queued', 'sent', 'failed');

-- AlterTable
ALTER TABLE "Conversation" ADD COLUMN     "clientIp" TEXT,
ADD COLUMN     "verificationLevel" "VerificationLevel";

-- CreateTable
CREATE TABLE "VerificationAttempt" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "conversationId" TEXT NOT NULL,
    "toolCallId" TEXT,
    "ip" TEXT,
    "emailHash" TEXT NOT NULL,
    "kind" "VerificationAttemptKind" NOT NULL,
    "outcome" "VerificationOutcome" NOT NULL,
    "customerId" TEXT,
    "level" "VerificationLevel",
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "VerificationAttempt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "VerificationCode" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "conversationId" TEXT NOT NULL,
    "emailHash" TEXT NOT NULL,
    "customerId" TEXT,
    "codeHash" TEXT NOT NULL,
    "salt" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "consumedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "VerificationCode_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "MailOutbox" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "to" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "status" "MailStatus" NOT NULL,
    "error" TEXT,
    "messageId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sentAt" TIMESTAMP(3),

    CONSTRAINT "MailOutbox_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "VerificationAttempt_toolCallId_key" ON "VerificationAttempt"("toolCallId");

-- CreateIndex
CREATE INDEX "VerificationAttempt_conversationId_createdAt_idx" ON "VerificationAttempt"("conversationId", "createdAt");

-- CreateIndex
CREATE INDEX "VerificationAttempt_tenantId_ip_createdAt_idx" ON "VerificationAttempt"("tenantId", "ip", "createdAt");

-- CreateIndex
CREATE INDEX "VerificationAttempt_tenantId_emailHash_createdAt_idx" ON "VerificationAttempt"("tenantId", "emailHash", "createdAt");

-- CreateIndex
CREATE INDEX "VerificationCode_conversationId_emailHash_createdAt_idx" ON "VerificationCode"("conversationId", "emailHash", "createdAt");

-- CreateIndex
CREATE INDEX "MailOutbox_tenantId_status_createdAt_idx" ON "MailOutbox"("tenantId", "status", "createdAt");

-- Shops that let the agent verify customers also let it send one-time codes, the other way to verify (the
-- allowlist gate refuses tools a policy does not list). Policies written from now on list it themselves.
UPDATE "PolicyVersion"
SET rules = jsonb_set(rules, '{allowedTools}', (rules -> 'allowedTools') || '["send_verification_code"]'::jsonb)
WHERE (rules -> 'allowedTools') ? 'verify_customer' AND NOT (rules -> 'allowedTools') ? 'send_verification_code';

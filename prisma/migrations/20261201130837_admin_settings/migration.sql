-- AlterTable
ALTER TABLE "MailOutbox" ADD COLUMN     "adminOnly" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "PolicyVersion" ADD COLUMN     "publishedById" TEXT;

-- AlterTable
ALTER TABLE "StaffUser" ADD COLUMN     "deactivatedAt" TIMESTAMP(3),
ALTER COLUMN "passwordHash" DROP NOT NULL;

-- AlterTable
ALTER TABLE "Tenant" ADD COLUMN     "widgetSecretPrevious" TEXT,
ADD COLUMN     "widgetSecretPreviousUntil" TIMESTAMP(3),
ADD COLUMN     "widgetSecretRotatedAt" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "StaffInvite" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "staffId" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),
    "createdById" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "StaffInvite_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "StaffInvite_tokenHash_key" ON "StaffInvite"("tokenHash");

-- CreateIndex
CREATE INDEX "StaffInvite_staffId_idx" ON "StaffInvite"("staffId");

-- The what-if replays a shop's recent gated calls (lib/settings/what-if.ts). Partial: only a query asking for gated
-- calls can use it, so it never competes with the order-number search's GIN index; neither column changes after the
-- insert, so updates of a call stay HOT.
CREATE INDEX "ToolCall_gated_by_tenant_time" ON "ToolCall" ("tenantId", "createdAt") WHERE "gateFacts" IS NOT NULL;

-- AddForeignKey
ALTER TABLE "StaffInvite" ADD CONSTRAINT "StaffInvite_staffId_fkey" FOREIGN KEY ("staffId") REFERENCES "StaffUser"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

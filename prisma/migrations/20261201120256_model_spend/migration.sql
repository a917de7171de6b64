-- AlterTable
ALTER TABLE "ModelCall" ADD COLUMN     "costMicros" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "TenantSpend" (
    "tenantId" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "shard" INTEGER NOT NULL,
    "costMicros" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "TenantSpend_pkey" PRIMARY KEY ("tenantId","day","shard")
);

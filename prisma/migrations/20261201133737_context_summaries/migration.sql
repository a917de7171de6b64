-- AlterTable
ALTER TABLE "ModelCall" ADD COLUMN     "contextFromSeq" INTEGER,
ADD COLUMN     "contextSummaryId" TEXT,
ADD COLUMN     "requestTokens" INTEGER;

-- CreateTable
CREATE TABLE "ContextSummary" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "conversationId" TEXT NOT NULL,
    "throughSeq" INTEGER NOT NULL,
    "content" JSONB NOT NULL,
    "tokens" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ContextSummary_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ContextSummary_conversationId_throughSeq_key" ON "ContextSummary"("conversationId", "throughSeq");

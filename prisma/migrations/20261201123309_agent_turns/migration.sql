-- AlterTable
ALTER TABLE "ModelCall" ADD COLUMN     "scope" TEXT;

-- AlterTable
ALTER TABLE "ToolCall" ADD COLUMN     "scope" TEXT;

-- CreateTable
CREATE TABLE "AgentTurn" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "specialist" TEXT NOT NULL,
    "messages" JSONB NOT NULL,
    "status" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AgentTurn_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "AgentTurn_runId_scope_key" ON "AgentTurn"("runId", "scope");

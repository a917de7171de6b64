-- DropIndex
DROP INDEX "Conversation_tenantId_updatedAt_idx";

-- CreateIndex
CREATE INDEX "Handoff_tenantId_createdAt_id_idx" ON "Handoff"("tenantId", "createdAt", "id");

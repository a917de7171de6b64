-- CreateIndex
CREATE INDEX "MailOutbox_tenantId_to_createdAt_idx" ON "MailOutbox"("tenantId", "to", "createdAt");

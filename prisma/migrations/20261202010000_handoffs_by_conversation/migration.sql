-- A conversation's pending approvals: the widget's view counts them on every read.
CREATE INDEX "Handoff_conversationId_status_idx" ON "Handoff"("conversationId", "status");

-- Money limits apply to totals (lib/tools/order-helpers.ts `moneyFacts`), read on every refund or replacement the
-- model proposes: what waits on an order, and what was done automatically for a customer within a window. These
-- partial indexes hold only the rows those reads look at.
CREATE INDEX "ToolCall_open_money_by_order" ON "ToolCall" ("tenantId", name, (("gateFacts"->>'orderNumber')))
  WHERE status IN ('PARKED', 'DEFERRED', 'APPROVED', 'EXECUTING', 'RETRY_WAIT');

CREATE INDEX "ToolCall_auto_money_by_customer" ON "ToolCall" ("tenantId", name, (("gateFacts"->>'customerId')), "createdAt")
  WHERE "decidedById" IS NULL AND status IN ('SUCCEEDED', 'APPROVED', 'EXECUTING', 'RETRY_WAIT');

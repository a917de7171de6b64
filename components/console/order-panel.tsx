import { Badge, type BadgeTone } from "@/components/ui/badge";
import { Section } from "@/components/ui/section";
import { addressInWords } from "@/lib/console/agent-tried";
import { LocalTime } from "@/components/ui/local-time";
import type { HandoffDetail } from "@/lib/console/queries";
import { formatCents } from "@/lib/money";

const STATUS_TONE: Record<string, BadgeTone> = {
  processing: "blue",
  shipped: "blue",
  delivered: "green",
  lost: "red",
  cancelled: "gray",
};

function Fact({ term, children, testId }: { term: string; children: React.ReactNode; testId?: string }) {
  return (
    <div className="flex gap-2 py-0.5">
      <dt className="w-28 shrink-0 text-slate-600">{term}</dt>
      <dd data-testid={testId}>{children}</dd>
    </div>
  );
}

/**
 * The order a handoff is about, beside the decision: status, items, amounts, delivery and tracking, what was
 * already refunded or replaced on it — and the customer's refunds and replacements across their orders, dated.
 */
export function OrderPanel({ facts }: { facts: HandoffDetail["order"] }) {
  const o = facts.order;
  const others = facts.history.filter((e) => e.orderNumber !== o?.number);
  const onThis = facts.history.filter((e) => e.orderNumber === o?.number);
  return (
    <Section title={o ? `Order ${o.number}` : "Order"} id="order">
      {!o ? (
        <p className="text-sm text-slate-600" data-testid="order-missing">
          {facts.orderNumber ? `This shop has no order ${facts.orderNumber}.` : "The record names no order."}
        </p>
      ) : (
        <div className="space-y-3 text-sm" data-testid="order-panel">
          <dl>
            <Fact term="Status" testId="order-status">
              <Badge tone={STATUS_TONE[o.status] ?? "gray"}>{o.status}</Badge>
              {o.note ? <span className="ml-2 text-slate-700">“{o.note}”</span> : null}
            </Fact>
            <Fact term="Placed">
              <LocalTime at={o.placedAt} style="date" />
            </Fact>
            <Fact term="Total" testId="order-amounts">
              {formatCents(o.totalCents)} · refunded {formatCents(o.refundedCents)} · still refundable {formatCents(o.refundableCents)}
            </Fact>
            <Fact term="Ships to">{addressInWords(o.shippingAddress)}</Fact>
            {facts.verifiedAsOwner === false ? (
              <Fact term="Identity">
                <span className="font-medium text-red-800">The conversation is verified as someone else, not this order's customer.</span>
              </Fact>
            ) : null}
          </dl>

          <div>
            <h3 className="text-xs font-semibold uppercase text-slate-600">Items</h3>
            {o.items.length ? (
              <table className="mt-1 w-full" data-testid="order-items">
                <tbody>
                  {o.items.map((i) => (
                    <tr key={i.sku} className="border-t border-slate-100">
                      <td className="py-1 pr-2">
                        {i.quantity} × {i.name} <span className="font-mono text-xs text-slate-500">{i.sku}</span>
                      </td>
                      <td className="py-1 text-right tabular-nums">{formatCents(i.lineCents)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : (
              <p className="text-slate-600">No line items recorded for this order.</p>
            )}
          </div>

          <div>
            <h3 className="text-xs font-semibold uppercase text-slate-600">Delivery</h3>
            {o.shipments.length ? (
              <ul className="mt-1 space-y-0.5" data-testid="order-shipments">
                {o.shipments.map((s) => (
                  <li key={`${s.kind}-${s.tracking}`}>
                    {s.kind === "replacement" ? "Replacement" : "Shipment"}: {s.carrier}{" "}
                    <span className="font-mono text-xs">{s.tracking}</span> — {s.status.replace(/_/g, " ")},{" "}
                    <LocalTime at={s.at} style="date" />
                  </li>
                ))}
              </ul>
            ) : (
              <p className="text-slate-600">Not shipped yet.</p>
            )}
          </div>

          <div>
            <h3 className="text-xs font-semibold uppercase text-slate-600">Already done on this order</h3>
            {onThis.length ? (
              <ul className="mt-1 space-y-0.5" data-testid="order-history">
                {onThis.map((e) => (
                  <li key={e.id}>
                    <LocalTime at={e.at} style="date" />:{" "}
                    {e.kind === "refund" ? `refunded ${formatCents(e.amountCents ?? 0)} — “${e.detail}”` : `replacement sent (${e.detail})`}
                  </li>
                ))}
              </ul>
            ) : (
              <p className="text-slate-600" data-testid="order-history">
                No refunds or replacements yet.
              </p>
            )}
          </div>
        </div>
      )}

      {facts.customer ? (
        <div className="mt-3 border-t border-slate-100 pt-3 text-sm">
          <h3 className="text-xs font-semibold uppercase text-slate-600">
            For this customer ({facts.customer.orderCount} {facts.customer.orderCount === 1 ? "order" : "orders"})
          </h3>
          {others.length ? (
            <ul className="mt-1 space-y-0.5" data-testid="customer-history">
              {others.map((e) => (
                <li key={e.id}>
                  <LocalTime at={e.at} style="date" />, {e.orderNumber}:{" "}
                  {e.kind === "refund" ? `refunded ${formatCents(e.amountCents ?? 0)} — “${e.detail}”` : `replacement sent (${e.detail})`}
                </li>
              ))}
            </ul>
          ) : (
            <p className="text-slate-600" data-testid="customer-history">
              No refunds or replacements on their other orders.
            </p>
          )}
          <p className="mt-1 text-slate-700">
            In all: {formatCents(facts.historyTotals.refundedCents)} refunded in {facts.historyTotals.refunds}{" "}
            {facts.historyTotals.refunds === 1 ? "refund" : "refunds"}, {facts.historyTotals.replacements}{" "}
            {facts.historyTotals.replacements === 1 ? "replacement" : "replacements"}.
          </p>
        </div>
      ) : null}
    </Section>
  );
}

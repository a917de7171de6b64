import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { Badge } from "@/components/ui/badge";
import { LocalTime } from "@/components/ui/local-time";
import { Section } from "@/components/ui/section";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { webhookDeliveryLog } from "@/lib/settings/webhooks";
import { AdminsOnly } from "../../admins-only";

export const metadata: Metadata = { title: "Delivery log · Webhooks · Settings · Support console" };
export const dynamic = "force-dynamic";

const STATUS_TONE = { delivered: "green", pending: "amber", failed: "red" } as const;

/** One endpoint's deliveries, newest first, each with every attempt: what came back, how long it took, what is next. */
export default async function DeliveryLogPage({ params }: { params: Promise<{ endpointId: string }> }) {
  const { endpointId } = await params;
  const staff = await requireStaffPage(`/console/settings/webhooks/${encodeURIComponent(endpointId)}`);
  let log: Awaited<ReturnType<typeof webhookDeliveryLog>>;
  try {
    log = await webhookDeliveryLog(await getPrisma(), staff, endpointId);
  } catch (err) {
    if (err instanceof AppError && err.code === "FORBIDDEN") return <AdminsOnly />;
    if (err instanceof AppError && err.code === "NOT_FOUND") notFound();
    throw err;
  }
  return (
    <div className="space-y-4">
      <div>
        <p className="text-sm">
          <Link href="/console/settings/webhooks" className="font-medium text-blue-700 underline">
            ← Webhooks
          </Link>
        </p>
        <h1 className="text-xl font-semibold">Delivery log</h1>
        <p className="break-all text-sm text-slate-600">
          <code>{log.endpoint.url}</code> {log.endpoint.enabled ? null : <Badge tone="gray">disabled</Badge>}
        </p>
      </div>
      <Section title={`Latest deliveries (${log.deliveries.length})`}>
        {log.deliveries.length === 0 ? (
          <p className="text-sm text-slate-600">Nothing sent yet. Events appear here within seconds of happening.</p>
        ) : (
          <ul className="divide-y divide-slate-100">
            {log.deliveries.map((d) => (
              <li key={d.id} className="py-3" data-testid="webhook-delivery" aria-label={`${d.eventType} ${d.status}`}>
                <div className="flex flex-wrap items-center gap-2 text-sm">
                  <code className="font-medium">{d.eventType}</code>
                  <Badge tone={STATUS_TONE[d.status]}>{d.status}</Badge>
                  <span className="text-slate-600">
                    event id <code data-testid="webhook-event-id">{d.eventId}</code>
                  </span>
                  <span className="text-slate-600">
                    queued <LocalTime at={d.createdAt} />
                  </span>
                  {d.nextAttemptAt ? (
                    <span className="text-slate-600">
                      next try <LocalTime at={d.nextAttemptAt} />
                    </span>
                  ) : null}
                </div>
                {d.attemptLog.length ? (
                  <table className="mt-2 w-full text-left text-xs">
                    <thead className="uppercase text-slate-600">
                      <tr>
                        <th className="py-1 pr-3 font-medium">Attempt</th>
                        <th className="py-1 pr-3 font-medium">When</th>
                        <th className="py-1 pr-3 font-medium">Answer</th>
                        <th className="py-1 pr-3 font-medium">Took</th>
                        <th className="py-1 pr-3 font-medium">Error</th>
                        <th className="py-1 font-medium">Next retry</th>
                      </tr>
                    </thead>
                    <tbody>
                      {d.attemptLog.map((a) => (
                        <tr key={a.attempt} data-testid="webhook-attempt">
                          <td className="py-1 pr-3">{a.attempt}</td>
                          <td className="py-1 pr-3">
                            <LocalTime at={a.at} />
                          </td>
                          <td className="py-1 pr-3">{a.statusCode ? `HTTP ${a.statusCode}` : "no answer"}</td>
                          <td className="py-1 pr-3">{a.durationMs} ms</td>
                          <td className="break-all py-1 pr-3">{a.error ?? "—"}</td>
                          <td className="py-1">{a.nextRetryAt ? <LocalTime at={a.nextRetryAt} /> : "—"}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                ) : (
                  <p className="mt-1 text-xs text-slate-600">Not tried yet.</p>
                )}
              </li>
            ))}
          </ul>
        )}
      </Section>
    </div>
  );
}

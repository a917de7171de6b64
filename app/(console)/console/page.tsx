import type { Metadata } from "next";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { queueFilterFromParams, queueFilterToParams } from "@/lib/console/filters";
import { eventHead, queueHandoffs } from "@/lib/console/queries";
import { QueueView } from "./queue-view";

export const metadata: Metadata = { title: "Queue · Support console" };
export const dynamic = "force-dynamic";

/** The reviewer queue: server-rendered first page, then live (see QueueView). */
export default async function QueuePage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const filter = queueFilterFromParams(await searchParams);
  const qs = queueFilterToParams(filter).toString();
  const staff = await requireStaffPage(`/console${qs ? `?${qs}` : ""}`);
  const db = await getPrisma();
  // The head first, then the data: any change after this cursor is picked up by the live feed.
  const cursor = await eventHead(db, staff.tenantId);
  const items = await queueHandoffs(db, staff, filter);
  return (
    <QueueView
      initialItems={items}
      initialFilter={filter}
      initialCursor={cursor}
      me={{ staffId: staff.staffId, authorityLimitCents: staff.authorityLimitCents }}
    />
  );
}

import type { Metadata } from "next";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { orNotFound } from "@/lib/console/page-data";
import { eventHead, handoffDetail } from "@/lib/console/queries";
import { HandoffView } from "./handoff-view";

export const metadata: Metadata = { title: "Handoff · Support console" };
export const dynamic = "force-dynamic";

/** One handoff: the self-contained record and the decision (see HandoffView). Another shop's id → 404. */
export default async function HandoffPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const staff = await requireStaffPage(`/console/handoffs/${encodeURIComponent(id)}`);
  const db = await getPrisma();
  const cursor = await eventHead(db, staff.tenantId);
  const detail = await orNotFound(handoffDetail(db, staff.tenantId, id));
  return (
    <HandoffView
      initial={detail}
      initialCursor={cursor}
      me={{ staffId: staff.staffId, name: staff.name, role: staff.role, authorityLimitCents: staff.authorityLimitCents }}
    />
  );
}

import type { Metadata } from "next";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { orNotFound } from "@/lib/console/page-data";
import { conversationDetail, eventHead } from "@/lib/console/queries";
import { ConversationView } from "./conversation-view";

export const metadata: Metadata = { title: "Conversation · Support console" };
export const dynamic = "force-dynamic";

/** An escalated (or any) conversation, live, with take over / reply / hand back. Another shop's id → 404. */
export default async function ConversationPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const staff = await requireStaffPage(`/console/conversations/${encodeURIComponent(id)}`);
  const db = await getPrisma();
  const cursor = await eventHead(db, staff.tenantId);
  const detail = await orNotFound(conversationDetail(db, staff.tenantId, id));
  return <ConversationView initial={detail} initialCursor={cursor} me={{ staffId: staff.staffId, name: staff.name }} />;
}

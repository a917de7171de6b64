import type { Metadata } from "next";
import { headers } from "next/headers";
import { requireStaffPage } from "@/lib/auth/session";
import { getPrisma } from "@/lib/db/client";
import { publicAppUrl } from "@/lib/settings/app-url";
import { embedSnippet, widgetSettings } from "@/lib/settings/widget";
import { AdminsOnly } from "../admins-only";
import { WidgetSettingsView } from "./widget-settings";

export const metadata: Metadata = { title: "Widget · Settings · Support console" };
export const dynamic = "force-dynamic";

/** The chat on the shop's site: the snippet to paste, the pages allowed to host it, the identity secret. */
export default async function WidgetSettingsPage() {
  const staff = await requireStaffPage("/console/settings/widget");
  if (staff.role !== "admin") return <AdminsOnly />;
  const settings = await widgetSettings(await getPrisma(), staff);
  return <WidgetSettingsView settings={settings} snippet={embedSnippet(publicAppUrl(await headers()), settings.slug)} />;
}

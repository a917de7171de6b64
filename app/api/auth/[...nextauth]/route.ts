import NextAuth from "next-auth";
import { getAuthOptions } from "@/lib/auth/options";

// next-auth v4's App Router handler; options are built on first use (see lib/auth/options).
type Ctx = { params: Promise<{ nextauth: string[] }> };

async function handler(req: Request, ctx: Ctx): Promise<Response> {
  return NextAuth(req as never, ctx as never, getAuthOptions());
}

export { handler as GET, handler as POST };

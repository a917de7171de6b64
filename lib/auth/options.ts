import type { NextAuthOptions } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { getPrisma } from "@/lib/db/client";
import { parseSessionClaims } from "./claims";
import { verifyStaffCredentials } from "./credentials";
import { authSecret } from "./secret";

/** Staff sessions last a working day; the staff row is re-read on every request anyway. */
const SESSION_MAX_AGE_S = 12 * 60 * 60;

let cached: NextAuthOptions | undefined;

/**
 * next-auth configuration: email + password (bcrypt) for staff, stateless JWT sessions that carry the
 * staff id, tenant, role and name. Built lazily so the secret is resolved (and its warning printed) at the
 * first request, not at build time. NEXTAUTH_URL is read by next-auth itself.
 */
export function getAuthOptions(): NextAuthOptions {
  cached ??= {
    secret: authSecret(),
    session: { strategy: "jwt", maxAge: SESSION_MAX_AGE_S },
    pages: { signIn: "/login", error: "/login" },
    providers: [
      CredentialsProvider({
        id: "credentials",
        name: "Email and password",
        credentials: { email: { label: "Email", type: "email" }, password: { label: "Password", type: "password" } },
        async authorize(credentials) {
          const claims = await verifyStaffCredentials(await getPrisma(), credentials?.email, credentials?.password);
          // next-auth wants `id`; the rest travels to the jwt callback as `user`.
          return claims ? { id: claims.staffId, ...claims } : null;
        },
      }),
    ],
    callbacks: {
      async jwt({ token, user }) {
        // `user` is present only at sign-in: copy the claims into the token once.
        if (user) {
          const claims = parseSessionClaims(user);
          if (claims) Object.assign(token, claims, { sub: claims.staffId });
        }
        return token;
      },
      async session({ session, token }) {
        const claims = parseSessionClaims(token);
        return { ...session, user: claims ? { ...claims } : undefined } as typeof session;
      },
    },
  };
  return cached;
}

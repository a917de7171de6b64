import type { Prisma, PrismaClient } from "@/lib/generated/prisma/client";

export type { PrismaClient };
export { Prisma } from "@/lib/generated/prisma/client";
/** Either the client or an interactive transaction: functions that only read/write take this. */
export type PrismaTx = Prisma.TransactionClient;
export type Json = Prisma.InputJsonValue;

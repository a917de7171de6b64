-- AlterTable
ALTER TABLE "Event" ADD COLUMN     "txid" xid8 DEFAULT pg_current_xact_id();

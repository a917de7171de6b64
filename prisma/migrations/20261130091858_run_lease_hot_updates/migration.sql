-- DropIndex
DROP INDEX "Run_phase_leaseExpiresAt_idx";

/**
 * How long a staff invitation's link works (lib/settings/staff), and so how long its mail, left unsent by a process
 * that stopped, may still be sent by a worker (lib/runtime/after-commit).
 */
export const INVITE_TTL_HOURS = 72;

// The fields the console's URL filters share (the runs list, the metrics period): a blank or missing parameter is
// "not given", a day is YYYY-MM-DD, a time zone one this server knows. Each says what is wrong in the user's words.
import { z } from "zod";
import { isTimeZone, parseDay } from "./dates";

export const emptyToUndefined = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v === null ? undefined : v);

/** An optional day (`which` names it in the error: "From", "To"). */
export const dayField = (which: string) =>
  z.preprocess(
    emptyToUndefined,
    z
      .string()
      .refine((v) => parseDay(v) !== null, `${which}: use a date like 2026-12-01`)
      .optional(),
  );

/** An optional IANA time zone, as the browser reports it. */
export const timeZoneField = () =>
  z.preprocess(emptyToUndefined, z.string().refine(isTimeZone, "Time zone: not one this server knows.").optional());

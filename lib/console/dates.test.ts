import { describe, expect, it } from "vitest";
import { addDays, dayIn, dayRange, formatDay, formatWhen, isTimeZone, parseDay, zonedDayStart } from "./dates";

describe("console dates", () => {
  it("formats a moment as people read it", () => {
    expect(formatWhen("2026-12-01T10:42:00Z", "UTC")).toBe("1 Dec 2026, 10:42");
    expect(formatWhen("2026-12-01T10:42:00Z", "America/New_York")).toBe("1 Dec 2026, 05:42");
    expect(formatDay("2026-12-01T23:30:00Z", "UTC")).toBe("1 Dec 2026");
  });

  it("reads only real calendar days", () => {
    expect(parseDay("2026-02-28")).toEqual({ y: 2026, m: 2, d: 28 });
    expect(parseDay("2026-02-30")).toBeNull();
    expect(parseDay("1/12/2026")).toBeNull();
  });

  it("a day range covers whole days, the end day included", () => {
    expect(dayRange("2026-12-01", "2026-12-31")).toEqual({
      gte: new Date("2026-12-01T00:00:00Z"),
      lt: new Date("2027-01-01T00:00:00Z"),
    });
    expect(dayRange(undefined, "2026-12-01")).toEqual({ lt: new Date("2026-12-02T00:00:00Z") });
    expect(dayRange()).toEqual({});
  });

  it("reads a day range in the viewer's time zone, across DST changes too", () => {
    expect(dayRange("2026-12-01", "2026-12-01", "Asia/Tokyo")).toEqual({
      gte: new Date("2026-11-30T15:00:00Z"),
      lt: new Date("2026-12-01T15:00:00Z"),
    });
    // New York leaves DST on 1 Nov 2026: that day is 25 hours long.
    expect(dayRange("2026-11-01", "2026-11-01", "America/New_York")).toEqual({
      gte: new Date("2026-11-01T04:00:00Z"),
      lt: new Date("2026-11-02T05:00:00Z"),
    });
    expect(zonedDayStart(2026, 3, 29, "Europe/Berlin")).toEqual(new Date("2026-03-28T23:00:00Z"));
    expect(dayIn("2026-11-30T15:30:00Z", "Asia/Tokyo")).toBe("2026-12-01");
    expect(addDays("2026-12-01", -30)).toBe("2026-11-01");
    expect(isTimeZone("Asia/Tokyo")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
  });
});

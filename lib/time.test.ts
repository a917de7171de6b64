import { createElement } from "react";
import { renderToString } from "react-dom/server";
import { afterEach, describe, expect, it } from "vitest";
import { LocalTime } from "@/components/ui/local-time";
import { formatMoment, isoOf } from "./time";

const AT = "2026-01-05T15:04:00.000Z";

describe("dates in the viewer's time zone", () => {
  const zone = process.env.TZ;
  afterEach(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });

  it("formats in the runtime's own zone by default — a browser's is the viewer's", () => {
    process.env.TZ = "America/New_York";
    expect(formatMoment(AT, "time", { locale: "en-US" })).toBe("10:04 AM");
    expect(formatMoment(AT, "datetime", { locale: "en-US" })).toBe("Jan 5, 2026, 10:04 AM");
    process.env.TZ = "Asia/Tokyo";
    expect(formatMoment(AT, "datetime", { locale: "en-US" })).toBe("Jan 6, 2026, 12:04 AM");
    expect(formatMoment(new Date(AT), "date", { locale: "en-US" })).toBe("Jan 6, 2026");
  });

  it("names any other zone it is asked for, so a server-rendered time is never taken for local time", () => {
    expect(formatMoment(AT, "datetime", { timeZone: "UTC", locale: "en-US" })).toBe("Jan 5, 2026, 3:04 PM UTC");
    expect(formatMoment(AT, "time", { timeZone: "UTC", locale: "en-US" })).toBe("3:04 PM UTC");
    expect(formatMoment("not a date")).toBe("");
    expect(isoOf(new Date(AT))).toBe(AT);
  });

  it("a 24-hour clock shows the hour in two digits, a 12-hour one does not (a night hour too)", () => {
    const night = "2026-12-02T02:01:00.000Z";
    process.env.TZ = "UTC"; // the viewer's own zone: no zone name, as a browser shows it
    expect(formatMoment(night, "datetime", { locale: "en-GB" })).toBe("2 Dec 2026, 02:01");
    expect(formatMoment(night, "time", { locale: "de-DE" })).toBe("02:01");
    expect(formatMoment(night, "datetime", { locale: "en-US" })).toBe("Dec 2, 2026, 2:01 AM");
    expect(formatMoment(night, "time", { locale: "en-US" })).toBe("2:01 AM");
    expect(formatMoment(night, "datetime", { locale: "en-GB", timeZone: "UTC" })).toBe("2 Dec 2026, 02:01 UTC");
  });

  it("<LocalTime> renders the exact instant and UTC on the server, whatever the server's own zone", () => {
    process.env.TZ = "Pacific/Auckland"; // the server's zone must not leak into the page
    const html = renderToString(createElement(LocalTime, { at: AT }));
    expect(html).toBe(`<time dateTime="${AT}" title="${AT}">Jan 5, 2026, 3:04 PM UTC</time>`);
    const time = renderToString(createElement(LocalTime, { at: new Date(AT), style: "time", className: "x" }));
    expect(time).toBe(`<time dateTime="${AT}" title="${AT}" class="x">3:04 PM UTC</time>`);
  });
});

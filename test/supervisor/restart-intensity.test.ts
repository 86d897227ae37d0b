import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../mesh/errors.ts";
import { RestartIntensity } from "../../src/supervisor/restart-intensity.ts";
import { restartGroup } from "../../src/supervisor/strategy-group.ts";

describe("RestartIntensity", () => {
  test("OTP defaults: 1 restart in 5 s is fine, a 2nd within 5 s exceeds", () => {
    const window = new RestartIntensity();
    expect([window.intensity, window.period]).toEqual([1, 5000]);
    expect(window.record(0)).toBe(false);
    expect(window.record(4999)).toBe(true);
  });

  test("the window slides: old restarts stop counting", () => {
    const window = new RestartIntensity(2, 1000);
    expect([window.record(0), window.record(500), window.record(1000)]).toEqual([false, false, false]);
    expect(window.count(1000)).toBe(2); // the one at 0 left the window
    expect(window.record(1200)).toBe(true); // 500, 1000, 1200
    expect(window.count(2300)).toBe(0);
  });

  test("intensity 0 gives up at the first restart", () => {
    expect(new RestartIntensity(0, 5000).record(0)).toBe(true);
  });

  test("refuses a negative intensity or a non-positive period", () => {
    expect(() => new RestartIntensity(-1)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_REQUEST }));
    expect(() => new RestartIntensity(1.5)).toThrow();
    expect(() => new RestartIntensity(1, 0)).toThrow();
  });
});

describe("restartGroup", () => {
  test("which children each strategy restarts", () => {
    expect(restartGroup("one_for_one", 4, 1)).toEqual([1]);
    expect(restartGroup("one_for_all", 4, 1)).toEqual([0, 1, 2, 3]);
    expect(restartGroup("rest_for_one", 4, 1)).toEqual([1, 2, 3]);
    expect(restartGroup("rest_for_one", 4, 3)).toEqual([3]);
  });
});

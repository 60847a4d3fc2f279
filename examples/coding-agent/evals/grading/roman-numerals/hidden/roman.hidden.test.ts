// EXAMPLE PROBLEM: the hidden tests, copied in only after the agent has exited.
import { describe, expect, test } from "vitest";

import { fromRoman, toRoman } from "../src/roman";

describe("hidden", () => {
  test("largest and mixed numerals", () => {
    expect(toRoman(3999)).toBe("MMMCMXCIX");
    expect(toRoman(3888)).toBe("MMMDCCCLXXXVIII");
    expect(toRoman(444)).toBe("CDXLIV");
    expect(toRoman(49)).toBe("XLIX");
  });

  test("every number survives the round trip", () => {
    for (let n = 1; n <= 3999; n++) {
      expect(fromRoman(toRoman(n))).toBe(n);
    }
  });

  test("reading the extremes", () => {
    expect(fromRoman("I")).toBe(1);
    expect(fromRoman("MMMCMXCIX")).toBe(3999);
    expect(fromRoman("CDXLIV")).toBe(444);
  });

  test("negative numbers, fractions, NaN and infinity are rejected", () => {
    for (const n of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => toRoman(n)).toThrow(RangeError);
    }
  });

  test("non-standard numerals are rejected", () => {
    for (const numeral of ["IIII", "VV", "IC", "IL", "XM", "VX", "IIX", "MMMM", "CCCC"]) {
      expect(() => fromRoman(numeral)).toThrow(RangeError);
    }
  });

  test("strings that are not numerals are rejected", () => {
    for (const numeral of ["", "iv", "ABC", " X", "X ", "X1"]) {
      expect(() => fromRoman(numeral)).toThrow(RangeError);
    }
  });
});

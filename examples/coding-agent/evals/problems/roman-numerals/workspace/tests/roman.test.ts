// EXAMPLE PROBLEM: the public tests, visible to the agent in its workspace.
import { describe, expect, test } from "vitest";

import { fromRoman, toRoman } from "../src/roman";

describe("public", () => {
  test("numerals without subtraction", () => {
    expect(toRoman(1)).toBe("I");
    expect(toRoman(3)).toBe("III");
    expect(toRoman(8)).toBe("VIII");
    expect(toRoman(2026)).toBe("MMXXVI");
  });

  test("subtractive forms", () => {
    expect(toRoman(4)).toBe("IV");
    expect(toRoman(9)).toBe("IX");
    expect(toRoman(14)).toBe("XIV");
    expect(toRoman(40)).toBe("XL");
    expect(toRoman(90)).toBe("XC");
    expect(toRoman(400)).toBe("CD");
    expect(toRoman(1994)).toBe("MCMXCIV");
  });

  test("reading numerals", () => {
    expect(fromRoman("XLII")).toBe(42);
    expect(fromRoman("MCMXCIV")).toBe(1994);
  });

  test("numbers outside 1..3999 are rejected", () => {
    expect(() => toRoman(0)).toThrow(RangeError);
    expect(() => toRoman(4000)).toThrow(RangeError);
  });
});

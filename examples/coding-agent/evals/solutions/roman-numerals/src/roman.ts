// EXAMPLE PROBLEM: the reference solution, outside the workspace; the oracle agent copies it in.

const SYMBOLS: ReadonlyArray<readonly [number, string]> = [
  [1000, "M"],
  [900, "CM"],
  [500, "D"],
  [400, "CD"],
  [100, "C"],
  [90, "XC"],
  [50, "L"],
  [40, "XL"],
  [10, "X"],
  [9, "IX"],
  [5, "V"],
  [4, "IV"],
  [1, "I"],
];

// The standard form of 1..3999: thousands, hundreds, tens, units.
const STANDARD = /^M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$/;

/** Write an integer from 1 to 3999 as a Roman numeral in the standard form. */
export function toRoman(n: number): string {
  if (!Number.isInteger(n) || n < 1 || n > 3999) {
    throw new RangeError(`toRoman: expected an integer from 1 to 3999, got ${n}`);
  }
  let rest = n;
  let numeral = "";
  for (const [value, symbol] of SYMBOLS) {
    while (rest >= value) {
      numeral += symbol;
      rest -= value;
    }
  }
  return numeral;
}

/** Read a Roman numeral in the standard form (exactly what `toRoman` writes). */
export function fromRoman(numeral: string): number {
  if (numeral === "" || !STANDARD.test(numeral)) {
    throw new RangeError(`fromRoman: not a standard Roman numeral: ${JSON.stringify(numeral)}`);
  }
  let value = 0;
  let index = 0;
  for (const [symbolValue, symbol] of SYMBOLS) {
    while (numeral.startsWith(symbol, index)) {
      value += symbolValue;
      index += symbol.length;
    }
  }
  return value;
}

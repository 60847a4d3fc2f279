// EXAMPLE PROBLEM: the code the agent is asked to finish (see problem.md).

const SYMBOLS: ReadonlyArray<readonly [number, string]> = [
  [1000, "M"],
  [500, "D"],
  [100, "C"],
  [50, "L"],
  [10, "X"],
  [5, "V"],
  [1, "I"],
];

/** Write `n` as a Roman numeral. Unfinished: no subtractive forms (4 comes out as IIII), no range check. */
export function toRoman(n: number): string {
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

/** Read a Roman numeral. Not written yet. */
export function fromRoman(numeral: string): number {
  throw new Error(`fromRoman(${JSON.stringify(numeral)}): not implemented`);
}

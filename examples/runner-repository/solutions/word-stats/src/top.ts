import { words } from './count.js';

/** A word and how often it occurs. */
export type WordCount = [word: string, count: number];

/** The `n` most frequent words of `text`, lower-cased, most frequent first; ties alphabetically. */
export function topWords(text: string, n: number): WordCount[] {
  const counts = new Map<string, number>();
  for (const word of words(text.toLowerCase())) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, n);
}

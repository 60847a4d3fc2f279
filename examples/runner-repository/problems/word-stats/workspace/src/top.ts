/** A word and how often it occurs. */
export type WordCount = [word: string, count: number];

/** The `n` most frequent words of `text`, most frequent first. */
export function topWords(text: string, n: number): WordCount[] {
  throw new Error(`topWords is not implemented (asked for ${n} of ${text.length} characters)`);
}

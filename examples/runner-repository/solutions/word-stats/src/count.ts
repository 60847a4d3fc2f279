/** The words of `text`: its runs of characters other than whitespace. */
export function words(text: string): string[] {
  return text.split(/\s+/).filter((word) => word.length > 0);
}

/** The number of words in `text`. */
export function countWords(text: string): number {
  return words(text).length;
}

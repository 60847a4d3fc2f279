/** The number of words in `text`. */
export function countWords(text: string): number {
  return text.split(' ').length;
}

/** @param {string} text @returns {string[]} */
function words(text) {
  return text.split(/\s+/).filter((word) => word.length > 0);
}

/** @param {string} text @returns {number} */
export function countWords(text) {
  return words(text).length;
}

/** @param {string} text @param {number} n @returns {Array<[string, number]>} */
export function topWords(text, n) {
  const counts = new Map();
  for (const word of words(text.toLowerCase())) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .slice(0, n);
}

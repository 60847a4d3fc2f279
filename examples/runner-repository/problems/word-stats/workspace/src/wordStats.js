/** @param {string} text @returns {number} */
export function countWords(text) {
  return text.split(' ').length;
}

/** @param {string} text @param {number} n @returns {Array<[string, number]>} */
export function topWords(text, n) {
  throw new Error(`topWords(${JSON.stringify(text)}, ${n}) is not implemented`);
}

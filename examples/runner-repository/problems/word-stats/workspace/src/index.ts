export { countWords } from './count.js';
export { topWords, type WordCount } from './top.js';

import { describe, expect, it } from 'vitest';
import { countWords } from '../../src/count.js';

describe('countWords (public)', () => {
  it('counts words separated by single spaces', () => {
    expect(countWords('one two three')).toBe(3);
  });
});

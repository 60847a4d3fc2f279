import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countWords } from '../../src/wordStats.js';

test('counts words separated by single spaces', () => {
  assert.equal(countWords('one two three'), 3);
});

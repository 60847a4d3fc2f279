import { describe, expect } from 'vitest';
import { subtasks } from './subtasks.js';

// Imported in each test, so a module that does not load fails its subtasks and still gets a results file.
const load = (): Promise<typeof import('@workspace/top')> => import('@workspace/top');
const task = subtasks('top');

describe('topWords', () => {
  task('top-words', async () => {
    const { topWords } = await load();
    expect(topWords('b a B c b a', 2)).toEqual([
      ['b', 3],
      ['a', 2],
    ]);
  });

  task('top-words-ties', async () => {
    const { topWords } = await load();
    expect(topWords('z y x\ny', 3)).toEqual([
      ['y', 2],
      ['x', 1],
      ['z', 1],
    ]);
  });
});

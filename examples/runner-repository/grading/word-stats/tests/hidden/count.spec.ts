import { describe, expect } from 'vitest';
import { subtasks } from './subtasks.js';

// Imported in each test, so a module that does not load fails its subtasks and still gets a results file.
const load = (): Promise<typeof import('@workspace/count')> => import('@workspace/count');
const task = subtasks('count');

describe('countWords', () => {
  task('count-simple', async () => {
    const { countWords } = await load();
    expect(countWords('a b c')).toBe(3);
  });

  task('count-whitespace', async () => {
    const { countWords } = await load();
    expect(countWords(' a \n b\t\tc  ')).toBe(3);
  });

  task('count-empty', async () => {
    const { countWords } = await load();
    expect(countWords('')).toBe(0);
    expect(countWords(' \n\t ')).toBe(0);
  });
});

// The hidden tests import the agent's work as `@workspace/<module>`: workspace/src of this folder,
// where the work is copied before grading; without it (run by hand here) the problem's template,
// by its path in the repository.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = dirname(fileURLToPath(import.meta.url));
const copied = resolve(here, 'workspace', 'src');
const sources = existsSync(copied) ? copied : resolve(here, '../../problems/word-stats/workspace/src');

export default defineConfig({
  test: {
    include: ['tests/hidden/**/*.spec.ts'],
  },
  resolve: {
    alias: {
      '@workspace': sources,
    },
  },
});

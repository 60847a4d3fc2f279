// The grading package's lint of the agent's work (workspace/src, workspace/tests): ESLint's and
// typescript-eslint's recommended rules and a few stricter ones, whatever the workspace's own config says.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['node_modules/', 'coverage/', 'workspace/node_modules/', 'workspace/results/']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['workspace/**/*.ts'],
    rules: {
      complexity: ['error', 10],
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/explicit-function-return-type': ['error', { allowExpressions: true }],
    },
  },
);

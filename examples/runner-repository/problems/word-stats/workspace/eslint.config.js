// ESLint's recommended rules and typescript-eslint's, on the TypeScript sources and tests.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['node_modules/', 'coverage/', 'results/']),
  js.configs.recommended,
  tseslint.configs.recommended,
);

// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**'],
    rules: { 'no-console': 'error' },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/jobs/session.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'node:child_process',
              message: 'Only src/jobs/git.ts and src/jobs/process.ts may spawn processes.',
            },
          ],
          patterns: [
            {
              group: ['@anthropic-ai/claude-agent-sdk', '@anthropic-ai/claude-agent-sdk/*'],
              message: 'Only src/jobs/session.ts imports the Agent SDK.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/jobs/git.ts', 'src/jobs/process.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The dashboard page: browser code, served as is (no build step), uPlot loaded before it.
    files: ['assets/dashboard/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        history: 'readonly',
        location: 'readonly',
        EventSource: 'readonly',
        URLSearchParams: 'readonly',
        setInterval: 'readonly',
        uPlot: 'readonly',
      },
    },
  },
);

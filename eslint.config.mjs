// ESLint for the extension's TypeScript (vscode-extension/src, the webview apps): the
// recommended rules of ESLint and typescript-eslint, with layout left to Prettier
// (.prettierrc.json). scripts/test.sh runs it with `prettier --check`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/out/**', '**/node_modules/**', 'vscode-extension/scripts/**', 'vscode-extension/esbuild.mjs'] },
  {
    files: ['vscode-extension/src/**/*.ts', 'vscode-extension/webview/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {},
  },
);

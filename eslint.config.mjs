// The companion web app's lint (tests/test_webapp_lint.py runs it as CI does): eslint's recommended
// rules over the sources in companion_bridge/webapp/src, which run as ES modules in a browser.
import js from '@eslint/js';
import globals from 'globals';

export default [
  {
    files: ['companion_bridge/webapp/src/**/*.js'],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.browser },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
];

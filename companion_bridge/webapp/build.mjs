// Bundles the companion web app: src/main.js -> dist/app.js (ES module, not minified: reviewable).
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const common = { bundle: true, target: ['es2022'], minify: false, legalComments: 'inline', logLevel: 'warning' };
// Not served: the test vectors evaluate it in the page (tests/companion/test_webapp.py).
await build({ ...common, entryPoints: [join(here, 'src/testkit.js')], format: 'iife', outfile: join(here, 'dist/testkit.js') });
await build({
  entryPoints: [join(here, 'src/main.js')], bundle: true, format: 'esm', target: ['es2022'],
  outfile: join(here, 'dist/app.js'), minify: false, legalComments: 'inline', logLevel: 'warning',
});

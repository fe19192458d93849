// Bundles the companion web app from src/ with esbuild (npm packages pinned by package-lock.json).
//   node build.mjs            -> static/app.js (committed: served by the bridge, reviewed as a diff)
//                                and dist/testkit.js (not served; the test vectors load it)
//   node build.mjs OUTDIR     -> OUTDIR/app.js and OUTDIR/testkit.js (the test that checks the
//                                committed bundle is exactly what these sources build)
// Not minified: what the phone runs can be read.
import { build } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ? resolve(process.argv[2]) : null;
const common = { bundle: true, target: ['es2022'], minify: false, legalComments: 'inline', logLevel: 'warning',
  absWorkingDir: here };
await build({ ...common, entryPoints: ['src/main.js'], format: 'esm', outfile: join(out || join(here, 'static'), 'app.js') });
await build({ ...common, entryPoints: ['src/testkit.js'], format: 'iife', outfile: join(out || join(here, 'dist'), 'testkit.js') });

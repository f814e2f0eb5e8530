import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

/**
 * The console, built into dist/console and served by svc at /console/ (src/app/console.ts). Preact
 * through the automatic JSX runtime; every text asset also written brotli- and gzip-compressed, so
 * svc sends them as they are, without compressing per request.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: join(import.meta.dirname, '..', 'dist', 'console'),
    emptyOutDir: true,
    target: 'es2022',
    // No inline scripts or styles: the Content-Security-Policy allows only svc's own files.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  plugins: [precompress()],
});

function precompress(): Plugin {
  return {
    name: 'svc-precompress',
    apply: 'build',
    writeBundle(options) {
      const walk = (dir: string): string[] =>
        readdirSync(dir).flatMap((name) => {
          const path = join(dir, name);
          return statSync(path).isDirectory() ? walk(path) : [path];
        });
      for (const file of walk(options.dir ?? '')) {
        if (!/\.(js|css|html|svg|json)$/.test(file)) continue;
        const raw = readFileSync(file);
        writeFileSync(`${file}.br`, brotliCompressSync(raw));
        writeFileSync(`${file}.gz`, gzipSync(raw, { level: 9 }));
      }
    },
  };
}

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

/** One file of the page, kept in memory as sent: the bytes, gzipped once, and an ETag. */
export interface PageAsset {
  type: string;
  body: Buffer;
  gzipped: Buffer;
  etag: string;
}

/** The page's files by the name the page asks for. The page is plain HTML, CSS and JS: nothing to build. */
const PAGE_FILES: Record<string, { source: () => URL | string; type: string }> = {
  'index.html': {
    source: () => new URL('../../assets/dashboard/index.html', import.meta.url),
    type: 'text/html; charset=utf-8',
  },
  'app.js': {
    source: () => new URL('../../assets/dashboard/app.js', import.meta.url),
    type: 'text/javascript; charset=utf-8',
  },
  'style.css': {
    source: () => new URL('../../assets/dashboard/style.css', import.meta.url),
    type: 'text/css; charset=utf-8',
  },
  // uPlot (MIT, ~50 KB, no dependencies): canvas charts fast enough to redraw on every event.
  'uplot.js': {
    source: () => createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  'uplot.css': {
    source: () => createRequire(import.meta.url).resolve('uplot/dist/uPlot.min.css'),
    type: 'text/css; charset=utf-8',
  },
};

const gzipAsync = promisify(gzip);

/** Reads and compresses every file of the page once, at start. */
export async function loadPageAssets(): Promise<Map<string, PageAsset>> {
  const entries = await Promise.all(
    Object.entries(PAGE_FILES).map(async ([name, file]) => {
      const body = await readFile(file.source());
      const gzipped = await gzipAsync(body, { level: 9 });
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
      return [name, { type: file.type, body, gzipped, etag }] as const;
    }),
  );
  return new Map(entries);
}

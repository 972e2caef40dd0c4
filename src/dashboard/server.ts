import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Diagnostics } from '../diagnostics.js';
import { LocalAgentsError } from '../errors.js';
import { isJobId } from '../jobs/ids.js';
import type { JobStore } from '../jobs/store.js';
import { isLoopbackHost, sameSecret } from '../local-door.js';
import type { Registry } from '../registry/registry.js';
import { frame } from '../shim/sse-frames.js';
import { packageVersion } from '../version.js';
import { createEndpointsFeed } from './endpoints-feed.js';
import { createJobsFeed } from './jobs-feed.js';
import { loadPageAssets, type PageAsset } from './page-assets.js';

export interface DashboardOptions {
  store: JobStore;
  registry: Registry;
  diagnostics: Diagnostics;
  /** 0 picks a free port. */
  port: number;
  /** How often endpoints are probed while a page is open (default 2 s). */
  probeIntervalMs?: number;
}

export interface Dashboard {
  /** `http://127.0.0.1:PORT/d/TOKEN/`: the page; the token is the only key. */
  url: string;
  close(): Promise<void>;
}

/** A comment line on every open stream this often, so a proxy or the browser never times it out. */
const HEARTBEAT_MS = 15_000;

/**
 * Security headers of every answer: the page runs only its own scripts, sends its URL (the token) to no one, and
 * is never cached or framed.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/** The Host header's name without its port: only loopback names reach the page (DNS rebinding). */
function hostName(req: IncomingMessage): string {
  const host = req.headers.host ?? '';
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : (host.split(':')[0] ?? '');
}

function notFound(res: ServerResponse): void {
  res.writeHead(404, { ...PAGE_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
  res.end('not found\n');
}

function sendAsset(req: IncomingMessage, res: ServerResponse, asset: PageAsset): void {
  if (req.headers['if-none-match'] === asset.etag) {
    res.writeHead(304, { ...PAGE_HEADERS, etag: asset.etag });
    res.end();
    return;
  }
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gzip ? asset.gzipped : asset.body;
  res.writeHead(200, {
    ...PAGE_HEADERS,
    // The token is in the URL: revalidate rather than keep a copy around.
    'cache-control': 'no-cache',
    'content-type': asset.type,
    'content-length': body.length,
    etag: asset.etag,
    vary: 'accept-encoding',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** Opens a server-sent-events answer; returns a writer and calls `onClose` once the page goes away. */
function openEvents(
  req: IncomingMessage,
  res: ServerResponse,
  onClose: () => void,
): (name: string, data: unknown) => void {
  res.writeHead(200, {
    ...PAGE_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    connection: 'keep-alive',
    // No buffering by a proxy in front: each event goes out as it happens.
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  const heartbeat = setInterval(() => res.write(': keepalive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    onClose();
  };
  req.on('close', close);
  res.on('close', close);
  return (name, data) => {
    if (!closed) res.write(frame(name, data));
  };
}

/**
 * `localagents dashboard`: the page on 127.0.0.1 only, under a random token, with two kinds of event streams:
 * the jobs and endpoints (`events`), and one job's record, requests and transcript (`jobs/ID/events`).
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const assets = await loadPageAssets();
  const jobs = await createJobsFeed(options.store);
  const endpoints = createEndpointsFeed(options.registry, options.probeIntervalMs ?? 2000);
  const token = randomBytes(16).toString('base64url');
  const streams = new Set<ServerResponse>();

  const overview = (req: IncomingMessage, res: ServerResponse): void => {
    const send = openEvents(req, res, () => {
      unsubscribeJobs();
      unsubscribeEndpoints();
      streams.delete(res);
    });
    streams.add(res);
    send('hello', { version: packageVersion(), now: Date.now() });
    send('jobs', jobs.list());
    send('endpoints-history', endpoints.history());
    const unsubscribeJobs = jobs.subscribe((view) => send('job', view));
    const unsubscribeEndpoints = endpoints.subscribe((sample) => send('endpoints', sample));
  };

  const oneJob = (req: IncomingMessage, res: ServerResponse, id: string): void => {
    if (!isJobId(id)) return notFound(res);
    let stop: (() => void) | undefined;
    let gone = false;
    const send = openEvents(req, res, () => {
      gone = true;
      stop?.();
      streams.delete(res);
    });
    streams.add(res);
    jobs
      .follow(id, {
        onJob: (view) => send('job', view),
        onRequests: (points) => send('requests', points),
        onTranscript: (lines) => send('transcript', lines),
      })
      .then((stopFollowing) => {
        if (!stopFollowing) {
          send('missing', { id });
          return void res.end();
        }
        if (gone) stopFollowing();
        else stop = stopFollowing;
      })
      .catch((error: unknown) => {
        options.diagnostics.warn(`dashboard: cannot follow job ${id}: ${String(error)}`);
        res.end();
      });
  };

  const server = createServer((req, res) => {
    if (!isLoopbackHost(hostName(req)) || (req.method !== 'GET' && req.method !== 'HEAD')) {
      return notFound(res);
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const parts = path.split('/');
    // ['', 'd', TOKEN, ...rest]
    if (parts[1] !== 'd' || !sameSecret(parts[2] ?? '', token)) return notFound(res);
    const rest = parts.slice(3);
    if (rest.length === 0) {
      res.writeHead(308, { ...PAGE_HEADERS, location: `/d/${token}/` });
      return void res.end();
    }
    const [first = '', second, third] = rest;
    if (rest.length === 1) {
      if (first === 'events') return overview(req, res);
      const asset = assets.get(first === '' ? 'index.html' : first);
      return asset ? sendAsset(req, res, asset) : notFound(res);
    }
    if (rest.length === 3 && first === 'jobs' && second && third === 'events') {
      return oneJob(req, res, second);
    }
    notFound(res);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new LocalAgentsError(
          'BAD_ARGUMENT',
          `the dashboard cannot listen on 127.0.0.1:${options.port}: ${error.code ?? error.message}`,
          {
            hint:
              error.code === 'EADDRINUSE'
                ? `port ${options.port} is taken: pass another with --port, or --port 0 for a free one`
                : 'pass another port with --port, or --port 0 for a free one',
            cause: error,
          },
        ),
      ),
    );
    // Loopback only, whatever the machine's interfaces: the token is a key, not a password over the network.
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/d/${token}/`,
    async close() {
      jobs.close();
      endpoints.close();
      for (const res of streams) res.end();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

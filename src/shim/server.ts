import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { silentDiagnostics, type Diagnostics } from '../diagnostics.js';
import { LocalAgentsError } from '../errors.js';
import type { BackendError } from './backend-errors.js';
import { anthropicErrorJson } from './errors.js';
import { createBookkeeping } from './bookkeeping.js';
import { createExchange, finishExchange, type Exchange } from './exchange.js';
import { createRequestLog } from './log.js';
import { createPrefixTracker } from './prefix-stability.js';
import { handleExchange } from './relay.js';
import {
  DEFAULT_KEEPALIVE_MS,
  copyStats,
  emptyStats,
  type RouteConfig,
  type RouteRuntime,
  type RouteStats,
} from './route.js';
import { createToolListCache } from './tool-list.js';
import { createTruncationGuard, type TruncationGuard } from './truncation-guard.js';
import { closeUpstream, createAgents, createUpstream, destroyAgents } from './upstream.js';

export interface ShimRoute {
  token: string;
  /** `${shim.url}/j/${token}`: what ANTHROPIC_BASE_URL is set to. */
  baseUrl: string;
  stats(): RouteStats;
  /** Requests open on the route now. */
  inflight(): number;
  /** Unregisters the route, aborts its requests in flight, flushes its log. */
  close(): Promise<void>;
}

export interface Shim {
  url: string;
  addRoute(route: RouteConfig): ShimRoute;
  close(): Promise<void>;
}

export interface ShimOptions {
  host?: string;
  port?: number;
  diagnostics?: Diagnostics;
  /**
   * Every backend error a route translated, with the route it came through: the owner learns from them
   * what no probe shows (an llama.cpp `Context size has been exceeded.` proves its KV cache is unified).
   */
  onBackendError?: (route: RouteConfig, error: BackendError) => void;
  /** How long a finished request's bookkeeping waits when no other request goes to a backend (default 50 ms). */
  bookkeepingQuietMs?: number;
}

/**
 * A finished request's bookkeeping runs as soon as the shim has sent another request to a backend (it then waits
 * for that backend, and the client for the shim), or after this much quiet: never on the way between the client's
 * next request and its backend, whoever serves it.
 */
const BOOKKEEPING_QUIET_MS = 50;

const ROUTE_PATH = /^\/j\/([A-Za-z0-9_-]+)(\/.*)?$/;

function notFound(res: ServerResponse, message: string): void {
  const body = anthropicErrorJson('not_found_error', message);
  res.writeHead(404, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** One HTTP server for the whole process; each job gets a route `/j/<token>/…` with a 128-bit random token. */
export async function createShim(options: ShimOptions = {}): Promise<Shim> {
  const diagnostics = options.diagnostics ?? silentDiagnostics;
  const routes = new Map<string, RouteRuntime>();
  const agents = createAgents();
  let closing: Promise<void> | undefined;
  const bookkeeping = createBookkeeping<Exchange>(
    options.bookkeepingQuietMs ?? BOOKKEEPING_QUIET_MS,
    finish,
  );
  let catchingUp = false;
  /** A request has gone to a backend: what waits for bookkeeping runs once this turn's I/O is done. */
  const whileBackendWorks = (): void => {
    if (catchingUp) return;
    catchingUp = true;
    setImmediate(() => {
      catchingUp = false;
      bookkeeping.flush();
    });
  };

  const server = createServer({ noDelay: true }, (req, res) => dispatch(req, res));

  function dispatch(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const pathname = queryAt === -1 ? url : url.slice(0, queryAt);
    const match = ROUTE_PATH.exec(pathname);
    const route = match?.[1] === undefined ? undefined : routes.get(match[1]);
    if (!match || !route) {
      req.resume();
      notFound(
        res,
        'no such route on this localagents shim (the job may have ended); check ANTHROPIC_BASE_URL',
      );
      return;
    }
    const path = (match[2] ?? '/') + (queryAt === -1 ? '' : url.slice(queryAt));
    const exchange = createExchange(route, req, res, path);
    const handled: Promise<void> = handleExchange(exchange).then(
      () => settle(exchange, handled),
      (error: unknown) => {
        diagnostics.error('shim: request failed', {
          path,
          error: error instanceof Error ? error.stack : String(error),
        });
        if (!res.headersSent) {
          const body = anthropicErrorJson('api_error', 'internal error in the localagents shim');
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(body);
        }
        // Whatever the handler had opened towards the backend goes too.
        exchange.abandon();
        settle(exchange, handled);
      },
    );
    route.inflight.add(handled);
  }

  function settle(exchange: Exchange, handled: Promise<void>): void {
    exchange.route.inflight.delete(handled);
    bookkeeping.defer(exchange);
  }

  function finish(exchange: Exchange): void {
    try {
      finishExchange(exchange);
    } catch (error) {
      diagnostics.error('shim: request bookkeeping failed', {
        path: exchange.path,
        error: String(error),
      });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new LocalAgentsError('LISTEN_FAILED', `the shim cannot listen: ${error.message}`, {
          cause: error,
        }),
      ),
    );
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string')
    throw new LocalAgentsError('LISTEN_FAILED', 'the shim has no TCP address');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  /** Only Ollama cuts an oversize prompt and answers 200 (ollama-lmstudio.md §2); the guard needs its window. */
  function truncationGuardFor(config: RouteConfig): TruncationGuard | undefined {
    return config.backend === 'ollama' && config.contextTokens !== undefined
      ? createTruncationGuard(config.contextTokens)
      : undefined;
  }

  function addRoute(config: RouteConfig): ShimRoute {
    if (closing) throw new LocalAgentsError('LISTEN_FAILED', 'the shim is closed');
    const token = randomBytes(16).toString('base64url');
    const runtime: RouteRuntime = {
      config,
      upstream: createUpstream(config.backendUrl, config.apiKey, agents),
      log: config.logDir
        ? createRequestLog(config.logDir, { full: config.dumpFullRequests === true, diagnostics })
        : undefined,
      tracker: createPrefixTracker(),
      toolLists: createToolListCache(),
      guard: truncationGuardFor(config),
      stats: emptyStats(),
      whileBackendWorks,
      keepaliveMs: config.keepaliveMs ?? DEFAULT_KEEPALIVE_MS,
      diagnostics,
      onBackendError: (error) => {
        try {
          options.onBackendError?.(config, error);
        } catch (thrown) {
          // An observer's bug must not break the answer to the client.
          diagnostics.warn(`shim: onBackendError failed: ${String(thrown)}`);
        }
      },
      open: new Set(),
      inflight: new Set(),
      seq: 0,
    };
    routes.set(token, runtime);
    let closed: Promise<void> | undefined;
    return {
      token,
      baseUrl: `${url}/j/${token}`,
      stats: () => copyStats(runtime.stats),
      inflight: () => runtime.open.size,
      close: () => {
        closed ??= (async () => {
          routes.delete(token);
          closeUpstream(runtime.upstream);
          for (const exchange of runtime.open) exchange.abandon();
          await Promise.allSettled([...runtime.inflight]);
          // Its lines now, not after the delay: the log closes next.
          bookkeeping.flush((exchange) => exchange.route === runtime);
          await runtime.log?.close();
        })();
        return closed;
      },
    };
  }

  return {
    url,
    addRoute,
    close: () => {
      closing ??= (async () => {
        const open = [...routes.values()];
        routes.clear();
        for (const route of open) closeUpstream(route.upstream);
        for (const route of open) for (const exchange of route.open) exchange.abandon();
        await Promise.allSettled(open.flatMap((route) => [...route.inflight]));
        bookkeeping.flush();
        await Promise.allSettled(open.map((route) => route.log?.close() ?? Promise.resolve()));
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        destroyAgents(agents);
      })();
      return closing;
    },
  };
}

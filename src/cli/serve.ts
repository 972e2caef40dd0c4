import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { App } from '../app.js';
import type { Dashboard } from '../dashboard/server.js';
import { createDiagnostics } from '../diagnostics.js';
import { describeError, LocalAgentsError } from '../errors.js';
import { resolveStateDir } from '../paths.js';
import { shellQuote } from '../shell-quote.js';
import { DELEGATE_MARKER } from '../jobs/session-env.js';
import { createMcpServer, lateDeps } from '../mcp/server.js';
import { integerFlag, parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { isLoopbackHost } from '../local-door.js';
import { authorize, loadOrCreateToken } from './http-auth.js';
import { APP_OPTIONS, openApp } from './open-app.js';

/**
 * stdio until the client closes stdin or a signal arrives. stdout carries JSON-RPC only. The handshake
 * comes first: the app (registry, runner, Agent SDK on the first job) loads while the client initializes.
 */
async function serveStdio(app: Promise<App>, context: CommandContext): Promise<void> {
  // Tools run once earlier servers' jobs are sorted out (marked interrupted), as they always have.
  const recovered = app.then(async (loaded) => {
    await loaded.recovered;
    return loaded;
  });
  const server = createMcpServer(lateDeps(recovered, context.cwd));
  const transport = new StdioServerTransport(process.stdin, process.stdout);
  const ended = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    process.stdin.once('close', () => resolve());
    context.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await server.connect(transport);
  await reportRecovered(await app, context);
  await ended;
  await server.close().catch(() => {});
}

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Where and how an HTTP transport listens. */
interface HttpDoor {
  host: string;
  port: number;
  token: string;
  /** Printed with the address: how to register it (`claude mcp add --transport …`), or where the token is. */
  howToAdd: (transport: 'http' | 'sse', url: string) => string;
}

/**
 * Serves `handler` on door.host:port until the command is aborted, every request first authorized (the bearer
 * token, a local Origin); `onListening` gets the actual URL base.
 */
async function serveLocal(
  context: CommandContext,
  door: HttpDoor,
  handler: (allowedHosts: string[]) => RequestHandler,
  onListening: (base: string) => void,
): Promise<void> {
  const { port } = door;
  const shownHost = door.host.includes(':') ? `[${door.host}]` : door.host;
  // DNS-rebinding protection: only these Host headers are answered (the actual port is added below).
  const allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `${shownHost}:${port}`];
  const inner = handler(allowedHosts);
  const http: Server = createServer((req, res) => {
    if (authorize(req, res, door.token)) inner(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', (error) =>
      reject(
        new LocalAgentsError(
          'LISTEN_FAILED',
          `cannot listen on ${shownHost}:${port}: ${error.message}`,
          { hint: 'pick another port with --port N (0 picks a free one)', cause: error },
        ),
      ),
    );
    http.listen(port, door.host, () => resolve());
  });
  const address = http.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  allowedHosts.push(`127.0.0.1:${actual}`, `localhost:${actual}`, `${shownHost}:${actual}`);
  onListening(`http://${shownHost}:${actual}`);
  await new Promise<void>((resolve) =>
    context.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}

function notFound(res: ServerResponse, message: string): void {
  res.writeHead(404, { 'content-type': 'text/plain' }).end(`localagents: ${message}\n`);
}

/** Streamable HTTP at /mcp, stateless: a fresh MCP server per request, one app behind all. */
async function serveStreamableHttp(
  app: App,
  context: CommandContext,
  door: HttpDoor,
): Promise<void> {
  const { StreamableHTTPServerTransport } =
    await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  await serveLocal(
    context,
    door,
    (allowedHosts) => (req, res) => {
      if (!req.url?.startsWith('/mcp')) return notFound(res, 'the MCP endpoint is /mcp');
      const server = app.createMcpServer();
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableDnsRebindingProtection: true,
        allowedHosts,
      });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      server
        .connect(transport)
        .then(() => transport.handleRequest(req, res))
        .catch((error: unknown) => {
          context.stderr.write(`localagents serve: request failed: ${String(error)}\n`);
          if (!res.headersSent) res.writeHead(500).end();
        });
    },
    (base) => {
      app.noteMcpUrl(`${base}/mcp`);
      context.stderr.write(
        `localagents: MCP over streamable HTTP at ${base}/mcp\n${door.howToAdd('http', `${base}/mcp`)}\n`,
      );
    },
  );
}

/**
 * The MCP SDK's legacy SSE transport, for clients of the Python original's `--transport sse`: GET /sse opens a
 * session's event stream, whose first event names `/messages/?sessionId=…`, where the client POSTs its messages.
 */
async function serveSse(app: App, context: CommandContext, door: HttpDoor): Promise<void> {
  const { SSEServerTransport } = await import('@modelcontextprotocol/sdk/server/sse.js');
  const sessions = new Map<string, InstanceType<typeof SSEServerTransport>>();
  await serveLocal(
    context,
    door,
    (allowedHosts) => (req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method === 'GET' && url.pathname === '/sse') {
        const transport = new SSEServerTransport('/messages/', res, {
          enableDnsRebindingProtection: true,
          allowedHosts,
        });
        const server = app.createMcpServer();
        sessions.set(transport.sessionId, transport);
        res.on('close', () => {
          sessions.delete(transport.sessionId);
          void server.close();
        });
        server.connect(transport).catch((error: unknown) => {
          context.stderr.write(`localagents serve: SSE session failed: ${String(error)}\n`);
          if (!res.headersSent) res.writeHead(500).end();
        });
        return;
      }
      if (req.method === 'POST' && url.pathname === '/messages/') {
        const transport = sessions.get(url.searchParams.get('sessionId') ?? '');
        if (!transport) return notFound(res, 'no such SSE session; open GET /sse first');
        transport.handlePostMessage(req, res).catch((error: unknown) => {
          context.stderr.write(`localagents serve: SSE message failed: ${String(error)}\n`);
          if (!res.headersSent) res.writeHead(500).end();
        });
        return;
      }
      notFound(res, 'the SSE endpoint is GET /sse (messages go to POST /messages/)');
    },
    (base) => {
      app.noteMcpUrl(`${base}/sse`);
      context.stderr.write(
        `localagents: MCP over SSE at ${base}/sse\n${door.howToAdd('sse', `${base}/sse`)}\n`,
      );
    },
  );
}

const TRANSPORTS = ['stdio', 'streamable-http', 'sse'] as const;
type Transport = (typeof TRANSPORTS)[number];
/** The Python original's (FastMCP's) port for its HTTP transports, so its users' client settings still work. */
const DEFAULT_HTTP_PORT = 8000;

/** --transport (the Python original's flag) with --port, or --http PORT (streamable HTTP). */
function chooseTransport(values: {
  transport?: string | undefined;
  http?: string | undefined;
  port?: string | undefined;
}): { transport: Transport; port: number } {
  const named = values.transport;
  if (named !== undefined && !TRANSPORTS.includes(named as Transport)) {
    throw new LocalAgentsError('BAD_ARGUMENT', `serve: unknown --transport "${named}"`, {
      hint: `use one of ${TRANSPORTS.join(', ')}`,
    });
  }
  if (values.http !== undefined) {
    if ((named !== undefined && named !== 'streamable-http') || values.port !== undefined) {
      throw new LocalAgentsError(
        'BAD_ARGUMENT',
        'serve: --http PORT is streamable HTTP on that port',
        { hint: 'use either --http PORT, or --transport T --port N' },
      );
    }
    return {
      transport: 'streamable-http',
      port: integerFlag('serve', 'http', values.http, 0),
    };
  }
  const transport = (named ?? 'stdio') as Transport;
  if (transport === 'stdio' && values.port !== undefined) {
    throw new LocalAgentsError('BAD_ARGUMENT', 'serve: --port needs an HTTP transport', {
      hint: 'add --transport streamable-http or --transport sse',
    });
  }
  const port =
    values.port === undefined ? DEFAULT_HTTP_PORT : integerFlag('serve', 'port', values.port, 0);
  return { transport, port };
}

/** `localagents serve` (the default command): the MCP server, stdio unless an HTTP transport is chosen. */
export const runServe: CommandRun = async (context) => {
  const { values } = parseCommandArgs('serve', context.args, {
    ...APP_OPTIONS,
    http: { type: 'string' },
    transport: { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    'token-file': { type: 'string' },
    dashboard: { type: 'boolean' },
    'dashboard-port': { type: 'string' },
  });
  const { transport, port } = chooseTransport(values);
  const dashboardPort =
    values['dashboard-port'] !== undefined
      ? integerFlag('serve', 'dashboard-port', values['dashboard-port'], 0)
      : values.dashboard
        ? 0
        : undefined;
  if (transport === 'stdio' && (values.host !== undefined || values['token-file'] !== undefined)) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      'serve: --host and --token-file need an HTTP transport',
      {
        hint: 'add --transport streamable-http (or sse), or --http PORT',
      },
    );
  }
  if (context.env[DELEGATE_MARKER]) {
    throw new LocalAgentsError(
      'INSIDE_DELEGATE',
      'localagents serve: not starting inside a localagents job (a delegate does not delegate)',
      {
        hint: 'the delegate inherited an MCP registration of localagents that was not recognised; set defaults.delegate_mcp: none, or register localagents by its command (localagents …) so it is left out',
      },
    );
  }
  const app = openApp(context, values);
  const dashboard =
    dashboardPort === undefined ? undefined : startDashboardBeside(app, context, dashboardPort);
  try {
    if (transport === 'stdio') await serveStdio(app, context);
    else {
      const door = await openDoor(context, values, port);
      await reportRecovered(await app, context);
      const serve = transport === 'sse' ? serveSse : serveStreamableHttp;
      await serve(await app, context, door);
    }
  } finally {
    await (await dashboard)?.close();
    await (await app).close();
  }
  return 0;
};

/**
 * `serve --dashboard`: the page over the app's own store and registry. Its URL goes to stderr (stdout is
 * JSON-RPC) and to the state directory; a dashboard that cannot start is said there and the server goes on.
 */
async function startDashboardBeside(
  app: Promise<App>,
  context: CommandContext,
  port: number,
): Promise<Dashboard | undefined> {
  // Imported here, not at the top: the dashboard's module pulls in the registry, and serve answers the MCP
  // handshake before any of that loads.
  const [{ store, registry }, { openDashboard }] = await Promise.all([
    app,
    import('./dashboard.js'),
  ]);
  const diagnostics = createDiagnostics({ write: (line) => context.stderr.write(line) });
  try {
    const dashboard = await openDashboard(context, { store, registry, diagnostics }, port);
    context.stderr.write(`localagents: dashboard at ${dashboard.url}\n`);
    return dashboard;
  } catch (error) {
    context.stderr.write(`localagents: the dashboard did not start: ${describeError(error)}\n`);
    return undefined;
  }
}

/** The HTTP door's host and token: loopback unless --host (with a warning), the token made on first start. */
async function openDoor(
  context: CommandContext,
  values: { host?: string | undefined; 'token-file'?: string | undefined },
  port: number,
): Promise<HttpDoor> {
  const host = values.host ?? '127.0.0.1';
  const file = values['token-file'] ?? join(resolveStateDir(context.env), 'serve-token');
  const { token, created } = await loadOrCreateToken(file);
  if (!isLoopbackHost(host)) {
    context.stderr.write(
      `localagents: warning: listening on ${host}, not only on this machine: anyone who can reach it and has the token can run agents that run commands as you\n`,
    );
  }
  return {
    host,
    port,
    token,
    howToAdd: (transport, url) =>
      created
        ? `localagents: add it to Claude Code with (the token is in ${file}, 0600):\n  claude mcp add --transport ${transport} local ${url} --header "Authorization: Bearer ${token}"`
        : `localagents: its bearer token is in ${file}: claude mcp add --transport ${transport} local ${url} --header "Authorization: Bearer $(cat ${shellQuote(file)})"`,
  };
}

async function reportRecovered(app: App, context: CommandContext): Promise<void> {
  const { interrupted, reaped } = await app.recovered;
  if (interrupted.length === 0) return;
  context.stderr.write(
    `localagents: marked ${interrupted.length} job(s) of a stopped server interrupted (${interrupted.join(', ')}); stopped ${reaped.length} orphaned claude process(es)\n`,
  );
}

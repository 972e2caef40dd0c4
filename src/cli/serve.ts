import { createServer, type Server } from 'node:http';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { App } from '../app.js';
import { LocalAgentsError } from '../errors.js';
import { DELEGATE_MARKER } from '../jobs/session-env.js';
import { createMcpServer, lateDeps } from '../mcp/server.js';
import { integerFlag, parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
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

/** Streamable HTTP on 127.0.0.1:port at /mcp, stateless: a fresh MCP server per request, one app behind all. */
async function serveHttp(app: App, context: CommandContext, port: number): Promise<void> {
  const { StreamableHTTPServerTransport } =
    await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  const http: Server = createServer((req, res) => {
    if (!req.url?.startsWith('/mcp')) {
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('localagents: the MCP endpoint is /mcp\n');
      return;
    }
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
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', (error) =>
      reject(
        new LocalAgentsError(
          'LISTEN_FAILED',
          `cannot listen on 127.0.0.1:${port}: ${error.message}`,
          {
            hint: 'pick another port with --http PORT',
            cause: error,
          },
        ),
      ),
    );
    http.listen(port, '127.0.0.1', () => resolve());
  });
  const address = http.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  allowedHosts.push(`127.0.0.1:${actual}`, `localhost:${actual}`);
  app.noteMcpUrl(`http://127.0.0.1:${actual}/mcp`);
  context.stderr.write(`localagents: MCP over streamable HTTP at http://127.0.0.1:${actual}/mcp\n`);
  await new Promise<void>((resolve) =>
    context.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}

/** `localagents serve` (the default command): the MCP server, stdio unless --http PORT. */
export const runServe: CommandRun = async (context) => {
  const { values } = parseCommandArgs('serve', context.args, {
    ...APP_OPTIONS,
    http: { type: 'string' },
  });
  const port = values.http === undefined ? undefined : integerFlag('serve', 'http', values.http, 0);
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
  try {
    if (port === undefined) await serveStdio(app, context);
    else {
      await reportRecovered(await app, context);
      await serveHttp(await app, context, port);
    }
  } finally {
    await (await app).close();
  }
  return 0;
};

async function reportRecovered(app: App, context: CommandContext): Promise<void> {
  const { interrupted, reaped } = await app.recovered;
  if (interrupted.length === 0) return;
  context.stderr.write(
    `localagents: marked ${interrupted.length} job(s) of a stopped server interrupted (${interrupted.join(', ')}); stopped ${reaped.length} orphaned claude process(es)\n`,
  );
}

// One relay in a process of its own, as in production: Claude Code, the shim (inside `localagents serve`) and the
// backend are three processes. Sharing the benchmark's thread would charge the relay's work to the client's timing
// of other requests, and the client's to the relay.
//   node relay-process.js pipe <backend-url>            a bare req.pipe() relay: the floor of any extra HTTP hop
//   node relay-process.js shim <backend-url> <log-dir>  the shim, one route logging like a job's (npm run build first)
// The first stdout line is the base URL to send `/v1/messages` to. Each `cpu` line on stdin is answered with a
// line holding the process's CPU time so far in milliseconds; the process exits when stdin ends.
import { Agent, createServer, request } from 'node:http';
import process from 'node:process';
import { createInterface } from 'node:readline';
import { URL } from 'node:url';

const [kind, backendUrl, logDir] = process.argv.slice(2);
if ((kind !== 'pipe' && kind !== 'shim') || !backendUrl) {
  throw new Error('usage: relay-process.js pipe|shim <backend-url> [log-dir]');
}

async function pipeRelay(target) {
  const upstreamAgent = new Agent({ keepAlive: true });
  const url = new URL(target);
  const server = createServer((req, res) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
        agent: upstreamAgent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(outgoing);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${server.address().port}`;
}

async function shimRoute(target) {
  const { createShim } = await import('../dist/shim/server.js');
  const shim = await createShim();
  const route = shim.addRoute({
    backendUrl: target,
    backend: 'llama.cpp',
    servedId: 'qwen-test',
    keepaliveMs: 60_000,
    logDir,
  });
  return route.baseUrl;
}

process.stdout.write(
  `${kind === 'pipe' ? await pipeRelay(backendUrl) : await shimRoute(backendUrl)}\n`,
);
const lines = createInterface({ input: process.stdin });
lines.on('line', () => {
  const { user, system } = process.cpuUsage();
  process.stdout.write(`${(user + system) / 1000}\n`);
});
lines.on('close', () => process.exit(0));

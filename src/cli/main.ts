#!/usr/bin/env node
import { runCli } from './cli.js';

const controller = new AbortController();
const stop = (): void => {
  if (controller.signal.aborted) process.exit(130);
  controller.abort();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
});
process.exitCode = code;
process.off('SIGINT', stop);
process.off('SIGTERM', stop);

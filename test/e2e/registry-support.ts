import { createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { stringify } from 'yaml';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import { configPaths } from '../../src/registry/config.js';
import type { ConfigPaths } from '../../src/registry/config-types.js';
import { createRegistry, type Registry } from '../../src/registry/registry.js';
import { tempDir } from '../support/temp-dir.js';

/** An emulator closed when the test finishes. */
export async function emulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator(options);
  onTestFinished(() => emu.close());
  return emu;
}

/** A socket that accepts connections and never answers: the worst kind of dead endpoint. */
export async function blackHole(): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

/** A port that was bound and released: connecting to it is refused. */
export async function refusedPort(): Promise<string> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${address.port}`;
}

export interface ConfigShape {
  defaults?: Record<string, unknown>;
  endpoints: Record<string, Record<string, unknown>>;
  models?: Record<string, Record<string, unknown>>;
}

/** models.yaml in a temp dir (as the --config file), with a project dir that has none. */
export async function configFile(config: ConfigShape): Promise<ConfigPaths> {
  const dir = await tempDir({ 'config/models.yaml': stringify(config) });
  return configPaths({
    configFlag: join(dir, 'config/models.yaml'),
    cwd: join(dir, 'project'),
    env: {},
  });
}

export async function registryFor(
  config: ConfigShape,
  env: NodeJS.ProcessEnv = {},
): Promise<Registry> {
  return createRegistry({ paths: await configFile(config), env });
}

import { createDiagnostics, type Diagnostics } from '../diagnostics.js';
import { configPaths } from '../registry/config.js';
import { createRegistry, type Registry } from '../registry/registry.js';
import type { CommandContext } from './context.js';

/**
 * The registry alone (no job runner, no SDK) for commands that only probe or read models.yaml: `models`,
 * `proxy`, `doctor`, `dashboard`. `configFlag` is --config; without it LOCALAGENTS_CONFIG, then XDG.
 */
export function openRegistry(
  context: CommandContext,
  configFlag: string | undefined,
  diagnostics: Diagnostics = createDiagnostics(),
): Registry {
  const paths = configPaths({
    cwd: context.cwd,
    env: context.env,
    ...(configFlag ? { configFlag } : {}),
  });
  return createRegistry({ paths, env: context.env, diagnostics });
}

import { homedir } from 'node:os';
import { join } from 'node:path';

/** The subset of the environment that decides where localagents keeps things. */
export interface PathEnv {
  LOCALAGENTS_STATE_DIR?: string | undefined;
  LOCALAGENTS_CONFIG?: string | undefined;
  XDG_STATE_HOME?: string | undefined;
  XDG_CONFIG_HOME?: string | undefined;
  HOME?: string | undefined;
}

function home(env: PathEnv): string {
  return env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
}

/** LOCALAGENTS_STATE_DIR > $XDG_STATE_HOME/localagents > ~/.local/state/localagents */
export function resolveStateDir(env: PathEnv = process.env): string {
  if (env.LOCALAGENTS_STATE_DIR) return env.LOCALAGENTS_STATE_DIR;
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, 'localagents');
  return join(home(env), '.local', 'state', 'localagents');
}

/** `~/x` → `$HOME/x`: MCP clients pass `.mcp.json` args verbatim, without a shell to expand the tilde. */
export function expandHome(path: string, env: PathEnv = process.env): string {
  return path === '~' || path.startsWith('~/') ? join(home(env), path.slice(1)) : path;
}

/** --config > LOCALAGENTS_CONFIG > $XDG_CONFIG_HOME/localagents/models.yaml > ~/.config/localagents/models.yaml */
export function resolveUserConfigPath(
  flag: string | undefined,
  env: PathEnv = process.env,
): string {
  if (flag) return expandHome(flag, env);
  if (env.LOCALAGENTS_CONFIG) return expandHome(env.LOCALAGENTS_CONFIG, env);
  const configHome = env.XDG_CONFIG_HOME ?? join(home(env), '.config');
  return join(configHome, 'localagents', 'models.yaml');
}

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './temp-dir.js';

/**
 * The environment a test's `claude` runs with: a temp HOME, no non-essential traffic, and none of the
 * developer's own ANTHROPIC_* / CLAUDE_* variables. Everything else (PATH, locale) is inherited.
 */
export async function isolatedClaudeEnv(
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  const home = await tempDir({}, 'localagents-home-');
  await mkdir(join(home, '.claude'), { recursive: true });
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (key.startsWith('ANTHROPIC_') || key.startsWith('CLAUDE_') || key.startsWith('CLAUDECODE'))
      continue;
    env[key] = value;
  }
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    ...extra,
  };
}

import { describe, expect, it } from 'vitest';
import { resolveStateDir, resolveUserConfigPath } from './paths.js';

describe('resolveStateDir', () => {
  it.each([
    [{ LOCALAGENTS_STATE_DIR: '/s', XDG_STATE_HOME: '/x', HOME: '/h' }, '/s'],
    [{ XDG_STATE_HOME: '/x', HOME: '/h' }, '/x/localagents'],
    [{ HOME: '/h' }, '/h/.local/state/localagents'],
  ])('picks the state directory from %o', (env, expected) => {
    expect(resolveStateDir(env)).toBe(expected);
  });
});

describe('resolveUserConfigPath', () => {
  it.each([
    ['/etc/m.yaml', { LOCALAGENTS_CONFIG: '/c.yaml', HOME: '/h' }, '/etc/m.yaml'],
    ['~/.config/localagents/models.yaml', { HOME: '/h' }, '/h/.config/localagents/models.yaml'],
    [undefined, { LOCALAGENTS_CONFIG: '~/c.yaml', HOME: '/h' }, '/h/c.yaml'],
    [undefined, { XDG_CONFIG_HOME: '/xc', HOME: '/h' }, '/xc/localagents/models.yaml'],
    [undefined, { HOME: '/h' }, '/h/.config/localagents/models.yaml'],
  ])('resolves --config %s with %o to %s', (flag, env, expected) => {
    expect(resolveUserConfigPath(flag, env)).toBe(expected);
  });
});

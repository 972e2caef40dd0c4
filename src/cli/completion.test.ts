import { describe, expect, it } from 'vitest';
import { COMMANDS } from './commands.js';
import { completionCommands, completionScript, usageOptions } from './completion.js';

const commands = completionCommands(COMMANDS);
const byName = (name: string) => commands.find((command) => command.name === name);

describe('usageOptions', () => {
  it('reads the synopsis and the first flags of option rows, not flags quoted in the prose', () => {
    const usage = `localagents log <job> [-f] [-n N] [--config F]

Options:
  -f, --follow   keep printing
  --lines N      like tail -n, or localagents run --agent X`;
    expect(usageOptions('log', usage)).toEqual([
      '--config',
      '--follow',
      '--help',
      '--lines',
      '-f',
      '-n',
    ]);
  });
});

describe('completionCommands', () => {
  it('offers every command with its options, and job ids where a job is the argument', () => {
    expect(commands.map((command) => command.name)).toEqual(COMMANDS.map((c) => c.name));
    expect(byName('jobs')?.options).toEqual(expect.arrayContaining(['--all', '--json', '--wide']));
    expect(byName('run')?.options).toEqual(expect.arrayContaining(['--isolation', '--base-ref']));
    expect(commands.filter((command) => command.takesJob).map((command) => command.name)).toEqual([
      'show',
      'log',
      'diff',
      'cancel',
      'merge',
      'discard',
    ]);
    expect(byName('models')?.words).toEqual(['add-endpoint', 'add-model']);
    expect(byName('completion')?.words).toEqual(['bash', 'zsh', 'fish']);
    expect(byName('agents')?.options).not.toContain('--agent');
  });
});

describe('completionScript', () => {
  it('bash: one function bound to localagents, job ids read from the state dir', () => {
    const script = completionScript('bash', commands);
    expect(script).toContain('complete -o default -F _localagents localagents');
    expect(script).toContain(
      'local dir="${LOCALAGENTS_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/localagents}/jobs"',
    );
    expect(script).toContain(
      '    show|log|diff|cancel|merge|discard) COMPREPLY=($(compgen -W "$(_localagents_job_ids)" -- "$cur")) ;;',
    );
  });

  it('zsh: described commands, quoted so an apostrophe in a summary stays inside its word', () => {
    const script = completionScript('zsh', commands);
    expect(script.startsWith('#compdef localagents\n')).toBe(true);
    expect(script).toContain(
      `'merge:take a finished worktree job'\\''s work into the branch it started from'`,
    );
    expect(script).toContain('compdef _localagents localagents');
  });

  it('fish: a subcommand line per command and the job ids for the job commands', () => {
    const script = completionScript('fish', commands);
    expect(script).toContain(
      'complete -c localagents -n "__fish_seen_subcommand_from log" -f -a "(__localagents_job_ids)"',
    );
    expect(script).toContain('complete -c localagents -n "__fish_seen_subcommand_from log" -s f');
    expect(script).toContain(
      'set -q LOCALAGENTS_STATE_DIR; and set dir $LOCALAGENTS_STATE_DIR/jobs',
    );
  });
});

import { LocalAgentsError } from '../errors.js';
import { shellQuote } from '../shell-quote.js';
import { COMMANDS, type CommandSpec } from './commands.js';
import { parseCommandArgs, type CommandRun } from './context.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** What a completion script offers for one command. */
export interface CompletionCommand {
  name: string;
  summary: string;
  options: string[];
  /** Its positional argument is a job id. */
  takesJob: boolean;
  /** Words that may follow it (`models add-endpoint`, `completion bash`). */
  words: string[];
}

/** The subcommands a usage's synopsis lines name: `localagents models add-endpoint NAME …` → add-endpoint. */
function usageWords(name: string, usage: string): string[] {
  const words = usage
    .split('\n')
    .map((line) => new RegExp(`^localagents ${name} ([a-z][a-z0-9|-]*)(?: |$)`).exec(line)?.[1])
    .filter((word) => word !== undefined);
  return words.flatMap((word) => word.split('|'));
}

/**
 * A command's options, read from its usage text (the one place they are written down): the synopsis
 * lines (`localagents log <job> [-f] [-n N]`) and the first flag of each option row, plus --help.
 */
export function usageOptions(name: string, usage: string): string[] {
  const found = new Set<string>();
  for (const line of usage.split('\n')) {
    if (line.startsWith(`localagents ${name} `) || line.startsWith(`localagents [${name}] `))
      for (const match of line.matchAll(/(?<=[\s[|(])--?[a-z][a-z0-9-]*/g)) found.add(match[0]);
    const row = /^\s+(?:(-[a-z]), )?(--[a-z][a-z0-9-]*)/.exec(line);
    if (row?.[1]) found.add(row[1]);
    if (row?.[2]) found.add(row[2]);
  }
  found.add('--help');
  return [...found].sort();
}

export function completionCommands(commands: readonly CommandSpec[]): CompletionCommand[] {
  return commands.map((command) => ({
    name: command.name,
    summary: command.summary,
    options: usageOptions(command.name, command.usage),
    takesJob: command.usage.includes(`localagents ${command.name} <job>`),
    words: usageWords(command.name, command.usage),
  }));
}

// resolveStateDir() (src/paths.ts) in shell: LOCALAGENTS_STATE_DIR, else XDG_STATE_HOME, else ~/.local/state.
const STATE_DIR_SH =
  '"${LOCALAGENTS_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/localagents}/jobs"';

function withWords(commands: readonly CompletionCommand[]): CompletionCommand[] {
  return commands.filter((command) => command.words.length > 0);
}

function bash(commands: readonly CompletionCommand[]): string {
  const jobCommands = commands.filter((command) => command.takesJob).map((c) => c.name);
  return `# localagents completion for bash. Load it with
#   eval "$(localagents completion bash)"          (in ~/.bashrc)
# or save it as ~/.local/share/bash-completion/completions/localagents
_localagents_job_ids() {
  local dir=${STATE_DIR_SH}
  [ -d "$dir" ] && command ls -1r "$dir" 2>/dev/null
}
_localagents() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" options=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${commands.map((c) => c.name).join(' ')} help" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${commands.map((c) => `    ${c.name}) options="${c.options.join(' ')}" ;;`).join('\n')}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
    ${jobCommands.join('|')}) COMPREPLY=($(compgen -W "$(_localagents_job_ids)" -- "$cur")) ;;
${withWords(commands)
  .map((c) => `    ${c.name}) COMPREPLY=($(compgen -W "${c.words.join(' ')}" -- "$cur")) ;;`)
  .join('\n')}
  esac
}
complete -o default -F _localagents localagents
`;
}

function zsh(commands: readonly CompletionCommand[]): string {
  const jobCommands = commands.filter((command) => command.takesJob).map((c) => c.name);
  return `#compdef localagents
# localagents completion for zsh. Load it with
#   eval "$(localagents completion zsh)"           (in ~/.zshrc, after compinit)
# or save it as _localagents in a directory on $fpath
_localagents() {
  local -a commands options
  commands=(
${commands.map((c) => `    ${shellQuote(`${c.name}:${c.summary}`)}`).join('\n')}
  )
  if (( CURRENT == 2 )); then
    _describe 'command' commands
    return
  fi
  case $words[2] in
${commands.map((c) => `    ${c.name}) options=(${c.options.join(' ')}) ;;`).join('\n')}
  esac
  if [[ $PREFIX == -* ]]; then
    compadd -- $options
    return
  fi
  case $words[2] in
    ${jobCommands.join('|')})
      local dir=${STATE_DIR_SH}
      [[ -d $dir ]] && compadd -- \${(f)"$(command ls -1r $dir 2>/dev/null)"}
      ;;
${withWords(commands)
  .map((c) => `    ${c.name}) compadd -- ${c.words.join(' ')} ;;`)
  .join('\n')}
    *) _files ;;
  esac
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _localagents "$@"
else
  compdef _localagents localagents
fi
`;
}

function fish(commands: readonly CompletionCommand[]): string {
  const names = commands.map((c) => c.name).join(' ');
  const lines = [
    '# localagents completion for fish. Load it with',
    '#   localagents completion fish | source',
    '# or save it as ~/.config/fish/completions/localagents.fish',
    'function __localagents_job_ids',
    '    set -l dir $HOME/.local/state/localagents/jobs',
    '    set -q XDG_STATE_HOME; and set dir $XDG_STATE_HOME/localagents/jobs',
    '    set -q LOCALAGENTS_STATE_DIR; and set dir $LOCALAGENTS_STATE_DIR/jobs',
    '    test -d $dir; and command ls -1r $dir 2>/dev/null',
    'end',
    ...commands.map(
      (c) =>
        `complete -c localagents -f -n "not __fish_seen_subcommand_from ${names}" -a ${c.name} -d ${shellQuote(c.summary)}`,
    ),
  ];
  for (const command of commands) {
    const when = `-n "__fish_seen_subcommand_from ${command.name}"`;
    for (const option of command.options)
      lines.push(
        option.startsWith('--')
          ? `complete -c localagents ${when} -l ${option.slice(2)}`
          : `complete -c localagents ${when} -s ${option.slice(1)}`,
      );
    if (command.takesJob)
      lines.push(`complete -c localagents ${when} -f -a "(__localagents_job_ids)"`);
  }
  for (const command of withWords(commands))
    lines.push(
      `complete -c localagents -n "__fish_seen_subcommand_from ${command.name}" -f -a "${command.words.join(' ')}"`,
    );
  return `${lines.join('\n')}\n`;
}

/** The completion script for `shell`: commands, each command's options, and job ids from the state dir. */
export function completionScript(shell: Shell, commands: readonly CompletionCommand[]): string {
  if (shell === 'bash') return bash(commands);
  if (shell === 'zsh') return zsh(commands);
  return fish(commands);
}

function isShell(value: string | undefined): value is Shell {
  return SHELLS.some((shell) => shell === value);
}

/** `localagents completion bash|zsh|fish`: the script on stdout. */
export const runCompletion: CommandRun = (context) => {
  const { positionals } = parseCommandArgs('completion', context.args, {}, true);
  const [shell] = positionals;
  if (!isShell(shell))
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      shell === undefined
        ? 'localagents completion: name the shell: bash, zsh or fish'
        : `localagents completion: no completion for "${shell}"; there is one for bash, zsh and fish`,
      { hint: 'for bash, add eval "$(localagents completion bash)" to ~/.bashrc' },
    );
  context.stdout.write(completionScript(shell, completionCommands(COMMANDS)));
  return Promise.resolve(0);
};

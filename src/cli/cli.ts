import { describeError, isLocalAgentsError } from '../errors.js';
import { packageVersion } from '../version.js';
import { findCommand, renderTopLevelHelp } from './commands.js';
import type { CommandContext } from './context.js';

const DEFAULT_COMMAND = 'serve';

/** argv (without node and script) → exit code. Never calls process.exit: main.ts does. */
export async function runCli(
  argv: string[],
  context: Omit<CommandContext, 'args'>,
): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    context.stdout.write(`${renderTopLevelHelp()}\n`);
    return 0;
  }
  if (first === '--version' || first === '-v') {
    context.stdout.write(`localagents ${packageVersion()}\n`);
    return 0;
  }
  const explicit = first !== undefined && !first.startsWith('-');
  const name = explicit ? first : DEFAULT_COMMAND;
  const args = explicit ? rest : argv;
  const command = findCommand(name);
  if (!command) {
    context.stderr.write(
      `localagents: unknown command "${name}"\n  fix: run \`localagents --help\` for the list\n`,
    );
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    context.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    const run = await command.load();
    return await run({ ...context, args });
  } catch (error) {
    if (isLocalAgentsError(error)) {
      context.stderr.write(`${describeError(error)}\n`);
      return error.code === 'BAD_ARGUMENT' ? 2 : 1;
    }
    const stack = error instanceof Error && error.stack ? error.stack : String(error);
    context.stderr.write(
      `${stack}\nlocalagents: this is a bug; please report it with the lines above.\n`,
    );
    return 70;
  }
}

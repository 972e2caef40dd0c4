/**
 * A worktree job's brief is written by an agent that works in the user's tree, so it names files by
 * their absolute paths there. Left alone, the delegate would edit the user's files instead of the
 * worktree's (Write/Edit/Bash accept any absolute path). Claude Code's own worktree subagents are told
 * to translate such paths; we both translate them in the brief and say so in the system prompt.
 */

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Every `repoRoot` that starts a path in `text` becomes `worktreePath`: `/src/app` and `/src/app/x.ts`
 * move, `/src/app2` and `/src/app.old` do not. A sentence's full stop after the root still counts.
 */
export function moveRepoPaths(text: string, repoRoot: string, worktreePath: string): string {
  const root = repoRoot.replace(/\/+$/, '');
  if (root === '' || root === worktreePath) return text;
  const pattern = new RegExp(`${escapeRegExp(root)}(?![\\w-]|\\.[\\w-])`, 'g');
  return text.replace(pattern, worktreePath);
}

/** The system-prompt paragraph a worktree job gets, after the delegate suffix. */
export function worktreeNotice(repoRoot: string, worktreePath: string): string {
  return [
    `You are working in an isolated git worktree at ${worktreePath}: the same repository as ${repoRoot}, with the same relative layout, but a separate working copy.`,
    `Paths under ${repoRoot} in your task mean the same files under ${worktreePath}; work only inside the worktree and never change files under ${repoRoot}.`,
    'Your changes stay in the worktree for the other agent to review; you do not need to commit them.',
  ].join('\n');
}

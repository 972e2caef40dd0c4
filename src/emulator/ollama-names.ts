/**
 * Ollama model names (`[host/][namespace/]model[:tag]`, types/model/name.go): the host defaults to
 * registry.ollama.ai, the namespace to library, the tag to latest, and names compare case-insensitively,
 * so `QWEN3` names `qwen3:latest` (ollama-lmstudio.md §2). The display form drops the defaults but
 * keeps the tag.
 */

interface NameParts {
  host: string;
  namespace: string;
  model: string;
  tag: string;
}

function parseName(name: string): NameParts {
  let rest = name.trim();
  const at = rest.indexOf('@');
  if (at >= 0) rest = rest.slice(0, at);
  const slash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  let tag = 'latest';
  if (colon > slash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const parts = rest.split('/');
  const model = parts.pop() ?? '';
  const namespace = parts.pop() ?? 'library';
  const host = parts.pop() ?? 'registry.ollama.ai';
  return { host, namespace, model, tag };
}

/** The comparison key: every part filled in, lower case. */
export function ollamaNameKey(name: string): string {
  const { host, namespace, model, tag } = parseName(name);
  return `${host}/${namespace}/${model}:${tag}`.toLowerCase();
}

export function ollamaNamesMatch(installed: string, requested: string): boolean {
  return ollamaNameKey(installed) === ollamaNameKey(requested);
}

/** DisplayShortest: `x` → `x:latest`, `registry.ollama.ai/library/x:7b` → `x:7b`. */
export function ollamaDisplayName(name: string): string {
  const { host, namespace, model, tag } = parseName(name);
  const prefix =
    host.toLowerCase() !== 'registry.ollama.ai'
      ? `${host}/${namespace}/`
      : namespace.toLowerCase() !== 'library'
        ? `${namespace}/`
        : '';
  return `${prefix}${model}:${tag}`;
}

/** The namespace, which /v1/models reports as `owned_by`. */
export function ollamaNamespace(name: string): string {
  return parseName(name).namespace;
}

/**
 * A small parser for the Prometheus text exposition format (version 0.0.4), enough for
 * llama-server's `llamacpp:*` (no labels, C++ `%g` numbers such as `1.23457e+06`) and vLLM's
 * prometheus_client output (`vllm:*{engine="0",model_name="m"}`, `_total`/`_created`, `NaN`, `+Inf`).
 * No maintained npm parser targets this small a need without pulling in a client library, so it lives here.
 * Lines it cannot read are skipped rather than failing the whole scrape.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# TYPE` per metric family name. */
  types: Record<string, string>;
  /** `# HELP` per metric family name, unescaped. */
  help: Record<string, string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

// Go's strconv.ParseFloat spellings plus C's printf ones: Inf, +Inf, -Inf, NaN, nan, inf.
export function parseValue(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (lower === '+inf' || lower === 'inf') return Number.POSITIVE_INFINITY;
  if (lower === '-inf') return Number.NEGATIVE_INFINITY;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text)) return undefined;
  return Number(text);
}

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, char: string) => (char === 'n' ? '\n' : char));
}

/** `{a="x",b="y\"z"}` starting at `start`; returns the labels and the index after `}`. */
function parseLabels(
  line: string,
  start: number,
): { labels: Record<string, string>; end: number } | undefined {
  const labels: Record<string, string> = {};
  let index = start + 1;
  for (;;) {
    while (line[index] === ' ' || line[index] === ',') index += 1;
    if (line[index] === '}') return { labels, end: index + 1 };
    const name = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(index))?.[0];
    if (!name) return undefined;
    index += name.length;
    while (line[index] === ' ') index += 1;
    if (line[index] !== '=' || line[index + 1] !== '"') return undefined;
    index += 2;
    let raw = '';
    while (index < line.length && line[index] !== '"') {
      raw += line[index] === '\\' ? `${line[index]}${line[index + 1] ?? ''}` : line[index];
      index += line[index] === '\\' ? 2 : 1;
    }
    if (index >= line.length) return undefined;
    labels[name] = unescape(raw);
    index += 1;
  }
}

function parseSample(line: string): Sample | undefined {
  const name = NAME.exec(line)?.[0];
  if (!name) return undefined;
  let index = name.length;
  let labels: Record<string, string> = {};
  if (line[index] === '{') {
    const parsed = parseLabels(line, index);
    if (!parsed) return undefined;
    labels = parsed.labels;
    index = parsed.end;
  }
  // After the value an optional integer timestamp may follow; we ignore it.
  const [valueText] = line.slice(index).trim().split(/\s+/);
  const value = valueText === undefined ? undefined : parseValue(valueText);
  return value === undefined ? undefined : { name, labels, value };
}

export function parsePrometheusText(text: string): Exposition {
  const exposition: Exposition = { samples: [], types: {}, help: {} };
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line === '') continue;
    const meta = /^#\s*(HELP|TYPE)\s+([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(.*)$/.exec(line);
    if (meta) {
      const [, kind, name = '', rest = ''] = meta;
      if (kind === 'TYPE') exposition.types[name] = rest;
      else exposition.help[name] = unescape(rest);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = parseSample(line);
    if (sample) exposition.samples.push(sample);
  }
  return exposition;
}

/** The sum of every sample of `name` (vLLM has one per engine), or undefined when absent. */
export function sumOf(exposition: Exposition, ...names: string[]): number | undefined {
  for (const name of names) {
    const values = exposition.samples
      .filter((sample) => sample.name === name)
      .map((sample) => sample.value);
    if (values.length > 0) return values.reduce((total, value) => total + value, 0);
  }
  return undefined;
}

/** The largest sample of the first of `names` present (for ratios such as KV usage). */
export function maxOf(exposition: Exposition, ...names: string[]): number | undefined {
  for (const name of names) {
    const values = exposition.samples
      .filter((sample) => sample.name === name)
      .map((sample) => sample.value);
    if (values.length > 0) return Math.max(...values);
  }
  return undefined;
}

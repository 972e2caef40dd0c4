// localagents dashboard: plain browser JavaScript, no build step. Everything arrives as server-sent events
// (`events` for jobs and endpoints, `jobs/ID/events` for the selected job); nothing polls the server. Text from
// records is only ever set with textContent.
'use strict';

/** @typedef {{ id: string, status: string, finished: boolean, task: string, model: string|null, endpoint: string|null, turns: number, max_turns: number, tool_calls: number, created_at: string, started_at: string|null, finished_at: string|null, duration_ms: number|null, queue: {position: number, reason: string}|null, last_activity: {at: string, text: string}|null, last_tool: string|null, error: {kind: string, message: string}|null, [key: string]: unknown }} JobView */

const TRANSCRIPT_LINES = 2000;

/** @type {Map<string, JobView>} */
const jobs = new Map();
/** @type {Map<string, {at: number[], busy: number[], free: number[], kv: (number|null)[]}>} */
const endpointHistory = new Map();
let serverOffsetMs = 0;
let selected = /** @type {string|null} */ (null);
let jobStream = /** @type {EventSource|null} */ (null);
/** @type {any[]} */
let points = [];
/** @type {Map<string, any>} */
const charts = new Map();

const $ = (/** @type {string} */ selector) => {
  const element = document.querySelector(selector);
  if (!element) throw new Error(`missing ${selector}`);
  return /** @type {HTMLElement} */ (element);
};

function el(
  /** @type {string} */ tag,
  /** @type {string} */ text = '',
  /** @type {string} */ className = '',
) {
  const element = document.createElement(tag);
  if (text !== '') element.textContent = text;
  if (className !== '') element.className = className;
  return element;
}

const now = () => Date.now() + serverOffsetMs;

function duration(/** @type {number} */ ms) {
  if (ms < 0) ms = 0;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

function elapsed(/** @type {JobView} */ job) {
  if (job.duration_ms !== null && job.finished) return duration(job.duration_ms);
  const from = Date.parse(job.started_at ?? job.created_at);
  const to = job.finished_at ? Date.parse(job.finished_at) : now();
  return duration(to - from);
}

const number = (/** @type {number|null|undefined} */ value) =>
  value === null || value === undefined ? '–' : value.toLocaleString('en-US');

function statusCell(/** @type {JobView} */ job) {
  const cell = el(
    'td',
    job.orphaned ? `${job.status} (owner gone)` : job.status,
    `status status-${job.status}`,
  );
  return cell;
}

// ---- jobs table -------------------------------------------------------------------------------------------

function jobRow(/** @type {JobView} */ job) {
  const row = el('tr');
  row.dataset.jobId = job.id;
  row.dataset.status = job.status;
  row.setAttribute('aria-selected', String(job.id === selected));
  const activity = job.error
    ? job.error.message
    : job.queue
      ? job.queue.reason
      : (job.last_activity?.text ?? job.task);
  row.append(
    el('td', job.id, 'mono'),
    statusCell(job),
    el('td', job.model ?? '–'),
    el('td', job.endpoint ?? '–'),
    el('td', `${job.turns}`, 'num'),
    el('td', elapsed(job), 'num elapsed'),
    el('td', job.queue ? `#${job.queue.position}` : '', 'num'),
    el('td', activity, 'activity'),
  );
  row.addEventListener('click', () => select(job.id));
  return row;
}

function renderJobs() {
  const body = $('#jobs tbody');
  const sorted = [...jobs.values()].sort(
    (a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id),
  );
  body.replaceChildren(...sorted.map(jobRow));
  $('#no-jobs').hidden = sorted.length > 0;
  $('#jobs').hidden = sorted.length === 0;
}

function tickElapsed() {
  for (const row of document.querySelectorAll('#jobs tbody tr')) {
    const job = jobs.get(/** @type {HTMLElement} */ (row).dataset.jobId ?? '');
    const cell = row.querySelector('.elapsed');
    if (job && cell && !job.finished) cell.textContent = elapsed(job);
  }
}

// ---- endpoints --------------------------------------------------------------------------------------------

function noteSample(/** @type {{at: number, endpoints: any[]}} */ sample) {
  for (const endpoint of sample.endpoints) {
    let history = endpointHistory.get(endpoint.name);
    if (!history)
      endpointHistory.set(endpoint.name, (history = { at: [], busy: [], free: [], kv: [] }));
    history.at.push(sample.at / 1000);
    history.busy.push(endpoint.slots ? endpoint.slots.busy : 0);
    history.free.push(endpoint.slots ? endpoint.slots.free : 0);
    history.kv.push(endpoint.kv_usage === null ? null : Math.round(endpoint.kv_usage * 1000) / 10);
    if (history.at.length > 300) for (const series of Object.values(history)) series.shift();
  }
}

function renderEndpoints(/** @type {{endpoints: any[], config_problems: string[]}} */ sample) {
  const { endpoints } = sample;
  const list = $('#endpoints');
  const problems = $('#config-problems');
  problems.replaceChildren(
    ...sample.config_problems.map((problem) => el('pre', problem, 'problem')),
  );
  const empty = $('#no-endpoints');
  empty.hidden = endpoints.length > 0;
  empty.textContent =
    sample.config_problems.length > 0
      ? 'models.yaml has problems:'
      : 'No endpoints in models.yaml.';
  const cards = endpoints.map((endpoint) => {
    const card = el('article', '', 'endpoint');
    card.dataset.endpoint = endpoint.name;
    card.dataset.up = String(endpoint.up);
    const title = el('h3', `${endpoint.name} `);
    title.append(el('span', endpoint.up ? 'up' : endpoint.status, endpoint.up ? 'up' : 'down'));
    card.append(title, el('p', `${endpoint.backend} · ${endpoint.base_url}`, 'quiet'));
    if (endpoint.error) card.append(el('p', endpoint.error, 'problem'));
    for (const model of endpoint.models) {
      const size = endpoint.context[model];
      card.append(el('p', `${model}${size ? ` · window ${number(size)} tokens` : ''}`, 'served'));
    }
    if (endpoint.slots) {
      card.append(
        el(
          'p',
          `slots: ${endpoint.slots.busy} busy, ${endpoint.slots.free} free of ${endpoint.slots.total}`,
          'slots',
        ),
      );
    }
    if (endpoint.kv_usage !== null) {
      card.append(
        el(
          'p',
          `KV cache ${(endpoint.kv_usage * 100).toFixed(1)} % · ${endpoint.running} running, ${endpoint.waiting} waiting`,
        ),
      );
    }
    const chart = el('div', '', 'chart sparkline');
    card.append(chart);
    return { card, chart, endpoint };
  });
  list.replaceChildren(...cards.map(({ card }) => card));
  for (const { chart, endpoint } of cards) drawSlots(chart, endpoint);
}

function drawSlots(/** @type {HTMLElement} */ target, /** @type {any} */ endpoint) {
  const history = endpointHistory.get(endpoint.name);
  if (!history || typeof uPlot === 'undefined') return;
  const kv = history.kv.some((value) => value !== null);
  const series = [
    { label: 'time' },
    { label: 'busy slots', stroke: '#0969da', fill: 'rgba(9,105,218,0.15)', scale: 'slots' },
    { label: 'free slots', stroke: '#1a7f37', scale: 'slots' },
  ];
  const data = [history.at, history.busy, history.free];
  if (kv) {
    series.push({ label: 'KV %', stroke: '#9a6700', scale: '%' });
    data.push(history.kv);
  }
  target.dataset.points = String(history.at.length);
  const width = Math.max(240, target.clientWidth || 320);
  charts.get(`endpoint:${endpoint.name}`)?.destroy();
  charts.set(
    `endpoint:${endpoint.name}`,
    new uPlot(
      {
        width,
        height: 110,
        legend: { show: true },
        cursor: { show: false },
        scales: {
          slots: { range: (_u, _min, max) => [0, Math.max(1, max)] },
          '%': { range: [0, 100] },
        },
        axes: [
          { space: 60 },
          { scale: 'slots', size: 30 },
          ...(kv ? [{ scale: '%', side: 1, size: 36 }] : []),
        ],
        series,
      },
      data,
      target,
    ),
  );
}

// ---- one job ----------------------------------------------------------------------------------------------

function facts(/** @type {JobView} */ job) {
  const list = $('#detail-facts');
  /** @type {[string, string][]} */
  const rows = [
    ['model', job.model ?? '–'],
    ['endpoint', job.endpoint ?? '–'],
    ['directory', String(job.cwd)],
    [
      'isolation',
      job.worktree
        ? `worktree ${job.worktree.branch} (${job.worktree.state})`
        : String(job.isolation),
    ],
    ['turns', `${job.turns} of ${job.max_turns} · ${job.tool_calls} tool calls`],
    ['elapsed', elapsed(job)],
  ];
  if (job.queue) rows.push(['queue', `#${job.queue.position}: ${job.queue.reason}`]);
  if (job.last_tool) rows.push(['last tool', job.last_tool]);
  if (job.last_activity) rows.push(['last activity', job.last_activity.text]);
  const figures = /** @type {any} */ (job.figures);
  if (figures) {
    rows.push([
      'backend',
      `${figures.requests} requests (${figures.failed_requests} failed) · prompt ${number(figures.prompt_tokens)}, cached ${number(figures.cached_tokens)}${figures.cache_hit_rate === null ? '' : ` (${Math.round(figures.cache_hit_rate * 100)} %)`}, generated ${number(figures.generated_tokens)} · ${figures.prefix_breaks} prefix breaks`,
    ]);
    if (figures.prompt_tokens_per_s !== null || figures.generation_tokens_per_s !== null) {
      rows.push([
        'speed',
        `prompt ${number(figures.prompt_tokens_per_s && Math.round(figures.prompt_tokens_per_s))} tok/s, generation ${number(figures.generation_tokens_per_s && Math.round(figures.generation_tokens_per_s))} tok/s`,
      ]);
    }
  }
  list.replaceChildren(...rows.flatMap(([name, value]) => [el('dt', name), el('dd', value)]));
}

function renderDetail(/** @type {JobView} */ job) {
  $('#detail').hidden = false;
  $('#detail-id').textContent = job.id;
  const status = $('#detail-status');
  status.textContent = job.status;
  status.className = `status status-${job.status}`;
  $('#detail-task').textContent = job.task;
  facts(job);
  const error = $('#detail-error');
  error.hidden = !job.error;
  error.textContent = job.error ? `${job.error.kind}: ${job.error.message}` : '';

  const diffstat = /** @type {any} */ (job.diffstat);
  const diffTarget = $('#detail-diffstat');
  diffTarget.replaceChildren();
  if (diffstat) {
    diffTarget.append(
      el(
        'h3',
        `Changes: ${diffstat.files_changed} files, +${diffstat.insertions} −${diffstat.deletions}`,
      ),
    );
    const table = el('table');
    table.id = 'diffstat';
    for (const file of diffstat.files) {
      const row = el('tr');
      row.append(
        el('td', file.path, 'mono'),
        el('td', file.insertions === null ? 'new' : `+${file.insertions}`, 'num'),
        el('td', file.deletions === null ? '' : `−${file.deletions}`, 'num'),
      );
      table.append(row);
    }
    diffTarget.append(table);
  }
  const verification = /** @type {any} */ (job.verification);
  const verifyTarget = $('#detail-verification');
  verifyTarget.replaceChildren();
  if (verification) {
    verifyTarget.append(
      el(
        'h3',
        `Verification ${verification.passed ? 'passed' : 'failed'}: ${verification.command} (exit ${verification.exit_code ?? '–'}, ${verification.duration_s.toFixed(1)} s)`,
        verification.passed ? 'status-succeeded' : 'status-failed',
      ),
      el('pre', verification.output_tail),
    );
  }
}

function renderRequests() {
  const body = $('#requests tbody');
  body.replaceChildren(
    ...points.map((point) => {
      const row = el('tr', '', point.error ? 'failed' : '');
      if (point.prefix === 'changed') row.classList.add('prefix-changed');
      const notes = [
        ...point.rewrites,
        ...(point.aborted ? ['aborted'] : []),
        ...(point.error ? [point.error] : []),
      ];
      row.append(
        el('td', String(point.seq), 'num'),
        el('td', point.path, 'mono'),
        el('td', String(point.status), 'num'),
        el('td', point.ttfb_ms === null ? '–' : `${number(point.ttfb_ms)} ms`, 'num'),
        el('td', `${number(point.ms)} ms`, 'num'),
        el('td', number(point.prompt_tokens), 'num'),
        el('td', number(point.cached_tokens), 'num'),
        el('td', number(point.output_tokens), 'num'),
        el('td', point.prefix ?? '', 'prefix'),
        el('td', notes.join(' · '), 'notes'),
      );
      return row;
    }),
  );
  drawTimeline();
}

function drawTimeline() {
  if (typeof uPlot === 'undefined') return;
  const seq = points.map((point) => point.seq);
  const bars = uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 40] }) : undefined;
  const ttfb = points.map((point) => point.ttfb_ms ?? point.ms);
  const total = points.map((point) => point.ms);
  /** @type {[string, any[], any[][]][]} */
  const specs = [
    [
      'time',
      [
        { label: 'request' },
        {
          label: 'total ms',
          stroke: '#1a7f37',
          fill: 'rgba(26,127,55,0.35)',
          paths: bars,
          points: { show: false },
        },
        {
          label: 'first byte ms',
          stroke: '#0969da',
          fill: 'rgba(9,105,218,0.6)',
          paths: bars,
          points: { show: false },
        },
      ],
      [seq, total, ttfb],
    ],
    [
      'tokens',
      [
        { label: 'request' },
        {
          label: 'prompt',
          stroke: '#8250df',
          fill: 'rgba(130,80,223,0.3)',
          paths: bars,
          points: { show: false },
        },
        {
          label: 'cached',
          stroke: '#0969da',
          fill: 'rgba(9,105,218,0.6)',
          paths: bars,
          points: { show: false },
        },
        { label: 'generated', stroke: '#bc4c00', scale: 'generated', width: 2 },
      ],
      [
        seq,
        points.map((point) => point.prompt_tokens),
        points.map((point) => point.cached_tokens),
        points.map((point) => point.output_tokens),
      ],
    ],
  ];
  for (const [name, series, data] of specs) {
    const target = $(`#chart-${name}`);
    target.dataset.points = String(seq.length);
    const chart = charts.get(name);
    if (chart && chart.series.length === series.length) {
      chart.setData(data);
      continue;
    }
    chart?.destroy();
    charts.set(
      name,
      new uPlot(
        {
          width: Math.max(320, target.clientWidth || 480),
          height: 220,
          // Whole request numbers, with room for the first and last bar.
          scales: { x: { time: false, range: (_u, min, max) => [min - 0.6, max + 0.6] } },
          axes: [
            { label: 'request', space: 30, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
            { size: 56 },
            ...(name === 'tokens' ? [{ scale: 'generated', side: 1, size: 50 }] : []),
          ],
          series,
        },
        data,
        target,
      ),
    );
  }
}

function appendTranscript(/** @type {string[]} */ lines) {
  const pre = $('#transcript');
  const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.append(document.createTextNode(lines.map((line) => `${line}\n`).join('')));
  // Keep the page light on a long job: only the last lines stay in the page.
  const text = pre.textContent ?? '';
  let cut = text.length;
  let count = 0;
  while (count <= TRANSCRIPT_LINES && cut > 0) {
    cut = text.lastIndexOf('\n', cut - 1);
    count++;
  }
  if (cut > 0) pre.textContent = text.slice(cut + 1);
  pre.dataset.lines = String(Math.min(count, TRANSCRIPT_LINES));
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}

function select(/** @type {string} */ id) {
  if (selected === id && jobStream) return;
  selected = id;
  history.replaceState(null, '', `#job=${encodeURIComponent(id)}`);
  for (const row of document.querySelectorAll('#jobs tbody tr')) {
    row.setAttribute(
      'aria-selected',
      String(/** @type {HTMLElement} */ (row).dataset.jobId === id),
    );
  }
  jobStream?.close();
  const stream = new EventSource(`jobs/${encodeURIComponent(id)}/events`);
  jobStream = stream;
  // Every (re)connection starts over: the server sends the job's requests and transcript tail again.
  stream.addEventListener('open', () => {
    points = [];
    $('#transcript').textContent = '';
  });
  stream.addEventListener('job', (event) => {
    const job = JSON.parse(event.data);
    jobs.set(job.id, job);
    renderDetail(job);
  });
  stream.addEventListener('requests', (event) => {
    points.push(...JSON.parse(event.data));
    renderRequests();
  });
  stream.addEventListener('transcript', (event) => appendTranscript(JSON.parse(event.data)));
  stream.addEventListener('missing', () => {
    stream.close();
    $('#detail').hidden = true;
  });
}

// ---- the overview stream ----------------------------------------------------------------------------------

function connect() {
  const connection = $('#connection');
  const stream = new EventSource('events');
  stream.addEventListener('open', () => {
    connection.dataset.state = 'open';
    connection.textContent = 'live';
  });
  stream.addEventListener('error', () => {
    connection.dataset.state = stream.readyState === EventSource.CLOSED ? 'closed' : 'connecting';
    connection.textContent =
      stream.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting…';
  });
  stream.addEventListener('hello', (event) => {
    const hello = JSON.parse(event.data);
    serverOffsetMs = hello.now - Date.now();
    $('#version').textContent = `v${hello.version}`;
  });
  stream.addEventListener('jobs', (event) => {
    jobs.clear();
    for (const job of JSON.parse(event.data)) jobs.set(job.id, job);
    renderJobs();
    const wanted = new URLSearchParams(location.hash.slice(1)).get('job');
    const first = [...jobs.values()].sort((a, b) => b.created_at.localeCompare(a.created_at))[0];
    const target = wanted && jobs.has(wanted) ? wanted : (selected ?? first?.id);
    if (target) select(target);
  });
  stream.addEventListener('job', (event) => {
    const job = JSON.parse(event.data);
    const isNew = !jobs.has(job.id);
    jobs.set(job.id, job);
    renderJobs();
    if (isNew && selected === null) select(job.id);
  });
  stream.addEventListener('endpoints-history', (event) => {
    endpointHistory.clear();
    const samples = JSON.parse(event.data);
    for (const sample of samples) noteSample(sample);
    const last = samples[samples.length - 1];
    if (last) renderEndpoints(last);
  });
  stream.addEventListener('endpoints', (event) => {
    const sample = JSON.parse(event.data);
    noteSample(sample);
    renderEndpoints(sample);
  });
}

setInterval(tickElapsed, 1000);
connect();

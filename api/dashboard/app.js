/* histd dashboard: plain JavaScript, no build step, no network but the daemon.
 *
 * Talks to the v1 API (api/openapi.yaml) through the JavaScript client
 * (js/histd.js, a link to api/js): uploads a point file, submits a job,
 * follows it (long polls of a second, for its progress), and draws the
 * result as an SVG chart, by the result schema (GET /v1/schema). The API base URL and a bearer token can be set under
 * "Connection" (kept in localStorage); `?api=URL` in the page's address sets
 * the base for one visit, so this page also works hosted on another origin
 * against a daemon started with --cors-origin.
 *
 * A token belongs to the origin it was saved for (localStorage
 * 'histd.tokens', origin -> token) and is sent nowhere else: a link whose
 * ?api= names another origin first asks the user, showing where requests
 * would go, and even then sends that origin only a token saved for it.
 * Changing the base under "Connection" shows the token's destination and
 * swaps in the token saved for the new origin (none: empty).
 */
import { Client, HistdError, JobFailed, Job, DONE as ENDED, formatOfName } from './js/histd.js';

(function () {
  const $ = (id) => document.getElementById(id);
  const SVGNS = 'http://www.w3.org/2000/svg';
  const LS_TOKEN = 'histd.token';   // before tokens were kept per origin
  const LS_TOKENS = 'histd.tokens'; // {"http://host:port": "token", ...}
  const LS_BASE = 'histd.apiBase';

  const DONE = new Set(ENDED);

  const state = {
    base: '',
    token: '',
    client: new Client(''), // the daemon at base, with token
    datasets: [],
    jobs: [],
    kernels: [],
    job: null,        // the job on show
    result: null,     // its result, once succeeded
    following: null,  // the AbortController of the job being followed
    focusBar: -1,
    overlays: [],     // results pinned to be drawn with the one on show: {id, label, result}
    schema: undefined, // GET /v1/schema's fields; null where the daemon has none
    view: null,       // the histogram of a per-point or pair result's values (valueHistogram)
    submitted: null,  // the job this page last submitted, whose errors show under the form
    curve: 'counts',  // a two-axis result's plot: 'counts' (its heat map) or 'curve' (w_p, the multipoles)
    curveFor: null,   // the job that choice is for
    pairs: null,      // {job, docs}: the jobs in the same bins, DR and RR for it (docs null while read)
    pairCache: new Map(), // id -> a finished job's whole doc, read for pairs
  };

  /* ---- settings ------------------------------------------------------- */

  // The origin requests to `base` go to ('' = this page's), or null when
  // `base` is not an http: or https: URL. Every use of a base goes through
  // here: a javascript: or data: base has the origin "null", and the footer's
  // links (base + path) would run it as script in this page, which can read
  // every saved token.
  function originOf(base) {
    let u;
    try { u = new URL(base || location.href, location.href); } catch (_) { return null; }
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : null;
  }
  function loadTokens() {
    let t = {};
    try { t = JSON.parse(localStorage.getItem(LS_TOKENS) || '{}') || {}; } catch (_) { t = {}; }
    const legacy = localStorage.getItem(LS_TOKEN);
    if (legacy) { // saved before tokens had origins: it was for the saved base
      const o = originOf(localStorage.getItem(LS_BASE) || '');
      if (o && !(o in t)) t[o] = legacy;
      localStorage.removeItem(LS_TOKEN);
      localStorage.setItem(LS_TOKENS, JSON.stringify(t));
    }
    return t;
  }
  function tokenFor(base) {
    const o = originOf(base);
    const t = loadTokens();
    return o && Object.prototype.hasOwnProperty.call(t, o) ? t[o] : '';
  }
  function saveToken(base, token) {
    const o = originOf(base);
    if (!o) return;
    const t = loadTokens();
    if (token) t[o] = token; else delete t[o];
    localStorage.setItem(LS_TOKENS, JSON.stringify(t));
  }

  function useBase(base) {
    if (base && !originOf(base)) base = ''; // (a base saved by an older page)
    state.base = base;
    state.token = tokenFor(base);
    state.client = new Client(base, { token: state.token });
    $('api-base').value = state.base;
    $('token').value = state.token;
    $('token').dataset.for = originOf(base) || '';
    showTokenDest();
    for (const [id, path] of [['link-kernels', '/v1/kernels'], ['link-devices', '/v1/devices'], ['link-metrics', '/metrics']]) {
      $(id).href = state.base ? state.base + path : path.slice(1);
    }
  }

  // Where the token in the form would be sent, under the form.
  function showTokenDest() {
    const o = originOf($('api-base').value.trim());
    $('token-dest').textContent = o ? 'Sent only to ' + o + '.' : 'Not an http: or https: URL: nothing is sent.';
  }

  // Returns false when the page must wait for the user's answer about ?api=.
  function loadSettings() {
    const q = new URLSearchParams(location.search);
    const asked = (q.get('api') || '').replace(/\/+$/, '');
    useBase((localStorage.getItem(LS_BASE) || '').replace(/\/+$/, ''));
    const current = state.base;
    if (!asked || originOf(asked) === originOf(current)) {
      if (asked) useBase(asked);
      return true;
    }
    askBase(asked, current);
    return false;
  }

  // ?api= names another origin than the one in use: ask before talking to it.
  function askBase(asked, saved) {
    const to = originOf(asked);
    const from = originOf(saved);
    const box = $('api-confirm');
    $('api-confirm-to').textContent = to || asked;
    $('api-confirm-token').textContent = !to ? 'It is not an http: or https: URL, so it cannot be used.'
      : tokenFor(asked) ? 'The token you saved for ' + to + ' goes with them.'
        : 'No token goes with them: you saved none for ' + to + '.' + (tokenFor(saved) ? ' The token for ' + from + ' stays there.' : '');
    $('api-confirm-use').disabled = !to;
    $('api-confirm-use').textContent = to ? 'Use ' + to : 'Cannot use it';
    $('api-confirm-stay').textContent = 'Stay with ' + from;
    box.hidden = false;
    $('engine').textContent = 'waiting for your choice';
    $('api-confirm-use').onclick = () => { box.hidden = true; useBase(asked); connect(); };
    $('api-confirm-stay').onclick = () => { box.hidden = true; connect(); };
  }

  function saveSettings(ev) {
    ev.preventDefault();
    const base = $('api-base').value.trim().replace(/\/+$/, '');
    const token = $('token').value.trim();
    if (!originOf(base)) {
      showAlert(new HistdError(0, 'Not an http: or https: URL', '"' + base + '" is not an API base URL such as http://127.0.0.1:8080.'));
      return;
    }
    if (base) localStorage.setItem(LS_BASE, base); else localStorage.removeItem(LS_BASE);
    saveToken(base, token); // for this base's origin only
    useBase(base);
    $('settings').open = false;
    $('api-confirm').hidden = true;
    hideAlert();
    connect();
  }

  function clearSettings() {
    localStorage.removeItem(LS_BASE);
    localStorage.removeItem(LS_TOKEN);
    localStorage.removeItem(LS_TOKENS);
    useBase('');
    connect();
  }

  // A new base in the form: show where the token goes, and take the token
  // saved for that origin (if any) rather than carry the old one there.
  function baseEdited() {
    const base = $('api-base').value.trim();
    const o = originOf(base) || '';
    if ($('token').dataset.for !== o) {
      $('token').value = o ? tokenFor(base) : '';
      $('token').dataset.for = o;
    }
    showTokenDest();
  }

  /* ---- the result schema ------------------------------------------------ */

  // GET /v1/schema, once a connection: the fields a result may hold, with
  // their group, shape, type, unit and outputs. Results are read by it; a
  // daemon without it (an older histd) leaves state.schema null, and the
  // page then reads a result by its members alone.
  function loadSchema() {
    return state.client.schema().then((f) => { state.schema = f; }, () => { state.schema = null; });
  }

  // The field's value in r as {v}, or null where r does not have it (a
  // member set to null is had: nearest's radius).
  function fieldIn(r, f) {
    const o = f.group ? r[f.group] : r;
    return o && typeof o === 'object' && !Array.isArray(o) && Object.prototype.hasOwnProperty.call(o, f.name)
      ? { v: o[f.name] } : null;
  }
  function schemaField(name, group) {
    return (state.schema || []).find((f) => f.name === name && (f.group || null) === (group || null)) || null;
  }
  const isObject = (v) => v !== null && typeof v === 'object';

  // The result's scalars that its JSON carries, in the schema's order: the
  // fields of scalar shape it has. Without a schema, its members that are
  // neither arrays nor objects, and those of its objects (timing_ms).
  function scalarFields(r) {
    if (state.schema) {
      return state.schema.filter((f) => f.shape === 'scalar' && f.outputs.includes('json') && fieldIn(r, f));
    }
    const out = [];
    for (const [k, v] of Object.entries(r)) {
      if (!isObject(v)) out.push({ name: k, group: null, type: '', unit: '', help: '' });
      else if (!Array.isArray(v)) {
        for (const [k2, v2] of Object.entries(v)) if (!isObject(v2)) out.push({ name: k2, group: k, type: '', unit: '', help: '' });
      }
    }
    return out;
  }

  // A schema unit in words: "length" is the result's unit (the points'
  // file's), "input units" where the file named none.
  function unitText(u, r, bare) {
    if (!u) return '';
    const len = r && r.unit ? r.unit : bare ? 'input units' : 'length';
    return u.replace(/length\^3/g, len + '³').replace(/length/g, len);
  }

  /* ---- per-point and pair results: a histogram of their values --------- */

  // The values a statistic's plot shows, what its x axis says, and their
  // fields as the schema gives them (these stand in where a daemon has no
  // schema).
  const PLOTTED = { per_point: 'neighbours', nearest: 'nearest_d', pairs: 'd' };
  const AXIS = { per_point: 'neighbours within R', nearest: 'distance to the nearest neighbour', pairs: 'pair distance d' };
  const PLOTTED_FALLBACK = {
    neighbours: { name: 'neighbours', type: 'u64', unit: 'points' },
    nearest_d: { name: 'nearest_d', type: 'f64', unit: 'length' },
    d: { name: 'd', type: 'f64', unit: 'length' },
  };
  const FLOAT_BINS = 50;
  const INT_BARS = 200; // at most, a bar per count value below it

  // A per-point or pair result's values as a histogram (null for others):
  // integers a bar per value (several per bar past INT_BARS values),
  // distances in FLOAT_BINS equal bins from 0 to the radius (or to the
  // largest value where the search had none), the last bin closed. Every
  // frame's values together; nulls (no neighbour within the radius) are
  // counted apart.
  function valueHistogram(r) {
    const name = r && PLOTTED[r.statistic];
    if (!name || !Array.isArray(r[name])) return null;
    const field = schemaField(name) || PLOTTED_FALLBACK[name];
    const raw = r[name];
    const flat = raw.length && Array.isArray(raw[0]) ? raw.flat() : raw;
    const vals = [];
    let nulls = 0;
    let sum = 0;
    let max = -Infinity;
    for (const x of flat) {
      if (x === null || x === undefined) { nulls++; continue; }
      const v = Number(x);
      vals.push(v);
      sum += v;
      if (v > max) max = v;
    }
    const integer = field.type === 'u64' || field.type === 'i64';
    const h = { field, integer, nulls, n: vals.length, mean: vals.length ? sum / vals.length : null,
      max: vals.length ? max : null, what: r.statistic === 'pairs' ? 'pairs' : 'points' };
    let k;
    if (integer) {
      const top = vals.length ? max + 1 : 1;
      h.step = Math.max(1, Math.ceil(top / INT_BARS));
      k = Math.ceil(top / h.step);
      h.edges = Array.from({ length: k + 1 }, (_, i) => i * h.step - 0.5);
      h.bin = (v) => Math.floor(v / h.step);
    } else {
      h.top = r.radius > 0 ? Number(r.radius) : max > 0 ? max : 1;
      h.width = h.top / FLOAT_BINS;
      k = FLOAT_BINS;
      h.edges = Array.from({ length: k + 1 }, (_, i) => (i === k ? h.top : i * h.width));
      h.bin = (v) => Math.min(k - 1, Math.max(0, Math.floor(v / h.width)));
    }
    h.counts = new Array(k).fill(0);
    for (const v of vals) h.counts[h.bin(v)]++;
    return h;
  }

  // The x axis of a value histogram: what, in which unit, how binned.
  function valueAxis(r, h) {
    const R = fmtNum(Number(r.radius));
    const what = AXIS[r.statistic].replace('R', R + (r.unit ? ' ' + r.unit : ''));
    if (h.integer) return what + ' (' + (h.step === 1 ? 'a bar per count' : 'a bar per ' + h.step + ' counts') + ')';
    return what + ' (' + unitText(h.field.unit, r, true) + '; ' + h.counts.length + ' bins of ' + fmtNum(h.width) +
      ' from 0 to ' + (r.radius > 0 ? 'R = ' + R : 'the largest') + ')';
  }

  // What a value histogram leaves out or puts together, in a line above it.
  function valueNote(r, h) {
    const parts = [];
    if (r.frames > 1) parts.push("all " + fmtInt(r.frames) + " frames' values together");
    if (h.nulls) {
      parts.push('no neighbour within ' + fmtNum(Number(r.radius)) + ': ' + fmtInt(h.nulls) + ' of ' +
        fmtInt(h.nulls + h.n) + (r.frames > 1 ? ' values' : ' points') + ', not drawn');
    }
    if (!h.n && !h.nulls) parts.push(r.statistic === 'pairs' ? 'no pair lies within ' + fmtNum(Number(r.radius)) : 'no points');
    return parts.join('; ');
  }

  // The values bin i holds, in words: "3", "10–19", "[0.5, 0.6)".
  function valueBinText(h, i) {
    if (h.integer) return h.step === 1 ? String(i) : i * h.step + '–' + ((i + 1) * h.step - 1);
    const last = i === h.counts.length - 1;
    return '[' + fmtNum(h.edges[i]) + ', ' + fmtNum(h.edges[i + 1]) + (last ? ']' : ')');
  }

  /* ---- alerts and small formatting helpers ---------------------------- */

  // err's title and sentence in the box `id` (its id-title, id-detail).
  function showError(id, err) {
    const title = err instanceof HistdError ? err.title : 'Error';
    const detail = err instanceof HistdError ? (err.detail || '') : String(err.message || err);
    $(id + '-title').textContent = title + (detail ? ':' : '');
    $(id + '-detail').textContent = detail;
    $(id).hidden = false;
    $(id).scrollIntoView({ block: 'nearest' }); // in view, beside what it is about
  }
  function showAlert(err) { showError('alert', err); }
  function hideAlert() { $('alert').hidden = true; }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  const intFmt = new Intl.NumberFormat('en-US');
  function fmtInt(n) { return n === undefined || n === null ? '–' : intFmt.format(n); }
  function fmtNum(x) {
    if (x === undefined || x === null || !isFinite(x)) return '–';
    if (x === 0) return '0';
    const a = Math.abs(x);
    if (a >= 1e6 || a < 1e-3) return x.toExponential(3).replace(/\.?0+e/, 'e');
    return String(+x.toPrecision(6));
  }
  function fmtShort(n) { // 1234567 -> 1.23M; 1.25e19 beyond the T's
    const a = Math.abs(n);
    if (a >= 1e15) return (+n).toExponential(2).replace('e+', 'e');
    for (const [v, s] of [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']]) {
      if (a >= v) return +(n / v).toPrecision(3) + s;
    }
    return String(+n.toPrecision(4));
  }
  function fmtMs(ms) {
    if (ms === undefined || ms === null) return '–';
    if (ms >= 10000) return (ms / 1000).toFixed(1) + ' s';
    if (ms >= 100) return ms.toFixed(0) + ' ms';
    if (ms >= 1) return ms.toFixed(1) + ' ms';
    return ms.toFixed(3) + ' ms';
  }
  function fmtBytes(b) {
    if (b === undefined || b === null) return '–';
    for (const [v, s] of [[2 ** 30, 'GiB'], [2 ** 20, 'MiB'], [2 ** 10, 'KiB']]) {
      if (b >= v) return (b / v).toFixed(1) + ' ' + s;
    }
    return b + ' B';
  }
  function fmtTime(t) {
    if (!t) return '–';
    const d = new Date(t);
    if (isNaN(d)) return String(t);
    const now = new Date();
    const sameDay = d.toDateString() === now.toDateString();
    return sameDay ? d.toLocaleTimeString() : d.toLocaleString();
  }
  function shortId(id) { return String(id || '').slice(0, 8); }
  function datasetLabel(id) {
    const d = state.datasets.find((x) => x.id === id);
    return d ? (d.name || shortId(d.id)) : shortId(id);
  }

  /* ---- connection: kernels, devices, lists ----------------------------- */

  async function connect() {
    $('engine').textContent = 'connecting…';
    $('engine').className = 'engine';
    state.schema = undefined; // (the base may name another daemon: its client reads the schema anew)
    try {
      const [k, d] = await Promise.all([state.client.kernels(), state.client.devices(), loadSchema()]);
      state.kernels = k || [];
      fillKernels();
      showEngine(d);
      if (state.job) renderJob(state.job); // read again by this daemon's schema
      await refreshLists();
      const m = /job=([^&]+)/.exec(location.hash);
      if (m && !state.job) showJob(decodeURIComponent(m[1]));
    } catch (e) {
      $('engine').textContent = e.status === 401 ? 'token needed' : 'offline';
      $('engine').className = 'engine bad';
      if (e.status === 401) $('settings').open = true;
      showAlert(e);
    }
  }

  function showEngine(d) {
    const box = $('engine');
    box.replaceChildren();
    const devs = (d && d.devices) || [];
    const engine = (d && d.engine) || 'cpu';
    let text;
    if (engine === 'cuda' && devs.length) {
      const names = devs.map((x) => (typeof x === 'string' ? x : x.name || 'GPU'));
      text = devs.length === 1 ? names[0] : devs.length + ' GPUs (' + names[0] + ')';
    } else {
      const th = d && d.cpu && d.cpu.threads;
      text = 'CPU engine' + (th ? ' · ' + th + ' threads' : '');
    }
    box.append(el('span', { class: 'dot ' + (engine === 'cuda' ? 'gpu' : 'cpu'), 'aria-hidden': 'true' }), text);
    box.className = 'engine ok';
    if (d && d.gpu_unavailable_reason) box.title = 'No GPU: ' + d.gpu_unavailable_reason;
  }

  function fillKernels() {
    const sel = $('kernel');
    const prev = sel.value || 'auto';
    sel.replaceChildren();
    const list = state.kernels.slice();
    if (!list.some((k) => k.name === 'auto')) list.unshift({ name: 'auto', summary: 'the fastest exact kernel for the workload', available: true });
    const groups = {};
    for (const k of list) {
      const g = k.engine === 'any' ? '' : (k.engine === 'cuda' ? 'GPU' : 'CPU');
      (groups[g] = groups[g] || []).push(k);
    }
    for (const g of ['', 'CPU', 'GPU']) {
      if (!groups[g]) continue;
      const parent = g ? el('optgroup', { label: g + ' kernels' }) : sel;
      for (const k of groups[g]) {
        const avail = k.available !== false;
        parent.append(el('option', { value: k.name, disabled: !avail, text: k.name + (avail ? '' : ' (no GPU)') }));
      }
      if (g) sel.append(parent);
    }
    sel.value = list.some((k) => k.name === prev && k.available !== false) ? prev : 'auto';
    kernelInfo();
  }
  function kernelInfo() {
    const k = state.kernels.find((x) => x.name === $('kernel').value);
    $('kernel-info').textContent = k ? k.summary || '' : 'the fastest exact kernel for the workload';
  }

  async function refreshLists() {
    const [d, j] = await Promise.all([state.client.datasets(), state.client.jobs()]);
    state.datasets = sortNewest(d || []);
    state.jobs = sortNewest(j || []);
    renderDatasets();
    renderJobs();
    state.pairs = null; // DR and RR are looked for again
    if (state.curve === 'curve') renderChart();
  }
  function sortNewest(a) {
    return a.slice().sort((x, y) => String(y.created_at || '').localeCompare(String(x.created_at || '')));
  }

  function renderDatasets() {
    const sel = $('dataset');
    const prev = sel.value;
    sel.replaceChildren(el('option', { value: '', text: state.datasets.length ? 'pick a dataset' : 'upload or pick a dataset' }));
    for (const d of state.datasets) {
      sel.append(el('option', { value: d.id, text: (d.name || shortId(d.id)) + ' — ' + sizeText(d) }));
    }
    if (prev && state.datasets.some((d) => d.id === prev)) sel.value = prev;
    else if (state.datasets.length && !prev) sel.value = state.datasets[0].id;
    const selB = $('dataset-b');
    const prevB = selB.value;
    selB.replaceChildren(el('option', { value: '', text: 'none' }));
    for (const d of state.datasets) {
      selB.append(el('option', { value: d.id, text: (d.name || shortId(d.id)) + ' — ' + sizeText(d) }));
    }
    selB.value = prevB && state.datasets.some((d) => d.id === prevB) ? prevB : '';
    datasetInfo();

    const tb = $('datasets').tBodies[0];
    tb.replaceChildren();
    if (!state.datasets.length) tb.append(el('tr', {}, el('td', { colspan: 6, class: 'empty', text: 'No datasets yet.' })));
    for (const d of state.datasets) {
      const tr = el('tr', { class: 'clickable', tabindex: 0, 'data-dataset': d.id, title: 'Use this dataset for the next job' },
        el('td', {}, el('span', { class: 'name', text: d.name || shortId(d.id) })),
        el('td', { class: 'num', text: fmtInt(d.n) }),
        el('td', { text: d.format || '–' }),
        el('td', { class: 'num', text: fmtBytes(d.bytes) }),
        el('td', { text: fmtTime(d.created_at) }),
        el('td', { class: 'act' }, el('button', {
          type: 'button', class: 'icon danger', 'aria-label': 'Delete dataset ' + (d.name || d.id), title: 'Delete',
          onclick: (ev) => { ev.stopPropagation(); deleteDataset(d); },
        }, '🗑')));
      const pick = () => { $('dataset').value = d.id; datasetInfo(); $('width').focus(); };
      tr.addEventListener('click', pick);
      tr.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); pick(); } });
      tb.append(tr);
    }
  }

  // A dataset's size: "400 points", or a trajectory's "90 atoms × 4 frames".
  function sizeText(d) {
    const f = Number(d.frames) || 1;
    return f > 1 ? fmtInt(Number(d.n) / f) + ' atoms × ' + fmtInt(f) + ' frames' : fmtInt(d.n) + ' points';
  }

  function datasetInfo() {
    const d = state.datasets.find((x) => x.id === $('dataset').value);
    const box = $('dataset-info');
    if (!d) { box.textContent = ''; return; }
    const b = d.bounds;
    const per = Number(d.n) / (Number(d.frames) || 1); // a frame's atoms
    let text = sizeText(d) + ', ' + fmtInt(per * (per - 1) / 2) + ' pairs' + (d.frames > 1 ? ' a frame' : '');
    if (b && b.min && b.max) {
      const diag = Math.hypot(b.max[0] - b.min[0], b.max[1] - b.min[1], b.max[2] - b.min[2]);
      text += '; box diagonal ' + fmtNum(diag);
      box.dataset.diagonal = diag;
    }
    const a = d.atoms;
    if (d.unit) text += '; in ' + d.unit;
    if (a && a.elements) text += '; ' + Object.entries(a.elements).map(([k, v]) => fmtInt(v) + ' ' + k).join(', ');
    if (a && a.molecules) text += ' in ' + fmtInt(a.molecules) + ' molecules';
    box.textContent = text;
    offerSelections(a);
    bucketHint();
    boxHint();
  }

  // What the periodic box field will use, said under it and in its
  // placeholder: the box typed there, else the file's own box (each frame
  // its own), else open space.
  function boxHint() {
    const d = state.datasets.find((x) => x.id === $('dataset').value);
    const typed = $('box').value.trim();
    const fileBox = d && Array.isArray(d.box) ? d.box.map(fmtNum).join(' × ') + (d.unit ? ' ' + d.unit : '') : '';
    $('box').placeholder = fileBox ? "empty = the file's box (" + fileBox + ')' : 'empty = open space (no box)';
    let use;
    if (typed) use = 'Uses the box typed here' + (fileBox ? ", not the file's (" + fileBox + ')' : '') + '.';
    else if (fileBox) use = "Empty: the file's own box, " + fileBox + (d.frames > 1 ? ' in its first frame, each frame its own' : '') + '.';
    else use = 'Empty: open space, no periodic images' + (d ? ' (the file has no box)' : '') + '.';
    $('box-hint').textContent = use + " L (a cube), or Lx, Ly, Lz, or LAMMPS's six numbers lx, ly, lz, xy, xz, yz." +
      ' A periodic histogram adds g(r) and the coordination number.';
  }
  // The selections a dataset's atoms allow, as suggestions for select_a/b.
  function offerSelections(a) {
    const list = $('selections');
    const opts = ['all'];
    const kinds = [['elements', 'element'], ['names', 'name'], ['resnames', 'resname'], ['types', 'type']];
    for (const [key, kind] of kinds)
      for (const v of Object.keys((a && a[key]) || {})) if (v !== '...') opts.push(kind + ':' + v);
    list.replaceChildren(...opts.map((v) => el('option', { value: v })));
    $('exclude').disabled = !(a && a.molecules);
  }
  function bucketHint() {
    const diag = +$('dataset-info').dataset.diagonal;
    const w = +$('width').value;
    $('buckets').placeholder = diag && w > 0 ? 'cover all (' + (Math.floor(diag / w) + 1) + ')' : 'cover all';
  }

  function renderJobs() {
    const tb = $('jobs').tBodies[0];
    tb.replaceChildren();
    if (!state.jobs.length) tb.append(el('tr', {}, el('td', { colspan: 7, class: 'empty', text: 'No jobs yet.' })));
    for (const j of state.jobs) {
      const p = j.params || {};
      const t = j.timing_ms || {};
      const tr = el('tr', { class: 'clickable' + (state.job && state.job.id === j.id ? ' current' : ''), tabindex: 0, 'data-job': j.id, title: 'Show this job' },
        el('td', {}, el('code', { text: shortId(j.id) })),
        el('td', {}, el('span', { class: 'badge ' + j.status, text: j.status })),
        el('td', { text: jobDatasets(j) }),
        el('td', { text: p.kernel || 'auto' }),
        el('td', { class: 'num', text: binsLabel(p, j.result, j.edges_count) }),
        el('td', { class: 'num', text: DONE.has(j.status) ? fmtMs(t.total) : '' }),
        el('td', { text: fmtTime(j.created_at) }));
      const open = () => showJob(j.id);
      tr.addEventListener('click', open);
      tr.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); } });
      tb.append(tr);
    }
  }

  function selectTab(which) {
    for (const t of ['jobs', 'datasets']) {
      $('tab-' + t).setAttribute('aria-selected', String(t === which));
      $('panel-' + t).hidden = t !== which;
    }
  }

  async function deleteDataset(d) {
    if (!confirm('Delete dataset ' + (d.name || d.id) + '?')) return;
    try {
      await state.client.deleteDataset(d.id);
      await refreshLists();
    } catch (e) { showAlert(e); }
  }

  /* ---- upload ---------------------------------------------------------- */

  // The format forced under Format, else the one the file's name says.
  function formatOf(file) {
    const forced = $('format').value;
    if (forced) return forced;
    const f = formatOfName(file.name);
    return f ? f[0] : null;
  }

  async function upload(file) {
    hideAlert();
    const fmt = formatOf(file);
    if (!fmt) {
      showAlert(new HistdError(0, 'Unknown format', 'cannot tell the format of "' + file.name + '" from its name; pick one under Format and drop it again.'));
      $('format').focus();
      return;
    }
    const status = $('upload-status');
    const bar = $('upload-progress');
    status.textContent = 'Uploading ' + file.name + ' (' + fmtBytes(file.size) + ', ' + fmt + ')…';
    status.className = 'status-line';
    bar.hidden = false;
    bar.value = 0;
    let ds;
    try {
      ds = await state.client.upload(file, {
        name: $('ds-name').value.trim() || file.name,
        format: $('format').value || undefined,
        onProgress: (sent, size) => { if (size) bar.value = sent / size; },
      });
    } catch (e) {
      bar.hidden = true;
      status.textContent = '';
      showAlert(e);
      return;
    }
    bar.hidden = true;
    $('ds-name').value = '';
    try { await refreshLists(); } catch (e) { showAlert(e); }
    $('dataset').value = ds.id;
    datasetInfo();
    // last, so that "Uploaded" means the new dataset is listed and selected
    const frames = Number(ds.frames) || 1;
    status.textContent = 'Uploaded ' + (ds.name || file.name) + ': ' + fmtInt(ds.n) + ' points' +
      (frames > 1 ? ' (' + fmtInt(Number(ds.n) / frames) + ' atoms × ' + fmtInt(frames) + ' frames)' : '') + '.';
    status.className = 'status-line ok';
  }

  function setupDrop() {
    const drop = $('drop');
    const input = $('file');
    drop.addEventListener('click', () => input.click());
    drop.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); input.click(); } });
    input.addEventListener('change', () => { if (input.files.length) upload(input.files[0]); input.value = ''; });
    for (const ev of ['dragenter', 'dragover']) {
      drop.addEventListener(ev, (e) => { e.preventDefault(); drop.classList.add('over'); });
    }
    for (const ev of ['dragleave', 'drop']) {
      drop.addEventListener(ev, () => drop.classList.remove('over'));
    }
    drop.addEventListener('drop', (e) => {
      e.preventDefault();
      if (e.dataTransfer.files.length) upload(e.dataTransfer.files[0]);
    });
    // A file dropped anywhere else must not make the browser navigate away.
    window.addEventListener('dragover', (e) => e.preventDefault());
    window.addEventListener('drop', (e) => e.preventDefault());
  }

  /* ---- jobs ------------------------------------------------------------ */

  async function submitJob(ev) {
    ev.preventDefault();
    hideAlert();
    hideFormError();
    const body = {
      dataset: $('dataset').value,
      kernel: $('kernel').value || 'auto',
      precision: document.querySelector('input[name=precision]:checked').value,
    };
    const refuse = (title, detail, focus) => { showFormError(new HistdError(0, title, detail)); if (focus) $(focus).focus(); return false; };
    if (!body.dataset) { refuse('No dataset', 'upload a point file or pick a dataset first.'); return; }
    if (!statisticParams(body, refuse)) return;
    const boxInput = $('box').value.trim();
    if (boxInput) {
      const box = boxInput.split(/[\s,;]+/).filter((t) => t !== '').map(Number);
      if (!box.every((v) => isFinite(v))) { refuse('Bad periodic box', '"' + boxInput + '" is not a list of numbers (L, or Lx, Ly, Lz, or six numbers).', 'box'); return; }
      body.box = box; // the daemon judges the rest (its sentence shows if refused)
    }
    if ($('dataset-b').value) body.dataset_b = $('dataset-b').value;
    for (const [id, key] of [['select-a', 'select_a'], ['select-b', 'select_b'], ['frames', 'frames']]) {
      const v = $(id).value.trim();
      if (v) body[key] = v; // the daemon judges them (its sentence shows if refused)
    }
    if ($('exclude').checked) body.exclude = 'molecule';
    if ($('blocks').value !== '') body.blocks = Number($('blocks').value);
    if ($('partials').value) body.partials = $('partials').value;
    if ($('block-size').value !== '') body.block_size = Number($('block-size').value);
    const btn = $('submit');
    btn.disabled = true;
    try {
      const job = await state.client.submit(body);
      state.submitted = job.id;
      state.jobs.unshift(job.doc);
      renderJobs();
      selectTab('jobs');
      follow(job);
    } catch (e) {
      showFormError(e);
    } finally {
      btn.disabled = false;
    }
  }

  // An error about the job the form asks for (the daemon's problem+json
  // sentence, or the form's own), under the Compute button.
  function showFormError(err) { showError('job-error', err); }
  function hideFormError() { $('job-error').hidden = true; }

  // What each statistic in the form asks for: the hint under it, the radius
  // field's label (none: no radius), whether R may be left empty, the
  // button's words, and the parameters for radius R (NaN: none given).
  const STATISTICS = {
    histogram: { hint: 'Every pair distance, counted in bins; in a periodic box also g(r) and the coordination number.', button: 'Compute histogram' },
    per_point: {
      hint: "For every point, how many others lie within R (each atom's coordination). Shown as a histogram of those counts.",
      radius: 'R, the neighbour distance', button: 'Compute neighbours',
      params: (R) => ({ within: R, per_point: true }),
    },
    nearest: {
      hint: "For every point, the distance to its nearest other point. Shown as a histogram of those distances.",
      radius: 'Search radius', optional: true, button: 'Compute nearest neighbours',
      params: (R) => (isNaN(R) ? { nearest: true } : { nearest: true, within: R }),
    },
    pairs: {
      hint: 'Every pair with d ≤ R, listed (i, j, d). Shown as a histogram of d; CSV, JSON and NPZ hold the list.',
      radius: 'R, the largest distance listed', button: 'Compute pair list',
      params: (R) => ({ pairs_within: R }),
    },
    per_point_histogram: {
      hint: "Each point's own histogram and g(r) against the others, in the bins (the site-specific g(r), MDAnalysis's InterRDF_s). The chart shows the whole g(r) and the first " + 8 + " sites' own; CSV, JSON and NPZ hold every row. The bins need a count.",
      button: 'Compute per-point histograms', extra: { per_point_histogram: true },
    },
  };

  function statisticShown() {
    const st = STATISTICS[$('statistic').value] || STATISTICS.histogram;
    $('statistic-hint').textContent = st.hint;
    $('hist-opts').hidden = !!st.radius;
    $('radius-box').hidden = !st.radius;
    if (st.radius) {
      $('radius-label').replaceChildren(st.radius + ' ', el('span', { class: 'opt', text: st.optional ? '(optional: empty searches everywhere)' : '(d ≤ R)' }));
      $('radius').placeholder = st.optional ? 'anywhere' : '';
    }
    $('submit').textContent = st.button;
  }

  // The statistic chosen in the form, into body; false (after an error
  // under the form) when a field is missing or not a number. The daemon
  // judges the rest (its sentence shows if it refuses).
  function statisticParams(body, refuse) {
    const st = STATISTICS[$('statistic').value] || STATISTICS.histogram;
    if (!st.params) return binningParams(body, refuse) && !!Object.assign(body, st.extra || {});
    const text = $('radius').value.trim();
    if (text === '' && !st.optional) return refuse('No radius', st.radius + ' is needed: a distance such as 2.5.', 'radius');
    const R = text === '' ? NaN : Number(text);
    if (text !== '' && !isFinite(R)) return refuse('Bad radius', '"' + text + '" is not a number.', 'radius');
    Object.assign(body, st.params(R));
    return true;
  }

  // The one way of binning chosen in the form, into body; false (after an
  // error) when a field is missing or not a number.
  function binningParams(body, refuse) {
    const mode = $('binning').value;
    const num = (id) => ($(id).value === '' ? NaN : Number($(id).value));
    if (mode === 'rmax') {
      const rmax = num('r-max');
      const k = num('rmax-buckets');
      if (!(rmax > 0)) return refuse('Bad r_max', 'r_max must be a number > 0.', 'r-max');
      if (!(k >= 1 && Number.isInteger(k))) return refuse('Bad bucket count', 'the buckets must be a whole number >= 1.', 'rmax-buckets');
      body.r_max = rmax;
      body.buckets = k;
    } else if (mode === 'log') {
      const lo = num('log-min');
      const hi = num('log-max');
      const k = num('log-k');
      if (!(lo > 0)) return refuse('Bad r_min', 'log bins need r_min > 0.', 'log-min');
      if (!(hi > lo)) return refuse('Bad r_max', 'log bins need r_max > r_min.', 'log-max');
      if (!(k >= 1 && Number.isInteger(k))) return refuse('Bad K', 'K must be a whole number >= 1.', 'log-k');
      body.log_bins = [lo, hi, k];
    } else {
      body.bucket_width = Number($('width').value);
      if (!(body.bucket_width > 0)) return refuse('Bad bucket width', 'the bucket width must be a number > 0.', 'width');
      if ($('buckets').value !== '') body.buckets = Number($('buckets').value);
    }
    return true;
  }
  function binningShown() {
    const mode = $('binning').value;
    $('bins-width').hidden = mode !== 'width';
    $('bins-rmax').hidden = mode !== 'rmax';
    $('bins-log').hidden = mode !== 'log';
  }

  // The statistic a job's parameters ask for (STATISTICS' keys, or within).
  function statisticOf(p) {
    if (p.per_point) return 'per_point';
    if (p.per_point_histogram) return 'per_point_histogram';
    if (p.nearest) return 'nearest';
    if (p.pairs_within !== undefined && p.pairs_within !== null) return 'pairs';
    if (p.within !== undefined && p.within !== null) return 'within';
    return 'histogram';
  }

  // How a job bins, or what it finds per point, in a few words (job list,
  // summary, captions). Lists leave out an explicit edges list and give its
  // length, edges_count.
  function binsLabel(p, r, edgesCount) {
    const stat = statisticOf(p);
    if (stat === 'per_point_histogram') return binsLabel(Object.assign({}, p, { per_point_histogram: false }), r, edgesCount) + ', per point';
    if (stat === 'per_point') return 'neighbours, d ≤ ' + fmtNum(p.within);
    if (stat === 'nearest') return 'nearest' + (p.within === undefined || p.within === null ? '' : ', d ≤ ' + fmtNum(p.within));
    if (stat === 'pairs') return 'pair list, d ≤ ' + fmtNum(p.pairs_within);
    if (r && r.statistic === 'within') return 'd ≤ ' + fmtNum(r.radius);
    if (p.within !== undefined && p.within !== null) return 'd ≤ ' + fmtNum(p.within);
    if (p.log_bins) return fmtInt(p.log_bins[2]) + ' log, ' + fmtNum(p.log_bins[0]) + '–' + fmtNum(p.log_bins[1]);
    if (p.edges || edgesCount) return fmtInt((p.edges ? p.edges.length : edgesCount) - 1) + ' edges';
    if (p.r_max) return fmtInt(p.buckets) + ' to ' + fmtNum(p.r_max);
    return fmtNum(p.bucket_width) + ' × ' + (p.buckets ? fmtInt(p.buckets) : 'all');
  }
  function jobDatasets(j) {
    const p = j.params || {};
    const a = datasetLabel(j.dataset) + (p.select_a ? ' [' + p.select_a + ']' : '');
    const b = j.dataset_b ? datasetLabel(j.dataset_b) + (p.select_b ? ' [' + p.select_b + ']' : '')
                          : p.select_b ? '[' + p.select_b + ']' : '';
    return a + (b ? ' × ' + b : '') + (p.exclude ? ', less bonded' : '');
  }

  // The periodic box a job counts in, in words with its unit and where it
  // comes from: the job's own box, or the file's (each frame its own, as
  // the daemon uses it when the job gives none); null in open space.
  function boxText(job) {
    const p = job.params || {};
    const r = job.result || {};
    const d = state.datasets.find((x) => x.id === job.dataset);
    const unit = r.unit || (d && d.unit) ? ' ' + (r.unit || d.unit) : '';
    if (p.box) return 'periodic box ' + p.box.map(fmtNum).join(' × ') + unit + ' (the job\'s)';
    const fileBox = d && Array.isArray(d.box) ? d.box : null;
    if (r.box_source !== 'dataset' && !(r.box_source === undefined && fileBox)) return null;
    const frames = Number(r.frames || (d && d.frames) || 1);
    return 'periodic box from the file' + (fileBox ? ', ' + fileBox.map(fmtNum).join(' × ') + unit +
      (frames > 1 || (d && d.frames > 1) ? ' in its first frame, each frame its own' : '') : ', each frame its own');
  }

  // The frames a result counts, in words ("4 frames", "3 frames: 1::1");
  // '' for one frame of a one-frame dataset.
  function framesText(job) {
    const r = job.result || {};
    const f = Number(r.frames || 1);
    const asked = (job.params || {}).frames;
    if (f <= 1 && !asked) return '';
    return fmtInt(f) + (f === 1 ? ' frame' : ' frames') + (asked ? ' (' + asked + ')' : '');
  }

  // A trajectory's atoms a frame: "30", or "30 × 60 (A × B)" (B's frames
  // are A's, or B is another dataset's one frame).
  function atomsText(job) {
    const r = job.result || {};
    const f = Number(r.frames) || 1;
    const b = r.n_b === undefined ? '' : ' × ' + fmtInt(job.dataset_b ? r.n_b : Number(r.n_b) / f) + ' (A × B)';
    return fmtInt(Number(r.n) / f) + b;
  }

  // The atoms and the pairs left out, in words, for a caption.
  function selectionText(job) {
    const p = job.params || {};
    const r = job.result || {};
    const parts = [];
    if (p.select_a) parts.push('A = ' + p.select_a);
    if (p.select_b) parts.push('B = ' + p.select_b + (r.pairing ? ' (' + r.pairing + ' pairs)' : ''));
    if (p.exclude) parts.push('leaving out ' + (r.excluded !== undefined ? fmtInt(r.excluded) + ' ' : '') + 'pairs within a molecule');
    return parts.join(', ');
  }

  async function showJob(id) {
    hideAlert();
    try {
      follow(await state.client.job(id));
    } catch (e) { showAlert(e); }
  }

  // Shows a job (a client Job) and, while it runs, follows it: long polls
  // of a second, each of which answers at once when the job ends, else
  // with its progress. Following another job stops following this one.
  async function follow(job) {
    const id = job.id;
    if (state.following) state.following.abort();
    const ctl = new AbortController();
    state.following = ctl;
    history.replaceState(null, '', '#job=' + encodeURIComponent(id));
    try {
      await job.wait({ poll: 1, signal: ctl.signal, onProgress: (j) => renderJob(j.doc) });
    } catch (e) {
      if (ctl.signal.aborted) return;
      // a job that failed or was cancelled is shown as such by renderJob
      if (!(e instanceof JobFailed)) { (id === state.submitted ? showFormError : showAlert)(e); return; }
    }
    if (ctl.signal.aborted) return;
    const i = state.jobs.findIndex((j) => j.id === id);
    if (i >= 0) state.jobs[i] = job.doc; else state.jobs.unshift(job.doc);
    renderJobs();
  }

  function renderJob(job) {
    state.job = job;
    const st = $('job-status');
    const bar = $('job-progress');
    const p = job.params || {};
    const running = !DONE.has(job.status);
    st.replaceChildren(
      el('span', { class: 'badge ' + job.status, text: job.status }), ' ',
      el('span', { text: 'job ' }), el('code', { text: shortId(job.id) }),
      el('span', { text: ' on ' + jobDatasets(job) + (boxText(job) ? ' (' + boxText(job) + ')' : '') + ', kernel ' + (p.kernel || 'auto') +
        (running && job.progress !== undefined ? ' — ' + Math.round(job.progress * 100) + '%' : '') }));
    if (job.status === 'failed' && job.error) {
      const msg = typeof job.error === 'string' ? job.error : (job.error.detail || job.error.message || job.error.title || JSON.stringify(job.error));
      st.append(el('div', { class: 'err', text: msg }));
      if (job.id === state.submitted) showFormError(new HistdError(0, 'Job failed', msg));
    }
    bar.hidden = !running;
    bar.value = job.progress || 0;
    $('cancel').hidden = !running;
    st.dataset.status = job.status;
    for (const tr of $('jobs').tBodies[0].rows) tr.classList.toggle('current', tr.dataset.job === job.id);
    if (state.curveFor !== job.id) { // a job shows its heat map first
      state.curveFor = job.id;
      state.curve = 'counts';
    }
    state.result = job.status === 'succeeded' ? job.result || null : null;
    state.view = valueHistogram(state.result);
    for (const k of ['csv', 'json', 'npz', 'svg', 'png']) $('dl-' + k).disabled = !state.result;
    $('overlay-add').disabled = !state.result || !Array.isArray(state.result.counts) ||
      Array.isArray(state.result.counts[0]) || state.overlays.some((o) => o.id === job.id) || state.overlays.length >= OVERLAY_COLORS.length;
    renderChart();
    renderSummary(job);
    renderTiming(job);
    renderCounts();
    renderDetails(state.result);
  }

  async function cancelJob() {
    if (!state.job) return;
    try {
      await new Job(state.client, state.job).cancel();
    } catch (e) { showAlert(e); }
  }

  /* ---- the chart --------------------------------------------------------- */

  // The plot area of a two-axis result's chart in the margins M, and x by
  // its first axis's edges (a log axis for log-spaced edges): the area's
  // width and height, sx, and xTicks(g) adding the tick labels to g.
  function firstAxis(e1, M, W, H) {
    const n = e1.length - 1;
    const pw = W - M.l - M.r;
    const ph = H - M.t - M.b;
    const logx = logSpaced(e1);
    const fx = logx ? Math.log : (v) => v;
    const sx = (v) => M.l + ((fx(v) - fx(e1[0])) / (fx(e1[n]) - fx(e1[0]))) * pw;
    const xTicks = (g) => {
      for (const v of logx ? logTicks(e1[0], e1[n], 6) : ticks(e1[0], e1[n], 6)) {
        const t = svg('text', { x: sx(v), y: M.t + ph + 19, 'text-anchor': 'middle' });
        t.textContent = fmtShort(v);
        g.append(t);
      }
    };
    return { pw, ph, logx, sx, xTicks };
  }

  // Counts in two axes (rp_pi, s_mu): a heat map, axis 1's bins across (a log
  // axis for log-spaced edges), axis 2's up, each cell's colour its count's
  // log; a cell says its bins and exact count (data-*, a title).
  function renderHeatmap(chart, r, W, H) {
    const e1 = r.edges.map(Number);
    const e2 = r.edges2.map(Number);
    const n1 = e1.length - 1;
    const n2 = e2.length - 1;
    const what = r.statistic === 'rp_pi' ? ['r_p', 'π'] : ['s', 'μ'];
    const M = { l: 64, r: 90, t: 14, b: 46 };
    const { pw, ph, logx, sx, xTicks } = firstAxis(e1, M, W, H);
    const sy = (v) => M.t + ph - ((v - e2[0]) / (e2[n2] - e2[0])) * ph;
    const counts = r.counts.map((row) => row.map(Number));
    const top = Math.max(1, ...counts.flat());
    const shade = (c) => (c > 0 ? Math.log10(c + 1) / Math.log10(top + 1) : 0);
    chart.setAttribute('data-mode', 'heatmap');
    chart.setAttribute('data-buckets', n1 * n2);
    chart.setAttribute('data-xscale', logx ? 'log' : 'linear');
    chart.setAttribute('aria-label', 'Pair counts in ' + n1 + ' x ' + n2 + ' bins of ' + what[0] + ' and ' + what[1] +
      ' (' + fmtInt(r.total) + ' pairs; ' + fmtInt(r.below) + ' below, ' + fmtInt(r.overflow) + ' outside)');
    const g = svg('g', { class: 'heatmap' });
    for (let i = 0; i < n1; i++) {
      for (let j = 0; j < n2; j++) {
        const c = counts[i][j];
        const cell = svg('rect', {
          x: sx(e1[i]), y: sy(e2[j + 1]), width: Math.max(sx(e1[i + 1]) - sx(e1[i]), 0.5),
          height: Math.max(sy(e2[j]) - sy(e2[j + 1]), 0.5), class: 'cell',
          fill: 'hsl(215, 70%, ' + (96 - 66 * shade(c)).toFixed(1) + '%)',
          'data-bucket': i, 'data-bucket2': j, 'data-count': r.counts[i][j],
        });
        const t = svg('title', {});
        t.textContent = what[0] + ' ' + fmtNum(e1[i]) + '–' + fmtNum(e1[i + 1]) + ', ' + what[1] + ' ' +
          fmtNum(e2[j]) + '–' + fmtNum(e2[j + 1]) + ': ' + fmtInt(r.counts[i][j]) + ' pairs';
        cell.append(t);
        g.append(cell);
      }
    }
    chart.append(g);
    const gx = svg('g', { class: 'axis x' });
    xTicks(gx);
    const xl = svg('text', { x: M.l + pw / 2, y: H - 6, 'text-anchor': 'middle', class: 'label' });
    xl.textContent = what[0] + (logx ? ' (log)' : '');
    gx.append(xl);
    const gy = svg('g', { class: 'axis y' });
    for (const v of ticks(e2[0], e2[n2], 5)) {
      const t = svg('text', { x: M.l - 8, y: sy(v) + 4, 'text-anchor': 'end' });
      t.textContent = fmtShort(v);
      gy.append(t);
    }
    const yl = svg('text', { x: 14, y: M.t + ph / 2, 'text-anchor': 'middle', class: 'label', transform: 'rotate(-90 14 ' + (M.t + ph / 2) + ')' });
    yl.textContent = what[1];
    gy.append(yl);
    const key = svg('text', { x: W - M.r + 10, y: M.t + 12, class: 'note' });
    key.textContent = 'darker: more';
    const key2 = svg('text', { x: W - M.r + 10, y: M.t + 28, class: 'note' });
    key2.textContent = 'max ' + fmtInt(top);
    chart.append(gx, gy, key, key2);
  }

  /* ---- w_p(r_p) and the multipoles: xi from the counts ----------------- */

  // These mirror api/python/histd/estimators.py rule for rule (pair_norm,
  // natural, landy_szalay, wp, legendre_weights, multipoles, analytic_rr,
  // xi_box), so that the page draws the curves the Python client computes.

  // The pairs a job's counts are drawn from (pair_norm of counts): a set
  // against itself N (N - 1) / 2, A x B N_a N_b.
  function pairNorm(n, nb) {
    const a = Number(n);
    return nb === undefined || nb === null ? (a * a - a) / 2 : a * Number(nb);
  }
  const diff = (e) => e.slice(1).map((v, k) => v - e[k]);
  const cells = (a, f) => a.map((row, i) => row.map((v, j) => f(v, i, j)));
  // natural: xi = DD / RR - 1; landy_szalay: xi = (DD - 2 DR + RR) / RR;
  // normalised counts, NaN where RR is 0.
  function natural(dd, rr) {
    return cells(dd, (v, i, j) => (rr[i][j] !== 0 ? v / rr[i][j] - 1 : NaN));
  }
  function landySzalay(dd, dr, rr) {
    return cells(dd, (v, i, j) => (rr[i][j] !== 0 ? (v - 2 * dr[i][j] + rr[i][j]) / rr[i][j] : NaN));
  }
  // wp: w_p(r_p) = 2 sum_j xi(r_p, pi_j) dpi_j, the pi bins' widths from edges2.
  function wpOf(xi, e2) {
    const d = diff(e2);
    return xi.map((row) => 2 * row.reduce((s, v, j) => s + v * d[j], 0));
  }
  // P_ell(x) by Bonnet's recursion.
  function legendre(ell, x) {
    let p0 = 1;
    let p1 = x;
    if (ell === 0) return p0;
    for (let k = 1; k < ell; k++) [p0, p1] = [p1, ((2 * k + 1) * x * p1 - k * p0) / (k + 1)];
    return p1;
  }
  // legendre_weights: (2 ell + 1) times the integral of P_ell over each mu
  // bin, P_{ell+1} - P_{ell-1} between its edges (ell 0: the bin's width).
  function legendreWeights(e2, ell) {
    return ell === 0 ? diff(e2) : diff(e2.map((x) => legendre(ell + 1, x) - legendre(ell - 1, x)));
  }
  // multipoles: xi_ell(s) = sum_k xi(s, mu_k) legendreWeights(mu edges, ell)_k, a row an ell.
  function multipolesOf(xi, e2, ells) {
    return ells.map((ell) => {
      const w = legendreWeights(e2, ell);
      return xi.map((row) => row.reduce((s, v, j) => s + v * w[j], 0));
    });
  }
  // analytic_rr: the pairs expected in each bin of points uniform in a
  // periodic box of `volume`, each bin's volume over the box's: rp_pi
  // pi (r_{k+1}^2 - r_k^2) 2 dpi_j, s_mu 4/3 pi (s_{k+1}^3 - s_k^3) dmu_j.
  function analyticRR(statistic, e1, e2, volume, pairs) {
    const d2 = diff(e2);
    const rp = statistic === 'rp_pi';
    return e1.slice(1).map((hi, i) => {
      const lo = e1[i];
      const v = rp ? Math.PI * (hi * hi - lo * lo) : 4 / 3 * Math.PI * (hi ** 3 - lo ** 3);
      return d2.map((dj) => pairs * (v * (rp ? 2 * dj : dj)) / volume);
    });
  }
  // counts / pair_norm, the pair fractions the estimators take
  const normCounts = (x) => x.counts.map((row) => row.map((c) => Number(c) / pairNorm(x.n, x.n_b)));
  const sameEdges = (a, b) => Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
    a.every((v, k) => Math.abs(Number(v) - Number(b[k])) <= 1e-12 * Math.max(1, Math.abs(Number(v))));

  // The finished jobs whose counts can be this job's DR or RR: its
  // statistic, edges and edges2 (each read once: the job list leaves the
  // arrays out); then the chart again.
  function findPairJobs() {
    const job = state.job;
    const pairs = { job: job.id, docs: null };
    state.pairs = pairs;
    (async () => {
      const list = await state.client.jobs();
      const docs = [];
      for (const j of list) {
        if (j.id === job.id || j.status !== 'succeeded' || (j.result || {}).statistic !== job.result.statistic) continue;
        if (!state.pairCache.has(j.id)) state.pairCache.set(j.id, (await state.client.job(j.id)).doc);
        const d = state.pairCache.get(j.id);
        if (sameEdges(d.result.edges, job.result.edges) && sameEdges(d.result.edges2, job.result.edges2)) docs.push(d);
      }
      return docs;
    })().then((docs) => { pairs.docs = docs; }, (e) => { pairs.docs = []; showAlert(e); })
      .then(() => { if (state.pairs === pairs) renderChart(); });
  }
  function fillPick(sel, docs, none) {
    const keep = sel.value;
    sel.replaceChildren(el('option', { value: '', text: none }), ...docs.map((d) => el('option', { value: d.id,
      text: shortId(d.id) + ' · ' + jobDatasets(d) + ' (N = ' + fmtInt(d.result.n) + (d.result.n_b !== undefined ? ' × ' + fmtInt(d.result.n_b) : '') + ')' })));
    sel.value = docs.some((d) => d.id === keep) ? keep : '';
  }

  // xi in the bins of a finished rp_pi or s_mu result, as {xi, note}, or
  // {need: a sentence} where it cannot be had: in a periodic box (one
  // frame) xi_box's rule, DD / RR - 1 with the box's analytic RR; else
  // from the DR and RR jobs picked, Landy-Szalay, or natural with RR alone.
  function curveXi(r) {
    const e1 = r.edges.map(Number);
    const e2 = r.edges2.map(Number);
    if (r.volume && Number(r.frames || 1) === 1) {
      const rr = analyticRR(r.statistic, e1, e2, Number(r.volume), pairNorm(r.n, r.n_b));
      return { xi: natural(r.counts.map((row) => row.map(Number)), rr),
        note: 'ξ = DD/RR − 1 with the analytic RR of the periodic box (volume ' + fmtNum(Number(r.volume)) + ', no randoms)' +
          (r.weighted ? ', from the pair counts' : '') };
    }
    if (!state.pairs || state.pairs.job !== state.job.id) findPairJobs();
    const docs = state.pairs.docs;
    if (!docs) return { need: 'Looking for DR and RR jobs with these bins…', loading: true };
    const what = r.statistic === 'rp_pi' ? ['w_p(r_p)', 'r_p', 'π'] : ['the multipoles', 's', 'μ'];
    const bins = what[1] + ' edges ' + fmtNum(e1[0]) + '–' + fmtNum(e1[e1.length - 1]) + ' (' + (e1.length - 1) + ' bins), ' +
      what[2] + ' edges ' + fmtNum(e2[0]) + '–' + fmtNum(e2[e2.length - 1]) + ' (' + (e2.length - 1) + ' bins)';
    if (!docs.length) {
      return { need: what[0] + ' needs ξ, and ξ needs RR: a finished ' + r.statistic + ' job of randoms in the same bins (' + bins +
        '), with DR (the data × the randoms) for Landy–Szalay. There is none in the job list: submit them, or give this job a periodic box for the analytic RR.' };
    }
    fillPick($('curve-dr'), docs.filter((d) => d.result.n_b !== undefined), 'none');
    fillPick($('curve-rr'), docs, 'choose…');
    $('curve-pick').hidden = false;
    const dr = docs.find((d) => d.id === $('curve-dr').value);
    const rr = docs.find((d) => d.id === $('curve-rr').value);
    if (!rr) {
      return { need: 'Choose the RR job (randoms in the same bins) above: ' + what[0] + ' by DD/RR − 1, or by Landy–Szalay with a DR job too.' };
    }
    const many = [r, dr && dr.result, rr.result].find((x) => x && Number(x.frames || 1) > 1);
    if (many) return { need: 'The curves take one frame\'s counts, and a job here sums ' + fmtInt(many.frames) + ' frames.' };
    return dr
      ? { xi: landySzalay(normCounts(r), normCounts(dr.result), normCounts(rr.result)),
        note: 'ξ by Landy–Szalay, (DD − 2DR + RR)/RR, DR job ' + shortId(dr.id) + ', RR job ' + shortId(rr.id) }
      : { xi: natural(normCounts(r), normCounts(rr.result)), note: 'ξ = DD/RR − 1, RR job ' + shortId(rr.id) + ' (no DR)' };
  }

  // The control over a two-axis result's chart: the heat map of its counts
  // (the default) or its curves. Whether the curves are on.
  function curveBar(r) {
    const two = !!r && (r.statistic === 'rp_pi' || r.statistic === 's_mu') && Array.isArray(r.edges2);
    $('curve-bar').hidden = !two;
    $('curve-pick').hidden = true;
    $('curve-msg').hidden = true;
    if (!two) return false;
    $('curve-option').textContent = r.statistic === 'rp_pi' ? 'w_p(r_p)' : 'multipoles ξ₀, ξ₂, ξ₄ (s)';
    $('curve-view').value = state.curve;
    return state.curve === 'curve';
  }

  // w_p(r_p) of an rp_pi result, or xi_0, xi_2 and xi_4 (s) of an s_mu one,
  // a point a bin of the first axis (at its centre, on a log axis for
  // log-spaced edges) carrying its value (data-value) and bins; where xi
  // cannot be had, the sentence saying what it needs.
  function renderCurves(chart, r, W, H) {
    const got = curveXi(r);
    if (got.need) {
      chart.setAttribute('data-mode', got.loading ? 'curve-loading' : 'curve-needs');
      chart.setAttribute('aria-label', got.need);
      $('curve-msg').textContent = got.need;
      $('curve-msg').hidden = false;
      const t = svg('text', { x: W / 2, y: H / 2, class: 'placeholder', 'text-anchor': 'middle' });
      t.textContent = got.loading ? got.need : 'no curve yet: see above';
      chart.append(t);
      return;
    }
    const e1 = r.edges.map(Number);
    const e2 = r.edges2.map(Number);
    const n1 = e1.length - 1;
    const rp = r.statistic === 'rp_pi';
    const series = rp ? [{ label: 'w_p(r_p)', vals: wpOf(got.xi, e2) }]
      : multipolesOf(got.xi, e2, [0, 2, 4]).map((vals, k) => ({ ell: 2 * k, label: 'ξ' + '₀₂₄'[k] + '(s)', vals }));
    series.forEach((s, k) => { s.color = PARTIAL_COLORS[(k + 3) % PARTIAL_COLORS.length]; });
    const M = { l: 64, r: 16, t: 30, b: 46 };
    const { pw, ph, logx, sx, xTicks } = firstAxis(e1, M, W, H);
    const centre = (i) => (logx ? Math.sqrt(e1[i] * e1[i + 1]) : (e1[i] + e1[i + 1]) / 2);
    const finite = series.flatMap((s) => s.vals).filter((v) => isFinite(v));
    const yt = ticks(Math.min(0, ...finite), Math.max(0, ...finite) || 1, 5);
    const span = Math.max(yt[yt.length - 1], ...finite) - Math.min(0, ...finite);
    const lo = Math.min(0, ...finite) - (Math.min(...finite) < 0 ? 0.06 * span : 0);
    const hi = Math.max(yt[yt.length - 1], ...finite) + 0.06 * span;
    const sy = (v) => M.t + ph - ((v - lo) / (hi - lo)) * ph;
    chart.setAttribute('data-mode', rp ? 'wp' : 'multipoles');
    chart.setAttribute('data-buckets', n1);
    chart.setAttribute('data-xscale', logx ? 'log' : 'linear');
    chart.setAttribute('aria-label', (rp ? 'w_p(r_p)' : 'The multipoles ξ0, ξ2 and ξ4 of s') + ' in ' + n1 + ' bins from ' +
      fmtNum(e1[0]) + ' to ' + fmtNum(e1[n1]) + '; ' + got.note);
    const gy = svg('g', { class: 'axis y' });
    for (const v of yt) {
      gy.append(svg('line', { x1: M.l, x2: W - M.r, y1: sy(v), y2: sy(v), class: v === 0 ? 'base' : 'grid' }));
      const t = svg('text', { x: M.l - 8, y: sy(v) + 4, 'text-anchor': 'end' });
      t.textContent = fmtShort(v);
      gy.append(t);
    }
    const yl = svg('text', { x: 14, y: M.t + ph / 2, 'text-anchor': 'middle', class: 'label', transform: 'rotate(-90 14 ' + (M.t + ph / 2) + ')' });
    yl.textContent = rp ? 'w_p(r_p)' + (r.unit ? ' (' + r.unit + ')' : '') : 'ξ_ℓ(s)';
    gy.append(yl);
    const gx = svg('g', { class: 'axis x' });
    gx.append(svg('line', { x1: M.l, x2: W - M.r, y1: M.t + ph, y2: M.t + ph, class: 'base' }));
    xTicks(gx);
    const xl = svg('text', { x: M.l + pw / 2, y: H - 6, 'text-anchor': 'middle', class: 'label' });
    xl.textContent = (rp ? 'r_p' : 's') + (r.unit ? ' (' + r.unit + ')' : '') + (logx ? ' (log)' : '');
    gx.append(xl);
    chart.append(gy, gx);
    const lg = svg('g', { class: 'legend', role: 'list', 'aria-label': 'legend' });
    series.forEach((s, k) => {
      let d = '';
      let pen = false;
      const pts = svg('g', { class: 'cpts', 'data-series': s.label });
      for (let i = 0; i < n1; i++) {
        const v = s.vals[i];
        const ok = isFinite(v);
        if (ok) d += (pen ? 'L' : 'M') + sx(centre(i)).toFixed(2) + ' ' + sy(v).toFixed(2);
        pen = ok;
        const c = svg('circle', Object.assign({ class: 'cpt', cx: sx(centre(i)), cy: ok ? sy(v) : M.t + ph, r: ok ? 3 : 0,
          fill: s.color, 'data-bucket': i, 'data-value': ok ? String(v) : 'null', 'data-r': centre(i), 'data-lo': e1[i],
          'data-hi': e1[i + 1] }, s.ell === undefined ? {} : { 'data-ell': s.ell }));
        const t = svg('title', {});
        t.textContent = s.label + ' at ' + (rp ? 'r_p ' : 's ') + fmtNum(e1[i]) + '–' + fmtNum(e1[i + 1]) + ': ' + (ok ? fmtNum(v) : '– (RR is 0)');
        c.append(t);
        pts.append(c);
      }
      chart.append(svg('path', { class: 'cline', d, stroke: s.color }), pts);
      const it = svg('g', { role: 'listitem' });
      const x = W - M.r - 110;
      const y = M.t + 10 + 16 * k;
      it.append(svg('line', { x1: x, x2: x + 24, y1: y, y2: y, stroke: s.color, 'stroke-width': 2 }));
      const t = svg('text', { x: x + 30, y: y + 4 });
      t.textContent = s.label;
      it.append(t);
      lg.append(it);
    });
    const note = svg('text', { x: M.l, y: 16, class: 'note' });
    note.textContent = got.note;
    chart.append(lg, note);
  }

  // Round tick steps (1, 2, 5 x 10^k) giving about `want` ticks over [lo, hi].
  function ticks(lo, hi, want) {
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / want;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return out;
  }

  // Edges whose ratios are all equal (log bins): drawn on a log x axis.
  function logSpaced(edges) {
    const n = edges.length - 1;
    if (n < 2 || !(edges[0] > 0)) return false;
    const q = edges[1] / edges[0];
    if (!(q > 1.0001)) return false;
    for (let i = 1; i < n; i++) if (Math.abs(edges[i + 1] / edges[i] / q - 1) > 1e-6) return false;
    return true;
  }
  // 1, 2, 5 x 10^k ticks over [lo, hi] (lo > 0), fewer when crowded.
  function logTicks(lo, hi, want) {
    for (const ms of [[1, 2, 5], [1, 3], [1]]) {
      const out = [];
      for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
        for (const m of ms) {
          const v = +(m * Math.pow(10, e)).toPrecision(12);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v);
        }
      }
      if (out.length <= want || ms.length === 1) return out.length ? out : [lo, hi];
    }
    return [lo, hi];
  }
  function niceTop(max) {
    if (!(max > 0)) return 1;
    const t = ticks(0, max, 5);
    const step = t.length > 1 ? t[1] - t[0] : max;
    return Math.ceil(max / step - 1e-9) * step;
  }

  function renderChart() {
    const chart = $('chart');
    chart.replaceChildren();
    $('tip').hidden = true;
    state.focusBar = -1;
    const r = state.result;
    // getBoundingClientRect, not clientWidth: Firefox gives 0 for an <svg>'s client size
    const box0 = chart.getBoundingClientRect();
    const W = Math.max(Math.round(box0.width) || 720, 320);
    const H = Math.max(Math.round(box0.height) || 340, 200);
    chart.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    chart.removeAttribute('data-mode');
    chart.removeAttribute('data-xscale');
    if (r && r.statistic === 'within') {
      chart.setAttribute('data-mode', 'within');
      chart.setAttribute('aria-label', fmtInt(r.within) + ' of ' + fmtInt(r.total) + ' pairs lie within ' + fmtNum(r.radius));
      chart.removeAttribute('data-buckets');
      const big = svg('text', { x: W / 2, y: H / 2 - 8, class: 'within-big', 'text-anchor': 'middle', 'data-within': r.within });
      big.textContent = fmtInt(r.within) + ' pairs';
      const sub = svg('text', { x: W / 2, y: H / 2 + 22, class: 'placeholder', 'text-anchor': 'middle' });
      sub.textContent = 'with d ≤ ' + fmtNum(r.radius) + ', of ' + fmtInt(r.total) + ' pairs';
      chart.append(big, sub);
      return;
    }
    if (curveBar(r)) {
      renderCurves(chart, r, W, H);
      return;
    }
    if (r && Array.isArray(r.edges2) && Array.isArray(r.counts) && Array.isArray(r.counts[0])) {
      renderHeatmap(chart, r, W, H);
      return;
    }
    // a per-point or pair result: the histogram of its values (state.view)
    const vh = state.view;
    const empty = vh ? !vh.n : !r || !r.counts || !r.counts.length;
    if (empty) {
      chart.setAttribute('aria-label', 'No histogram yet');
      chart.removeAttribute('data-buckets');
      const msg = vh ? valueNote(r, vh) || 'no values' : state.job && !DONE.has(state.job.status) ? 'computing…' : 'the histogram appears here';
      chart.append(Object.assign(svg('text', { x: W / 2, y: H / 2, class: 'placeholder', 'text-anchor': 'middle' }), { textContent: msg }));
      return;
    }
    const shown = vh ? vh.counts : r.counts; // each bar's count, exact (data-count)
    const counts = shown.map(Number);
    const n = counts.length;
    const edges = vh ? vh.edges : r.edges && r.edges.length === n + 1 ? r.edges.map(Number)
      : Array.from({ length: n + 1 }, (_, i) => i * r.bucket_width);
    const hasG = !vh && Array.isArray(r.g) && r.g.length === n;
    const logx = !vh && logSpaced(edges);
    // g(r) stays linear: it is 0 below the first peak, which a log axis cannot draw
    $('logy').disabled = hasG;
    $('logy-label').title = hasG ? 'g(r) is drawn on a linear axis: it is 0 at short range, which a log axis cannot show' : '';
    const logy = $('logy').checked && !hasG;
    const note = vh ? valueNote(r, vh) : '';
    const M = { l: 64, r: hasG ? 64 : 16, t: hasG || note ? 30 : 14, b: 46 };
    const pw = W - M.l - M.r;
    const ph = H - M.t - M.b;
    const x0 = edges[0];
    const x1 = edges[n];
    // x: linear in the distance, or in its logarithm for log-spaced edges
    const fx = logx ? Math.log : (v) => v;
    const sx = (v) => M.l + (x1 > x0 ? (fx(v) - fx(x0)) / (fx(x1) - fx(x0)) : 0) * pw;
    const unsx = (px) => {
      const t = (px - M.l) / pw;
      return logx ? Math.exp(Math.log(x0) + t * (Math.log(x1) - Math.log(x0))) : x0 + t * (x1 - x0);
    };
    const centre = (i) => (logx ? Math.sqrt(edges[i] * edges[i + 1]) : (edges[i] + edges[i + 1]) / 2);
    const equal = !vh && r.bins !== 'edges' && !logx && r.bucket_width > 0;
    chart.setAttribute('data-buckets', n);
    chart.setAttribute('data-mode', vh ? 'values' : hasG ? 'g' : 'counts');
    chart.setAttribute('data-xscale', logx ? 'log' : 'linear');
    const binsText = equal ? ' buckets of width ' + fmtNum(r.bucket_width)
      : (logx ? ' log-spaced' : ' unequal') + ' bins';
    const gy = svg('g', { class: 'axis y' });
    const ylab = svg('text', { x: 14, y: M.t + ph / 2, 'text-anchor': 'middle', class: 'label', transform: 'rotate(-90 14 ' + (M.t + ph / 2) + ')' });
    gy.append(ylab);
    chart.append(gy);

    if (note) {
      const t = svg('text', { x: M.l, y: 16, class: 'note' });
      t.textContent = note;
      chart.append(t);
    }
    // pinned results drawn over this one (not itself; in g(r) mode those
    // with g; none over a per-point result's values)
    const over = vh ? [] : state.overlays.filter((o) => !(state.job && o.id === state.job.id) && (!hasG || Array.isArray(o.result.g)));
    const overMax = (key) => Math.max(0, ...over.flatMap((o) => o.result[key].map(Number).filter((v) => isFinite(v))));
    let marks; // the element per bin that the hover highlights
    let markY; // its top, for the tooltip
    const gs = [];
    const ns = [];
    if (hasG) {
      // g(r) on the left axis, the coordination number on the right one
      for (let i = 0; i < n; i++) {
        gs.push(r.g[i] === null || r.g[i] === undefined ? null : Number(r.g[i]));
        const c = r.coordination ? r.coordination[i] : null;
        ns.push(c === null || c === undefined ? null : Number(c));
      }
      // error bars ("blocks"): g(r) +/- the standard error of the blocks' mean, a band
      const sem = schemaValue(r, 'g_sem', 'block');
      const blk = Array.isArray(sem) && sem.length === n ? { g_sem: sem } : null;
      const hiBand = blk ? gs.map((g, i) => (g === null ? null : g + Number(blk.g_sem[i]))) : [];
      const parts = partialSeries(r, n); // each species pair's own g(r)
      const gTop = niceTop(Math.max(overMax('g'), ...gs.filter((v) => v !== null && isFinite(v)),
        ...hiBand.filter((v) => v !== null && isFinite(v)),
        ...parts.flatMap((p) => p.vals.filter((v) => v !== null && isFinite(v)))));
      const nTop = niceTop(Math.max(0, ...ns.filter((v) => v !== null && isFinite(v))));
      const syg = (v) => M.t + ph - (v / gTop) * ph;
      const syn = (v) => M.t + ph - (v / nTop) * ph;
      chart.setAttribute('aria-label', 'g(r) and the coordination number over ' + n + binsText + ' from ' + fmtNum(x0) + ' to ' +
        fmtNum(x1) + ' (' + fmtInt(r.total) + ' pairs). Focus the chart and use the arrow keys to read the bins.');
      for (const v of ticks(0, gTop, 5)) {
        const y = syg(v);
        gy.append(svg('line', { x1: M.l, x2: W - M.r, y1: y, y2: y, class: 'grid' }));
        const t = svg('text', { x: M.l - 8, y: y + 4, 'text-anchor': 'end' });
        t.textContent = fmtShort(v);
        gy.append(t);
      }
      ylab.textContent = 'g(r)';
      const gy2 = svg('g', { class: 'axis y2', 'data-top': nTop });
      for (const v of ticks(0, nTop, 5)) {
        const y = syn(v);
        gy2.append(svg('line', { x1: W - M.r, x2: W - M.r + 5, y1: y, y2: y, class: 'tick' }));
        const t = svg('text', { x: W - M.r + 8, y: y + 4, 'text-anchor': 'start', class: 'y2tick' });
        t.textContent = fmtShort(v);
        gy2.append(t);
      }
      gy2.append(svg('line', { x1: W - M.r, x2: W - M.r, y1: M.t, y2: M.t + ph, class: 'base' }));
      const yl2 = svg('text', { x: W - 12, y: M.t + ph / 2, 'text-anchor': 'middle', class: 'label', transform: 'rotate(90 ' + (W - 12) + ' ' + (M.t + ph / 2) + ')' });
      yl2.textContent = 'coordination number n(r)';
      gy2.append(yl2);
      chart.append(gy2);
      const path = (vals, sy) => {
        let d = '';
        let pen = false;
        for (let i = 0; i < n; i++) {
          if (vals[i] === null || !isFinite(vals[i])) { pen = false; continue; }
          d += (pen ? 'L' : 'M') + sx(centre(i)).toFixed(2) + ' ' + sy(vals[i]).toFixed(2);
          pen = true;
        }
        return d;
      };
      if (blk) { // the band: up along g + sem, back along g - sem
        let d = '';
        const pts = [];
        for (let i = 0; i < n; i++) {
          if (gs[i] === null || !isFinite(gs[i])) continue;
          const e = Number(blk.g_sem[i]);
          pts.push([sx(centre(i)), syg(gs[i] + e), syg(Math.max(0, gs[i] - e))]);
        }
        pts.forEach((p, k) => { d += (k ? 'L' : 'M') + p[0].toFixed(2) + ' ' + p[1].toFixed(2); });
        for (let k = pts.length - 1; k >= 0; k--) d += 'L' + pts[k][0].toFixed(2) + ' ' + pts[k][2].toFixed(2);
        if (pts.length) {
          const band = svg('path', { class: 'gband', d: d + 'Z', 'data-blocks': r.blocks });
          const title = svg('title', {});
          title.textContent = 'g(r) +/- the standard error of the mean of ' + r.blocks + ' blocks of frames';
          band.append(title);
          chart.append(band);
        }
      }
      chart.append(svg('path', { class: 'nline', d: path(ns, syn) }), svg('path', { class: 'gline', d: path(gs, syg) }));
      const pl = svg('g', { class: 'partials' });
      parts.forEach((p, k) => {
        const line = svg('path', { class: 'pline', d: path(p.vals, syg), fill: 'none', stroke: PARTIAL_COLORS[k % PARTIAL_COLORS.length],
          'stroke-width': 1.4, 'data-partial': p.label });
        const title = svg('title', {});
        title.textContent = 'g(r) of the pairs ' + p.label;
        line.append(title);
        pl.append(line);
      });
      if (parts.length) chart.append(pl);
      const gpts = svg('g', { class: 'gpts' });
      const npts = svg('g', { class: 'npts' });
      const rad = pw / n > 6 ? 2.5 : 1.5;
      for (let i = 0; i < n; i++) {
        const cx = sx(centre(i));
        const attrs = (cls, v, sy) => ({ class: cls, cx, cy: v === null ? M.t + ph : sy(v), r: v === null ? 0 : rad,
          'data-bucket': i, 'data-r': centre(i), 'data-lo': edges[i], 'data-hi': edges[i + 1] });
        gpts.append(svg('circle', Object.assign(attrs('gpt', gs[i], syg), { 'data-g': gs[i] === null ? 'null' : String(gs[i]), 'data-count': r.counts[i] })));
        npts.append(svg('circle', Object.assign(attrs('npt', ns[i], syn), { 'data-n': ns[i] === null ? 'null' : String(ns[i]) })));
      }
      chart.append(npts, gpts);
      marks = gpts;
      markY = (i) => Math.min(gs[i] === null ? M.t + ph : syg(gs[i]), ns[i] === null ? M.t + ph : syn(ns[i]));
      // legend, top right
      const lg = svg('g', { class: 'legend', role: 'list', 'aria-label': 'legend' });
      const lx = W - M.r - 270;
      const ly = 12;
      const item = (x, cls, label) => {
        const it = svg('g', { role: 'listitem' });
        it.append(svg('line', { x1: x, x2: x + 24, y1: ly, y2: ly, class: cls }));
        const t = svg('text', { x: x + 30, y: ly + 4 });
        t.textContent = label;
        it.append(t);
        lg.append(it);
      };
      item(lx, 'gline', 'g(r) (left axis)');
      item(lx + 130, 'nline', 'n(r) (right axis)');
      parts.forEach((p, k) => { // the species pairs, a column under it
        const it = svg('g', { role: 'listitem', class: 'partial-key' });
        const y = ly + 16 * (k + 1);
        it.append(svg('line', { x1: lx, x2: lx + 24, y1: y, y2: y, stroke: PARTIAL_COLORS[k % PARTIAL_COLORS.length], 'stroke-width': 2 }));
        const t = svg('text', { x: lx + 30, y: y + 4 });
        t.textContent = 'g(r) ' + p.label;
        it.append(t);
        lg.append(it);
      });
      if (parts.more > 0) { // the sites not drawn
        const t = svg('text', { x: lx + 30, y: ly + 16 * (parts.length + 1) + 4, class: 'partial-more' });
        t.textContent = 'and ' + fmtInt(parts.more) + ' more sites (in the downloads)';
        lg.append(t);
      }
      chart.append(lg);
      drawOverlays(chart, over, 'g', sx, syg, x0, x1, M.l + 12, M.t + 10); // top left: g(r) is 0 there
    } else {
      const maxC = Math.max(1, overMax('counts'), ...counts);
      const top = logy ? Math.pow(10, Math.max(1, Math.ceil(Math.log10(maxC)))) : niceTop(maxC);
      const sy = logy
        ? (c) => M.t + ph - (c > 0 ? (Math.log10(c) + 0.5) / (Math.log10(top) + 0.5) : 0) * ph
        : (c) => M.t + ph - (c / top) * ph;
      chart.setAttribute('aria-label', (vh ? 'Histogram of ' + fmtInt(vh.n) + ' values of ' + vh.field.name + ' in ' + n + ' bins'
        : 'Histogram of ' + fmtInt(r.total) + ' pair distances in ' + n + binsText) +
        ' from ' + fmtNum(x0) + ' to ' + fmtNum(x1) + '. Focus the chart and use the arrow keys to read the bars.');
      const yt = logy
        ? Array.from({ length: Math.round(Math.log10(top)) + 1 }, (_, i) => Math.pow(10, i))
        : ticks(0, top, 5);
      for (const v of yt) {
        const y = sy(v);
        gy.append(svg('line', { x1: M.l, x2: W - M.r, y1: y, y2: y, class: 'grid' }));
        const t = svg('text', { x: M.l - 8, y: y + 4, 'text-anchor': 'end' });
        t.textContent = fmtShort(v);
        gy.append(t);
      }
      ylab.textContent = (vh ? vh.what : 'pairs') + (logy ? ' (log)' : '');
      // bars, each from its lower to its upper edge
      const gb = svg('g', { class: 'bars' });
      for (let i = 0; i < n; i++) {
        const c = counts[i];
        const xa = sx(edges[i]);
        const xb = sx(edges[i + 1]);
        const gap = xb - xa > 4 ? 1 : 0;
        let y = sy(c);
        if (c > 0 && M.t + ph - y < 1) y = M.t + ph - 1; // a non-zero count is always visible
        gb.append(svg('rect', {
          x: xa + gap / 2, y: Math.min(y, M.t + ph), width: Math.max(xb - xa - gap, 0.5), height: Math.max(M.t + ph - y, 0),
          class: 'bar', 'data-bucket': i, 'data-count': shown[i], 'data-lo': edges[i], 'data-hi': edges[i + 1],
        }));
      }
      chart.append(gb);
      marks = gb;
      markY = (i) => Math.min(sy(counts[i]), M.t + ph);
      drawOverlays(chart, over, 'counts', sx, sy, x0, x1, W - M.r - 340, M.t + 10);
    }
    // the whole plot is the hover target, so thin and empty bins can be read
    chart.append(svg('rect', { x: M.l, y: M.t, width: pw, height: ph, class: 'hit' }));
    const hl = svg('rect', { class: 'hl', x: 0, y: M.t, width: 0, height: ph, visibility: 'hidden' });
    chart.insertBefore(hl, gy.nextSibling);

    // x axis
    const gx = svg('g', { class: 'axis x' });
    gx.append(svg('line', { x1: M.l, x2: W - M.r, y1: M.t + ph, y2: M.t + ph, class: 'base' }));
    const want = Math.max(2, Math.floor(pw / 90));
    const xt = logx ? logTicks(x0, x1, want) : ticks(x0, x1, want);
    for (const v of vh && vh.integer ? xt.filter(Number.isInteger) : xt) {
      const x = sx(v);
      gx.append(svg('line', { x1: x, x2: x, y1: M.t + ph, y2: M.t + ph + 5, class: 'tick' }));
      const t = svg('text', { x, y: M.t + ph + 19, 'text-anchor': 'middle' });
      t.textContent = fmtShort(v);
      gx.append(t);
    }
    const xlab = svg('text', { x: M.l + pw / 2, y: H - 6, 'text-anchor': 'middle', class: 'label' });
    xlab.textContent = vh ? valueAxis(r, vh) : (hasG ? 'r' : 'distance') + ' (' + (r.unit || 'input units') + '; ' +
      (equal ? 'bucket width ' + fmtNum(r.bucket_width) : n + (logx ? ' log-spaced bins, log scale' : ' bins')) + ')';
    gx.append(xlab);
    chart.append(gx);

    const bucketAt = (clientX) => {
      const box = chart.getBoundingClientRect();
      const v = unsx((clientX - box.left) * (W / box.width));
      let lo = 0;
      let hi = n - 1;
      while (lo < hi) { // the last bin whose lower edge is <= v
        const mid = (lo + hi + 1) >> 1;
        if (edges[mid] <= v) lo = mid; else hi = mid - 1;
      }
      return lo;
    };
    const show = (i, clientX) => {
      state.focusBar = i;
      const xa = sx(edges[i]);
      const xb = sx(edges[i + 1]);
      hl.setAttribute('x', xa);
      hl.setAttribute('width', Math.max(xb - xa, 1));
      hl.setAttribute('visibility', 'visible');
      for (const b of chart.querySelectorAll('.on')) b.classList.remove('on');
      marks.children[i].classList.add('on');
      if (hasG) chart.querySelector('.npts').children[i].classList.add('on');
      const tip = $('tip');
      const lines = [el('div', { class: 'tip-range', text: vh ? valueBinText(vh, i) + (vh.integer ? ' ' + vh.field.name : '')
        : '[' + fmtNum(edges[i]) + ', ' + fmtNum(edges[i + 1]) + ')' })];
      if (hasG) {
        lines.push(el('div', {}, 'g = ', el('strong', { text: gs[i] === null ? '–' : fmtNum(gs[i]) })),
          el('div', {}, 'n = ', el('strong', { text: ns[i] === null ? '–' : fmtNum(ns[i]) })));
      }
      const all = vh ? vh.n : Number(r.total);
      lines.push(el('div', {}, el('strong', { text: fmtInt(shown[i]) }), ' ' + (vh ? vh.what : 'pairs')),
        el('div', { class: 'tip-sub', text: vh ? (100 * counts[i] / all).toPrecision(3) + '% of the ' + vh.what + (vh.nulls ? ' drawn' : '')
          : 'bucket ' + i + (all ? ' · ' + (100 * counts[i] / all).toPrecision(3) + '%' : '') }));
      tip.replaceChildren(...lines);
      tip.hidden = false;
      const box = chart.getBoundingClientRect();
      const wrap = chart.parentElement.getBoundingClientRect();
      const cx = clientX !== undefined ? clientX - wrap.left : ((xa + xb) / 2) * (box.width / W) + (box.left - wrap.left);
      const tw = tip.offsetWidth;
      tip.style.left = Math.min(Math.max(cx - tw / 2, 0), wrap.width - tw) + 'px';
      const barTop = markY(i) * (box.height / H);
      const above = barTop - tip.offsetHeight - 10;
      tip.style.top = (above >= 0 ? above : Math.min(barTop + 10, box.height - tip.offsetHeight)) + 'px';
    };
    const hide = () => {
      hl.setAttribute('visibility', 'hidden');
      for (const b of chart.querySelectorAll('.on')) b.classList.remove('on');
      $('tip').hidden = true;
    };
    chart.onmousemove = (e) => show(bucketAt(e.clientX), e.clientX);
    chart.onmouseleave = hide;
    chart.onblur = hide;
    chart.onkeydown = (e) => {
      let i = state.focusBar;
      if (e.key === 'ArrowRight') i = Math.min(n - 1, i + 1);
      else if (e.key === 'ArrowLeft') i = Math.max(0, i < 0 ? 0 : i - 1);
      else if (e.key === 'Home') i = 0;
      else if (e.key === 'End') i = n - 1;
      else if (e.key === 'Escape') { hide(); return; }
      else return;
      e.preventDefault();
      show(i);
    };
  }

  /* ---- partials: a g(r) per species pair ------------------------------ */

  const PARTIAL_COLORS = ['#e8590c', '#2f9e44', '#9c36b5', '#1971c2', '#f08c00', '#c2255c', '#0c8599', '#5c940d'];
  // The schema's fields where a daemon has no GET /v1/schema.
  const PARTIAL_FALLBACK = [
    { name: 'g', group: 'partial', shape: 'partials x bins', type: 'f64' },
    { name: 'a', group: 'partial', shape: 'partials', type: 'str' },
    { name: 'b', group: 'partial', shape: 'partials', type: 'str' },
  ];

  // A field's value in r by the schema (name and group), or undefined.
  function schemaValue(r, name, group) {
    const f = schemaField(name, group) || { name, group };
    const m = fieldIn(r, f);
    return m ? m.v : undefined;
  }

  // The rows of the result's g of shape "partials x bins" (GET /v1/schema),
  // each labelled by its group's words of shape "partials" (a–b): every
  // species pair's g(r); or of shape "points x bins" (a per-point
  // histogram), the first SITES_SHOWN labelled by their index ("site 12"),
  // the rest counted in .more; as {label, vals}; [] for other results.
  const SITES_SHOWN = 8;
  function partialSeries(r, n) {
    const fields = state.schema || PARTIAL_FALLBACK;
    const rows = (gf, label) => {
      const m = gf ? fieldIn(r, gf) : null;
      if (!m || !Array.isArray(m.v)) return null;
      return m.v.map((row, k) => ({
        label: label(k),
        vals: Array.isArray(row) ? row.map((v) => (v === null || v === undefined ? null : Number(v))) : [],
      })).filter((p) => p.vals.length === n);
    };
    const gf = fields.find((f) => f.shape === 'partials x bins' && f.name === 'g');
    const words = gf ? fields.filter((f) => f.group === gf.group && f.shape === 'partials' && f.type === 'str')
      .map((f) => fieldIn(r, f)).filter((w) => w && Array.isArray(w.v)).map((w) => w.v) : [];
    const parts = rows(gf, (k) => words.map((w) => w[k]).join('–') || 'partial ' + k);
    if (parts) return parts;
    const index = Array.isArray(r.index) ? r.index : [];
    const sites = rows(fields.find((f) => f.shape === 'points x bins' && f.name === 'g'),
      (k) => 'site ' + (index[k] !== undefined ? String(index[k]) : k)) || [];
    const shown = sites.slice(0, SITES_SHOWN);
    shown.more = sites.length - shown.length;
    return shown;
  }

  /* ---- overlays: several results on one chart -------------------------- */

  const OVERLAY_COLORS = ['#d9480f', '#2b8a3e', '#862e9c', '#c2255c', '#0b7285', '#5f3dc4', '#e67700', '#495057'];

  // Each pinned result as a line over the chart's x range (its own bins:
  // g(r) through the bin centres, counts as a step line), and a legend
  // entry for it, the result on show first. Its colour stays with it.
  function drawOverlays(chart, over, key, sx, sy, x0, x1, lx, ly) {
    if (!over.length) return;
    const clamp = (v) => Math.min(Math.max(v, x0), x1);
    const g = svg('g', { class: 'overlays' });
    const lg = svg('g', { class: 'legend overlay-legend', role: 'list', 'aria-label': 'overlaid results' });
    const entry = (y, attrs, label) => {
      const it = svg('g', { role: 'listitem' });
      it.append(svg('line', Object.assign({ x1: lx, x2: lx + 24, y1: y, y2: y }, attrs)));
      const t = svg('text', { x: lx + 30, y: y + 4 });
      t.textContent = label;
      it.append(t);
      lg.append(it);
    };
    entry(ly, { class: key === 'g' ? 'gline' : 'bar-key' },
      overlayLabel(state.job) + ' (shown)');
    over.forEach((o, k) => {
      const r = o.result;
      const vals = r[key].map((v) => (v === null ? null : Number(v)));
      const e = r.edges.map(Number);
      let d = '';
      for (let i = 0; i < vals.length; i++) {
        if (vals[i] === null || !isFinite(vals[i]) || e[i + 1] <= x0 || e[i] >= x1) continue;
        if (key === 'g') {
          const c = (e[i] + e[i + 1]) / 2;
          if (c < x0 || c > x1) continue;
          d += (d ? 'L' : 'M') + sx(c).toFixed(2) + ' ' + sy(vals[i]).toFixed(2);
        } else {
          const y = sy(vals[i]).toFixed(2);
          d += (d ? 'L' : 'M') + sx(clamp(e[i])).toFixed(2) + ' ' + y + 'L' + sx(clamp(e[i + 1])).toFixed(2) + ' ' + y;
        }
      }
      g.append(svg('path', { class: 'overlay', d, fill: 'none', stroke: o.color, 'stroke-width': 1.8, 'data-job': o.id }));
      entry(ly + 18 * (k + 1), { stroke: o.color, 'stroke-width': 2 }, o.label);
    });
    chart.append(g, lg);
  }

  function overlayLabel(job) {
    return jobDatasets(job) + ' · ' + binsLabel(job.params || {}, job.result, job.edges_count) + ' · job ' + shortId(job.id);
  }

  function overlayAdd() {
    const job = state.job;
    if (!job || !state.result || state.overlays.some((o) => o.id === job.id)) return;
    const used = new Set(state.overlays.map((o) => o.color));
    const color = OVERLAY_COLORS.find((c) => !used.has(c));
    if (!color) return;
    state.overlays.push({ id: job.id, label: overlayLabel(job), result: state.result, color });
    overlayChanged();
  }

  function overlayChanged() {
    const n = state.overlays.length;
    $('overlay-clear').hidden = n === 0;
    $('overlay-clear').textContent = 'Clear overlay (' + n + ')';
    if (state.job) renderJob(state.job); else renderChart();
  }

  function renderSummary(job) {
    const dl = $('summary');
    dl.replaceChildren();
    const r = job.status === 'succeeded' ? job.result : null;
    const rows = [];
    const p = job.params || {};
    const vh = r && r === state.result ? state.view : null;
    const box = boxText(job);
    if (vh) {
      rows.push(...valueSummary(r, vh, p));
      if (box) rows.push(['box', box]);
      rows.push(['kernel', r.kernel + (r.block_size ? ' · block ' + r.block_size : '')]);
    } else if (r) {
      const frames = Number(r.frames) || 1;
      if (frames > 1) { // a trajectory: its atoms, frames and pairs a frame, not atoms x frames as "points"
        const perFrame = Number(r.total) / frames;
        rows.push(['atoms', atomsText(job) + ' a frame'], ['frames', framesText(job)],
          ['pairs per frame', Number.isInteger(perFrame) ? fmtInt(perFrame) : '≈ ' + fmtNum(perFrame)]);
      } else {
        rows.push(['points', fmtInt(r.n) + (r.n_b !== undefined ? ' × ' + fmtInt(r.n_b) + ' (A × B)' : '')], ['pairs', fmtInt(r.total)]);
      }
      if (r.excluded !== undefined) {
        rows.push(['excluded pairs', fmtInt(r.excluded) + (frames > 1 ? ' (' + fmtInt(Number(r.excluded) / frames) + ' a frame)' : '') + ', within a molecule']);
      }
      rows.push(['box', box || 'none: open space']);
      if (r.statistic === 'within') rows.push(['within ' + fmtNum(r.radius), fmtInt(r.within)]);
      else {
        const n = r.counts ? r.counts.length : 0;
        const e = r.edges && r.edges.length === n + 1 ? r.edges : null;
        rows.push(['buckets', (r.bins === 'edges' || !(r.bucket_width > 0)
          ? fmtInt(n) + (e && logSpaced(e.map(Number)) ? ' log-spaced' : '') + ' bins' + (e ? ', ' + fmtNum(e[0]) + ' to ' + fmtNum(e[n]) : '')
          : fmtInt(n) + ' × ' + fmtNum(r.bucket_width)) + (r.unit ? ' ' + r.unit : '')]);
      }
      rows.push(['below', r.below !== undefined ? fmtInt(r.below) : '–'], ['overflow', fmtInt(r.overflow)], ['total', fmtInt(r.total)], ['kernel', r.kernel + (r.block_size ? ' · block ' + r.block_size : '')],
        ['precision', r.precision === 'exact' || !r.precision ? 'exact (equals the definition)'
          : r.precision + (r.exact ? ' (checked exact)' : ' (may differ near bucket edges)')]);
    } else {
      rows.push(['kernel', p.kernel || 'auto'], ['bins', binsLabel(p)], ['precision', p.precision || 'exact']);
      if (box) rows.push(['box', box]);
    }
    rows.push(['device', (r && r.device) || job.device || '–']);
    rows.push(['created', fmtTime(job.created_at)]);
    for (const [k, v] of rows) dl.append(el('dt', { text: k }), el('dd', { text: v }));
  }

  // A per-point or pair result in a few rows: what it is, its points and
  // frames, the mean and largest of its values (every frame's together).
  function valueSummary(r, h, p) {
    const perFrame = r.index ? r.index.length : Number(r.n) / (Number(r.frames) || 1);
    const unit = h.integer ? '' : ' ' + unitText(h.field.unit, r, true);
    const rows = [['statistic', binsLabel(p, r)],
      ['points', fmtInt(perFrame) + (r.frames > 1 ? ' a frame' : '') + (r.n_b !== undefined ? ' × ' + fmtInt(r.n_b) + ' (A × B)' : '')],
      ['frames', fmtInt(r.frames) + (r.frames > 1 ? ' (their values together)' : '')]];
    if (r.statistic === 'pairs') rows.push(['pairs listed', fmtInt(r.pairs)]);
    rows.push(['mean ' + h.field.name, h.n ? fmtNum(h.mean) + unit : '–'],
      ['max ' + h.field.name, h.n ? (h.integer ? fmtInt(h.max) : fmtNum(h.max) + unit) : '–']);
    if (h.nulls) rows.push(['no neighbour within ' + fmtNum(Number(r.radius)), fmtInt(h.nulls) + (r.frames > 1 ? ' values' : ' points')]);
    return rows;
  }

  // The queue wait comes before the run; total is the run's wall time
  // (parse + transfer + kernel + the rest), so the bar shows the run only.
  function renderTiming(job) {
    const t = (job.result && job.result.timing_ms) || job.timing_ms || {};
    const tb = $('timing').tBodies[0];
    tb.replaceChildren();
    const bar = $('timing-bar');
    bar.replaceChildren();
    const row = (k, label, title) => el('tr', { title }, el('th', { scope: 'row' }, el('span', { class: 'sw ' + k }), label),
      el('td', { class: 'num', text: fmtMs(t[k]) }));
    tb.append(row('queue', 'queue wait', 'from submission to a worker picking the job up'));
    const parts = [['parse', 'parse', 'reading the stored points'], ['transfer', 'transfer', 'host-device copies'],
      ['kernel', 'kernel', 'the histogram computation']];
    const total = +t.total || 0;
    const sum = parts.reduce((a, [k]) => a + (+t[k] || 0), 0);
    for (const [k, label, title] of parts) {
      tb.append(row(k, label, title));
      if (total > 0 && t[k] > 0) bar.append(el('span', { class: 'seg ' + k, style: 'flex-grow:' + t[k], title: label + ' ' + fmtMs(t[k]) }));
    }
    if (total > sum && sum > 0) bar.append(el('span', { class: 'seg other', style: 'flex-grow:' + (total - sum), title: 'other ' + fmtMs(total - sum) }));
    tb.append(el('tr', { class: 'total', title: 'wall time of the run, queue wait not included' },
      el('th', { scope: 'row', text: 'run total' }), el('td', { class: 'num', text: fmtMs(t.total) })));
    bar.hidden = !(total > 0);
  }

  function renderCounts() {
    const tb = $('counts').tBodies[0];
    tb.replaceChildren();
    const r = state.result;
    const hasG = !!(r && Array.isArray(r.g));
    $('counts').classList.toggle('no-g', !hasG);
    const vh = state.view;
    const head = vh ? (vh.integer ? [vh.field.name, vh.what] : ['bin', vh.field.name, vh.what])
      : ['bucket', 'from', 'to', 'count', 'g', 'coordination'];
    $('counts').tHead.rows[0].replaceChildren(...head.map((t, i) => el('th', { scope: 'col', class: i > 3 ? 'gcol' : null, text: t })));
    if (vh) {
      vh.counts.forEach((c, i) => tb.append(el('tr', {}, ...(vh.integer ? [] : [el('td', { class: 'num', text: i })]),
        el('td', { class: 'num', text: valueBinText(vh, i) }), el('td', { class: 'num', text: fmtInt(c) }))));
      if (vh.nulls) {
        tb.append(el('tr', { class: 'total' }, el('td', { colspan: head.length - 1, text: 'none within ' + fmtNum(Number(r.radius)) }),
          el('td', { class: 'num', text: fmtInt(vh.nulls) })));
      }
      return;
    }
    if (!r || !Array.isArray(r.counts)) return;
    const n = r.counts.length;
    const edges = r.edges && r.edges.length === n + 1 ? r.edges : Array.from({ length: n + 1 }, (_, i) => i * r.bucket_width);
    const opt = (v) => (v === null || v === undefined ? '–' : fmtNum(Number(v)));
    const gcells = (i) => (hasG ? [el('td', { class: 'num gcol', text: opt(r.g[i]) }),
      el('td', { class: 'num gcol', text: opt(r.coordination && r.coordination[i]) })] : []);
    const cols = hasG ? 6 : 4;
    // two axes (rp_pi, s_mu): a row of the first axis's bins, its count over the second's
    const rowCount = (i) => (Array.isArray(r.counts[i]) ? r.counts[i].reduce((a, c) => a + Number(c), 0) : r.counts[i]);
    if (r.below) {
      tb.append(el('tr', { class: 'total' }, el('td', { text: 'below' }), el('td', { class: 'num', text: '0' }),
        el('td', { class: 'num', text: fmtNum(edges[0]) }), el('td', { class: 'num', text: fmtInt(r.below) }), ...(hasG ? [el('td', { colspan: 2 })] : [])));
    }
    const LIMIT = 2000;
    for (let i = 0; i < Math.min(n, LIMIT); i++) {
      tb.append(el('tr', {}, el('td', { class: 'num', text: i }), el('td', { class: 'num', text: fmtNum(edges[i]) }),
        el('td', { class: 'num', text: fmtNum(edges[i + 1]) }), el('td', { class: 'num', text: fmtInt(rowCount(i)) }), ...gcells(i)));
    }
    if (n > LIMIT) tb.append(el('tr', {}, el('td', { colspan: cols, class: 'empty', text: (n - LIMIT) + ' more buckets: download the CSV.' })));
    tb.append(el('tr', { class: 'total' }, el('td', { text: 'overflow' }), el('td', { class: 'num', text: fmtNum(edges[n]) }),
      el('td', { class: 'num', text: '∞' }), el('td', { class: 'num', text: fmtInt(r.overflow) }), ...(hasG ? [el('td', { colspan: 2 })] : [])));
  }

  // Every scalar the result's JSON carries, by GET /v1/schema: its name
  // (a group's fields, such as timing_ms's, under the group's name), its
  // value exactly as the daemon gave it, and its unit; the field's help
  // as the row's title.
  function renderDetails(r) {
    const tb = $('details').tBodies[0];
    tb.replaceChildren();
    $('details-box').hidden = !r;
    if (!r) return;
    // a group's name -> its fields, and a field outside any group -> itself;
    // in the order they first appear
    const groups = new Map();
    for (const f of scalarFields(r)) {
      const g = f.group || null;
      if (g === null) groups.set(f, [f]);
      else if (groups.has(g)) groups.get(g).push(f);
      else groups.set(g, [f]);
    }
    for (const [g, fields] of groups) {
      if (typeof g === 'string') tb.append(el('tr', { class: 'group', 'data-group': g }, el('th', { scope: 'rowgroup', colspan: 3, text: g })));
      for (const f of fields) {
        const key = (f.group ? f.group + '.' : '') + f.name;
        tb.append(el('tr', { 'data-field': key, title: f.help || null },
          el('th', { scope: 'row', class: f.group ? 'sub' : null, text: f.name }),
          el('td', { class: 'num', text: scalarText(fieldIn(r, f).v, f.type) }),
          el('td', { text: unitText(f.unit, r) })));
      }
    }
    $('details-note').textContent = state.schema ? 'The fields as GET /v1/schema lists them; hover a row for its meaning.'
      : 'This daemon gives no schema (GET /v1/schema): its result\'s members as they came.';
  }
  // A scalar as the daemon wrote it: integers with every digit, doubles in
  // their shortest exact form (type: the schema's, '' where none).
  function scalarText(v, type) {
    if (v === null || v === undefined) return 'none';
    if (type === 'f64' || typeof v === 'number' && !Number.isInteger(v)) return String(v);
    return typeof v === 'number' || typeof v === 'bigint' ? fmtInt(v) : String(v);
  }

  const RESULT_TYPES = { csv: 'text/csv', json: 'application/json', npz: 'application/x-npz' };
  async function download(kind) {
    if (!state.job) return;
    try {
      const path = '/v1/jobs/' + encodeURIComponent(state.job.id) + '/result' + (kind === 'json' ? '' : '?format=' + kind);
      const bytes = await state.client.request('GET', path, { as: 'bytes', headers: { Accept: RESULT_TYPES[kind] } });
      saveBlob(new Blob([bytes], { type: RESULT_TYPES[kind] }), 'histd-' + state.job.id + '.' + kind);
    } catch (e) { showAlert(e); }
  }

  /* ---- figures: the chart as SVG or PNG, for a paper ------------------- */

  // The line under an exported figure: what was computed, from what, when.
  function captionOf(job) {
    const r = job.result || {};
    const p = job.params || {};
    const frames = Number(r.frames || 1);
    const parts = ['dataset ' + jobDatasets(job),
      frames > 1 ? atomsText(job) + ' a frame' : 'N = ' + fmtInt(r.n !== undefined ? r.n : job.n) + (r.n_b !== undefined ? ' × ' + fmtInt(r.n_b) : '')];
    if (framesText(job)) parts.push(framesText(job));
    parts.push(boxText(job) || 'open boundaries');
    if (selectionText(job)) parts.push(selectionText(job));
    parts.push((['histogram', 'per_point_histogram'].includes(statisticOf(p)) ? 'bins ' : '') + binsLabel(p, r) + (r.unit && ['histogram', 'per_point_histogram'].includes(statisticOf(p)) ? ' ' + r.unit : ''),
      'kernel ' + (r.kernel || p.kernel || 'auto') + ', ' + (r.precision || p.precision || 'exact'));
    parts.push('histd job ' + shortId(job.id) + ', ' + (job.finished_at || new Date().toISOString()).slice(0, 10));
    return parts.join(' · ');
  }

  // A standalone copy of the chart: the page's CSS resolved into each
  // element's attributes (an exported file has no stylesheet), the card's
  // background (white; dark where the page is dark, so the text stays
  // readable), and the caption line under the plot.
  const FIGURE_STYLE = ['fill', 'stroke', 'stroke-width', 'stroke-dasharray', 'opacity', 'fill-opacity',
    'font-size', 'font-family', 'font-weight', 'font-variant-numeric'];
  function figureSVG() {
    const live = $('chart');
    const copy = live.cloneNode(true);
    const from = [live, ...live.querySelectorAll('*')];
    const to = [copy, ...copy.querySelectorAll('*')];
    from.forEach((e, i) => {
      const cs = getComputedStyle(e);
      const style = FIGURE_STYLE.map((k) => k + ':' + cs.getPropertyValue(k)).join(';');
      to[i].setAttribute('style', style);
      to[i].removeAttribute('class');
      to[i].removeAttribute('tabindex');
    });
    for (const e of copy.querySelectorAll('[data-hit], .hit, .hl')) e.remove();
    const vb = (live.getAttribute('viewBox') || '0 0 720 340').split(/\s+/).map(Number);
    const W = vb[2], H = vb[3], CAP = 30;
    copy.setAttribute('xmlns', SVGNS);
    copy.setAttribute('viewBox', '0 0 ' + W + ' ' + (H + CAP));
    copy.setAttribute('width', W);
    copy.setAttribute('height', H + CAP);
    copy.removeAttribute('style');
    const root = getComputedStyle(document.documentElement);
    const paper = root.getPropertyValue('--card').trim() || '#ffffff';
    const bg = svg('rect', { x: 0, y: 0, width: W, height: H + CAP, fill: paper });
    copy.insertBefore(bg, copy.firstChild);
    const cap = svg('text', { x: 12, y: H + CAP - 10, 'data-caption': '1',
      style: 'fill:' + (root.getPropertyValue('--ink').trim() || '#333') + ';font-size:11px;font-family:' +
        getComputedStyle(live).getPropertyValue('font-family') });
    cap.textContent = captionOf(state.job);
    copy.append(cap);
    return { text: new XMLSerializer().serializeToString(copy), width: W, height: H + CAP };
  }

  function saveBlob(blob, name) {
    const a = el('a', { href: URL.createObjectURL(blob), download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }

  async function exportFigure(kind) {
    if (!state.job || !state.result) return;
    try {
      const fig = figureSVG();
      const name = 'histd-' + state.job.id + '.' + kind;
      const svgBlob = new Blob([fig.text], { type: 'image/svg+xml' });
      if (kind === 'svg') return saveBlob(svgBlob, name);
      const img = new Image();
      const src = URL.createObjectURL(svgBlob);
      await new Promise((ok, fail) => { img.onload = ok; img.onerror = () => fail(new Error('the figure could not be drawn')); img.src = src; });
      const scale = 3; // ~300 dpi at the chart's size in print
      const canvas = el('canvas', { width: fig.width * scale, height: fig.height * scale });
      const ctx = canvas.getContext('2d');
      ctx.scale(scale, scale);
      ctx.drawImage(img, 0, 0, fig.width, fig.height);
      URL.revokeObjectURL(src);
      const png = await new Promise((ok) => canvas.toBlob(ok, 'image/png'));
      saveBlob(png, name);
    } catch (e) { showAlert(e); }
  }

  /* ---- wiring ---------------------------------------------------------- */

  function init() {
    const ready = loadSettings();
    setupDrop();
    $('settings-form').addEventListener('submit', saveSettings);
    $('api-base').addEventListener('input', baseEdited);
    $('settings-clear').addEventListener('click', clearSettings);
    $('alert-close').addEventListener('click', hideAlert);
    $('job-form').addEventListener('submit', submitJob);
    $('kernel').addEventListener('change', kernelInfo);
    $('dataset').addEventListener('change', datasetInfo);
    $('width').addEventListener('input', bucketHint);
    $('box').addEventListener('input', boxHint);
    $('binning').addEventListener('change', binningShown);
    binningShown();
    $('statistic').addEventListener('change', statisticShown);
    statisticShown();
    $('cancel').addEventListener('click', cancelJob);
    $('logy').addEventListener('change', renderChart);
    $('curve-view').addEventListener('change', () => { state.curve = $('curve-view').value; state.pairs = null; renderChart(); });
    $('curve-dr').addEventListener('change', renderChart);
    $('curve-rr').addEventListener('change', renderChart);
    $('dl-csv').addEventListener('click', () => download('csv'));
    $('dl-json').addEventListener('click', () => download('json'));
    $('dl-npz').addEventListener('click', () => download('npz'));
    $('dl-svg').addEventListener('click', () => exportFigure('svg'));
    $('overlay-add').addEventListener('click', overlayAdd);
    $('overlay-clear').addEventListener('click', () => { state.overlays = []; overlayChanged(); });
    $('dl-png').addEventListener('click', () => exportFigure('png'));
    $('tab-jobs').addEventListener('click', () => selectTab('jobs'));
    $('tab-datasets').addEventListener('click', () => selectTab('datasets'));
    $('refresh').addEventListener('click', () => refreshLists().catch(showAlert));
    let rt;
    window.addEventListener('resize', () => { clearTimeout(rt); rt = setTimeout(renderChart, 100); });
    window.addEventListener('hashchange', () => {
      const m = /job=([^&]+)/.exec(location.hash);
      if (m && (!state.job || state.job.id !== decodeURIComponent(m[1]))) showJob(decodeURIComponent(m[1]));
    });
    renderChart();
    renderTiming({});
    if (ready) connect();
  }

  init();
})();

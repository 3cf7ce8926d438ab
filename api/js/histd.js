/*
 * histd.js -- the JavaScript client of histd's v1 API (api/openapi.yaml),
 * for browsers and Node 18+, with no dependencies: fetch, and
 * XMLHttpRequest in browsers for upload progress.
 *
 *   const histd = new Client('http://127.0.0.1:8080', { token });
 *   const ds = await histd.upload(file, { onProgress: (sent, size) => ... });
 *   const job = await histd.submit({ dataset: ds.id, r_max: 10, buckets: 100 });
 *   const result = await job.wait({ onProgress: (job) => ... });
 *   const { edges, counts } = await job.arrays(); // Float64Array, BigUint64Array
 *
 * Every JSON answer is read by parseJSON (exact-json.js): integers beyond
 * 2^53 arrive as BigInts with every digit, the rest as Numbers. Results
 * come as JSON (job.result()) or as typed arrays from the daemon's .npz
 * (job.arrays(), npz.js). Uploads stream: a File or Blob goes to the
 * network from disk (XMLHttpRequest in a browser when progress is asked
 * for, so that the upload's own progress events count), a stream or an
 * async iterable of bytes (a Node Readable, fs.createReadStream) goes
 * through fetch as it is read, counted on its way (Node 20's bundled
 * undici holds such a body in memory until the request ends:
 * nodejs/undici#4058). The daemon has no event stream: a job is
 * followed by long polls (GET /v1/jobs/{id}?wait=S).
 * Errors are HistdError, whose message is the daemon's problem+json
 * sentence (its detail).
 */
import { parseJSON } from './exact-json.js';
import { readNpz, readNpy, rows } from './npz.js';

export { parseJSON, readNpz, readNpy, rows };

/** The statuses a job ends in. */
export const DONE = /** @type {readonly ['succeeded', 'failed', 'cancelled']} */ (Object.freeze(['succeeded', 'failed', 'cancelled']));

/**
 * A file's extension -> [the daemon's format, its Content-Type].
 * @type {Readonly<Record<string, readonly [string, string]>>}
 */
export const FORMATS = Object.freeze({
  json: ['json', 'application/json'],
  csv: ['csv', 'text/csv'],
  tsv: ['csv', 'text/tab-separated-values'],
  txt: ['csv', 'text/plain'],
  xyz: ['xyz', 'chemical/x-xyz'],
  extxyz: ['xyz', 'chemical/x-xyz'],
  gro: ['gro', 'application/x-gro'],
  pdb: ['pdb', 'chemical/x-pdb'],
  ent: ['pdb', 'chemical/x-pdb'],
  lammpstrj: ['lammps', 'text/x-lammps-dump'],
  dump: ['lammps', 'text/x-lammps-dump'],
  lammpsdump: ['lammps', 'text/x-lammps-dump'],
  dcd: ['dcd', 'application/x-dcd'],
  xtc: ['xtc', 'application/x-xtc'],
  trr: ['trr', 'application/x-trr'],
  nc: ['netcdf', 'application/x-netcdf'],
  ncdf: ['netcdf', 'application/x-netcdf'],
  f64: ['f64', 'application/octet-stream'],
  bin: ['f64', 'application/octet-stream'],
  f32: ['f32', 'application/x-float32'],
});

/**
 * A format's Content-Type.
 * @type {Readonly<Record<string, string>>}
 */
const CONTENT_TYPE = Object.freeze({
  json: 'application/json', csv: 'text/csv', xyz: 'chemical/x-xyz',
  lammps: 'text/x-lammps-dump', dcd: 'application/x-dcd', xtc: 'application/x-xtc',
  trr: 'application/x-trr', netcdf: 'application/x-netcdf', nc: 'application/x-netcdf',
  gro: 'application/x-gro', pdb: 'chemical/x-pdb',
  f64: 'application/octet-stream', bin: 'application/octet-stream', f32: 'application/x-float32',
});

/**
 * The format and Content-Type a file's name says, or null.
 * @param {string} name
 * @returns {[string, string] | null}
 */
export function formatOfName(name) {
  const dot = String(name).lastIndexOf('.');
  const ext = dot < 0 ? '' : String(name).slice(dot + 1).toLowerCase();
  const f = Object.prototype.hasOwnProperty.call(FORMATS, ext) ? FORMATS[ext] : null;
  return f ? [f[0], f[1]] : null;
}

/** An error answer of the daemon (or no answer): `message` is its sentence. */
export class HistdError extends Error {
  /**
   * @param {number} status the HTTP status (0: no answer)
   * @param {string} title
   * @param {string} detail the sentence
   * @param {import('./index').Problem | null} [problem] the whole problem+json document
   */
  constructor(status, title, detail, problem = null) {
    super(detail || title);
    this.name = 'HistdError';
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.problem = problem;
  }
}

/** A job that ended failed or cancelled; `job` is its last document. */
export class JobFailed extends HistdError {
  /** @param {import('./index').JobDoc} job */
  constructor(job) {
    super(0, 'Job ' + job.status, 'job ' + job.id + ' ' + job.status + ': ' + (job.error || 'no reason given'));
    this.name = 'JobFailed';
    this.job = job;
  }
}

/**
 * An error answer as a HistdError, from its status and body text.
 * @param {number} status
 * @param {string} statusText
 * @param {string} text
 */
function problemOf(status, statusText, text) {
  let p = null;
  try { p = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (p && typeof p === 'object' && (p.title || p.detail)) {
    return new HistdError(status, String(p.title || status), String(p.detail || ''), p);
  }
  const detail = String(text || '').trim().slice(0, 300) ||
    (status === 401 ? 'this daemon needs a bearer token' : 'no sentence came with it');
  return new HistdError(status, status + ' ' + (statusText || 'error'), detail);
}

/** @param {any} v */
const isStream = (v) => typeof ReadableStream !== 'undefined' && v instanceof ReadableStream;
/** @param {any} v */
const isAsyncIterable = (v) => v !== null && typeof v === 'object' && typeof v[Symbol.asyncIterator] === 'function';
/** @param {any} v */
const isBlob = (v) => typeof Blob !== 'undefined' && v instanceof Blob;
/** @param {any} v */
const isBytes = (v) => v instanceof ArrayBuffer || ArrayBuffer.isView(v);

/**
 * A ReadableStream of the bytes of `source` (a stream or an async iterable
 * of Uint8Array chunks or strings) that reports each chunk as it is read.
 * @param {ReadableStream | AsyncIterable<any>} source
 * @param {(sent: number) => void} counted
 * @returns {ReadableStream<Uint8Array>}
 */
function countedStream(source, counted) {
  const it = isStream(source) ? /** @type {ReadableStream} */ (source).getReader() : null;
  const iter = it ? null : /** @type {AsyncIterable<any>} */ (source)[Symbol.asyncIterator]();
  const enc = new TextEncoder();
  let sent = 0;
  return new ReadableStream({
    async pull(ctrl) {
      const { value, done } = it ? await it.read() : await /** @type {AsyncIterator<any>} */ (iter).next();
      if (done) { ctrl.close(); return; }
      const chunk = typeof value === 'string' ? enc.encode(value)
        : value instanceof Uint8Array ? value : new Uint8Array(value.buffer || value, value.byteOffset || 0, value.byteLength);
      sent += chunk.byteLength;
      ctrl.enqueue(chunk);
      counted(sent);
    },
    async cancel(why) {
      if (it) await it.cancel(why);
      else if (iter && typeof iter.return === 'function') await iter.return();
    },
  });
}

/** @param {AbortSignal | undefined} signal */
function throwIfAborted(signal) {
  if (signal && signal.aborted) {
    throw signal.reason !== undefined ? signal.reason : new DOMException('the wait was aborted', 'AbortError');
  }
}

export class Client {
  /**
   * @param {string} [base] the daemon's address, e.g. "http://127.0.0.1:8080" ('' = this page's origin)
   * @param {import('./index').ClientOptions} [options]
   */
  constructor(base = '', options = {}) {
    /** @type {string} */
    this.base = String(base || '').replace(/\/+$/, '');
    /** @type {string} */
    this.token = options.token || '';
    /** @type {typeof fetch} */
    this.fetch = options.fetch || ((input, init) => globalThis.fetch(input, init));
    /** @type {Promise<import('./index').SchemaField[] | null> | null} */
    this.schemaLoad = null;
  }

  /** @param {string} path */
  url(path) { return this.base + path; }

  /**
   * The headers of a request: `extra` and the token's Authorization.
   * @param {Record<string, string>} [extra]
   * @returns {Record<string, string>}
   */
  headers(extra) {
    const h = Object.assign({}, extra || {});
    if (this.token) h.Authorization = 'Bearer ' + this.token;
    return h;
  }

  /**
   * One request. `body`: an object goes as JSON, anything else as it is.
   * Answers the parsed JSON (exact integers), or the body as `as` asks
   * ('text', 'bytes': a Uint8Array); null for 204. A failed answer throws
   * HistdError with the daemon's sentence.
   * @param {string} method
   * @param {string} path
   * @param {import('./index').RequestOptions} [options]
   * @returns {Promise<any>}
   */
  async request(method, path, options = {}) {
    const { body, headers, as = 'json', signal } = options;
    /** @type {RequestInit & {duplex?: string}} */
    const init = { method, headers: this.headers(headers), signal };
    if (body !== undefined) {
      const raw = typeof body === 'string' || isBlob(body) || isBytes(body) || isStream(body);
      init.body = raw ? /** @type {BodyInit} */ (body) : JSON.stringify(body);
      const h = /** @type {Record<string, string>} */ (init.headers);
      if (!raw && !Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
      if (isStream(body)) init.duplex = 'half';
    }
    let res;
    try {
      res = await this.fetch(this.url(path), init);
    } catch (e) {
      if (e && /** @type {any} */ (e).name === 'AbortError') throw e;
      const why = e instanceof Error ? e.message : String(e);
      throw new HistdError(0, 'Cannot reach histd', 'no answer from ' + (this.base || 'this origin') + ' (' + why + ')');
    }
    if (!res.ok) throw problemOf(res.status, res.statusText, await res.text().catch(() => ''));
    if (res.status === 204) return null;
    if (as === 'bytes') return new Uint8Array(await res.arrayBuffer());
    const text = await res.text();
    return as === 'text' ? text : parseJSON(text);
  }

  /**
   * GET /healthz.
   * @returns {Promise<{status: 'ok', version?: string}>}
   */
  health() { return this.request('GET', '/healthz'); }

  /**
   * GET /v1/kernels: the kernels, and whether this daemon can run each.
   * @returns {Promise<import('./index').Kernel[]>}
   */
  async kernels() { return (await this.request('GET', '/v1/kernels')).kernels; }

  /**
   * GET /v1/devices.
   * @returns {Promise<import('./index').Devices>}
   */
  devices() { return this.request('GET', '/v1/devices'); }

  /**
   * GET /v1/schema's fields (once per client), or null from a daemon that
   * has none (an older histd).
   * @returns {Promise<import('./index').SchemaField[] | null>}
   */
  schema() {
    if (!this.schemaLoad) {
      this.schemaLoad = this.request('GET', '/v1/schema').then(
        (s) => (s && Array.isArray(s.fields) ? s.fields : null),
        (e) => { if (e instanceof HistdError && e.status === 404) return null; this.schemaLoad = null; throw e; });
    }
    return this.schemaLoad;
  }

  /**
   * GET /v1/datasets, newest first.
   * @param {{limit?: number}} [options]
   * @returns {Promise<import('./index').Dataset[]>}
   */
  async datasets(options = {}) {
    const q = options.limit ? '?limit=' + options.limit : '';
    return (await this.request('GET', '/v1/datasets' + q)).datasets;
  }

  /**
   * GET /v1/datasets/{id}.
   * @param {string} id
   * @returns {Promise<import('./index').Dataset>}
   */
  dataset(id) { return this.request('GET', '/v1/datasets/' + encodeURIComponent(id)); }

  /**
   * DELETE /v1/datasets/{id}.
   * @param {string} id
   * @returns {Promise<void>}
   */
  async deleteDataset(id) { await this.request('DELETE', '/v1/datasets/' + encodeURIComponent(id)); }

  /**
   * POST /v1/datasets: uploads points and answers the stored dataset.
   * `data`: a File or Blob, a ReadableStream or async iterable of bytes (a
   * Node Readable), a string, bytes (ArrayBuffer, typed array: with
   * format 'f64' or 'f32' raw triples), or an object {points: [[x, y, z],
   * ...]} or {x, y, z} (sent as JSON). The format comes from `format`,
   * else `contentType`, else a File's name. `onProgress(sent, size)` is
   * called as the bytes go (size null where unknown); give `size` with a
   * stream so the daemon can stream or spool it rather than buffer it.
   * @param {import('./index').UploadData} data
   * @param {import('./index').UploadOptions} [options]
   * @returns {Promise<import('./index').Dataset>}
   */
  async upload(data, options = {}) {
    const { onProgress, signal } = options;
    const fileName = data && typeof (/** @type {any} */ (data).name) === 'string' ? /** @type {any} */ (data).name : '';
    const byName = fileName ? formatOfName(fileName) : null;
    let format = options.format || '';
    let type = options.contentType || (format ? CONTENT_TYPE[format] : '') || (byName ? byName[1] : '');
    /** @type {any} */
    let body = data;
    let size = options.size === undefined ? null : options.size;
    const plain = !(typeof data === 'string' || isBlob(data) || isBytes(data) || isStream(data) || isAsyncIterable(data));
    if (plain) {
      if (data === null || typeof data !== 'object') {
        throw new HistdError(0, 'Nothing to upload', 'upload() takes a File, Blob, stream, string, bytes or {points} object, not ' + String(data));
      }
      body = JSON.stringify(data);
      type = 'application/json';
    }
    if (!type && !format) {
      throw new HistdError(0, 'Unknown format', 'cannot tell the format of ' + (fileName ? '"' + fileName + '"' : 'this upload') +
        '; give options.format (csv, xyz, gro, pdb, lammps, xtc, f64, ...)');
    }
    if (typeof body === 'string') body = new TextEncoder().encode(body);
    if (isBytes(body)) size = body.byteLength;
    if (isBlob(body)) size = body.size;
    const q = new URLSearchParams();
    const name = options.name || fileName;
    if (name) q.set('name', name);
    if (format) q.set('format', format);
    const path = '/v1/datasets' + (q.toString() ? '?' + q : '');
    /** @type {Record<string, string>} */
    const headers = {};
    if (type) headers['Content-Type'] = type;

    // In a browser, progress comes from XMLHttpRequest's upload events
    // (fetch has none, and streams a request body only over HTTP/2).
    if (onProgress && typeof XMLHttpRequest !== 'undefined' && !isStream(body) && !isAsyncIterable(body)) {
      return this.xhrUpload(path, headers, body, onProgress, signal);
    }
    if (onProgress || isAsyncIterable(body) || (isStream(body) && size !== null)) {
      const total = size;
      if (isBlob(body)) body = body.stream();
      else if (isBytes(body)) body = new Blob([body]).stream();
      body = countedStream(body, (sent) => { if (onProgress) onProgress(sent, total); });
      // with a Content-Length the daemon streams or spools the body instead of buffering it
      if (total !== null) headers['Content-Length'] = String(total);
    }
    const ds = await this.request('POST', path, { body, headers, signal });
    if (onProgress && size !== null) onProgress(size, size);
    return ds;
  }

  /**
   * An upload through XMLHttpRequest, for its progress events.
   * @param {string} path
   * @param {Record<string, string>} headers
   * @param {any} body
   * @param {(sent: number, size: number | null) => void} onProgress
   * @param {AbortSignal} [signal]
   * @returns {Promise<import('./index').Dataset>}
   */
  xhrUpload(path, headers, body, onProgress, signal) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', this.url(path));
      for (const [k, v] of Object.entries(this.headers(headers))) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : null);
      xhr.onerror = () => reject(new HistdError(0, 'Upload failed',
        'the connection to histd broke (is the file over the daemon\'s --max-upload-bytes?)'));
      xhr.onabort = () => reject(signal && signal.reason !== undefined ? signal.reason : new DOMException('the upload was aborted', 'AbortError'));
      xhr.onload = () => {
        if (xhr.status < 200 || xhr.status >= 300) { reject(problemOf(xhr.status, xhr.statusText, xhr.responseText)); return; }
        try { resolve(parseJSON(xhr.responseText)); } catch (e) { reject(e); }
      };
      if (signal) signal.addEventListener('abort', () => xhr.abort(), { once: true });
      xhr.send(body);
    });
  }

  /**
   * POST /v1/jobs: submits a job and answers its handle.
   * @param {import('./index').JobRequest} params
   * @returns {Promise<Job>}
   */
  async submit(params) {
    return new Job(this, await this.request('POST', '/v1/jobs', { body: params }));
  }

  /**
   * Submits a job and waits for its result (Job#wait's options).
   * @param {import('./index').JobRequest} params
   * @param {import('./index').WaitOptions} [options]
   * @returns {Promise<import('./index').Result>}
   */
  async compute(params, options) {
    return (await this.submit(params)).wait(options);
  }

  /**
   * A job's handle, read from the daemon now.
   * @param {string} id
   * @returns {Promise<Job>}
   */
  async job(id) {
    return new Job(this, await this.request('GET', '/v1/jobs/' + encodeURIComponent(id)), true);
  }

  /**
   * GET /v1/jobs: the jobs, newest first (results without their arrays).
   * @param {{limit?: number}} [options]
   * @returns {Promise<import('./index').JobDoc[]>}
   */
  async jobs(options = {}) {
    const q = options.limit ? '?limit=' + options.limit : '';
    return (await this.request('GET', '/v1/jobs' + q)).jobs;
  }

  /**
   * POST /v1/histogram: points and parameters in, the result out, in one
   * request (small sets; nothing is stored).
   * @param {import('./index').HistogramRequest} params
   * @returns {Promise<import('./index').Result>}
   */
  histogram(params) { return this.request('POST', '/v1/histogram', { body: params }); }
}

/** A submitted job: `id`, `status`, `progress` and `doc` as last read. */
export class Job {
  /**
   * @param {Client} client
   * @param {import('./index').JobDoc} doc
   * @param {boolean} [full] doc is a whole GET /v1/jobs/{id}, result and all
   */
  constructor(client, doc, full = false) {
    this.client = client;
    /** @type {import('./index').JobDoc} */
    this.doc = doc;
    this.id = doc.id;
    // whether doc.result holds the arrays (GET /v1/jobs/{id}; lists and ?summary=true leave them out)
    this.full = full;
  }

  /** @returns {import('./index').JobDoc['status']} */
  get status() { return this.doc.status; }

  /** From 0 to 1. */
  get progress() { return Number(this.doc.progress || 0); }

  /** Whether it has ended (succeeded, failed or cancelled). */
  get done() { return /** @type {readonly string[]} */ (DONE).includes(this.doc.status); }

  /** @param {string} [tail] */
  path(tail = '') { return '/v1/jobs/' + encodeURIComponent(this.id) + tail; }

  /**
   * Reads the job again; with `wait` seconds, long-polls until it ends or
   * that long passes (the daemon caps it with --max-wait).
   * @param {{wait?: number, summary?: boolean, signal?: AbortSignal}} [options]
   * @returns {Promise<Job>}
   */
  async refresh(options = {}) {
    const q = new URLSearchParams();
    if (options.wait) q.set('wait', String(options.wait));
    if (options.summary) q.set('summary', 'true');
    this.doc = await this.client.request('GET', this.path(q.toString() ? '?' + q : ''), { signal: options.signal });
    this.full = !options.summary;
    return this;
  }

  /**
   * Asks the daemon to cancel it (a running job stops within a second).
   * @returns {Promise<Job>}
   */
  async cancel() {
    this.doc = await this.client.request('DELETE', this.path());
    this.full = false;
    return this;
  }

  /**
   * Waits for the job to end and answers its result; onProgress(job) after
   * each read (every `poll` seconds while it runs: 1 with onProgress, else
   * 10). Throws JobFailed if it failed or was cancelled. `signal` stops the
   * waiting (not the job: cancel() does that).
   * @param {import('./index').WaitOptions} [options]
   * @returns {Promise<import('./index').Result>}
   */
  async wait(options = {}) {
    const { onProgress, signal } = options;
    const poll = options.poll || (onProgress ? 1 : 10);
    if (onProgress) onProgress(this);
    while (!this.done) {
      throwIfAborted(signal);
      await this.refresh({ wait: poll, signal });
      if (onProgress) onProgress(this);
    }
    return this.result();
  }

  /**
   * The result of a succeeded job, as JSON (exact integers); JobFailed if
   * it failed or was cancelled, HistdError 409 if it has not ended.
   * @returns {Promise<import('./index').Result>}
   */
  async result() {
    if (this.doc.status === 'failed' || this.doc.status === 'cancelled') throw new JobFailed(this.doc);
    if (this.doc.status === 'succeeded' && this.doc.result && this.full) return this.doc.result;
    return this.client.request('GET', this.path('/result'));
  }

  /**
   * The result as typed arrays, by the .npz entry names of GET /v1/schema
   * (edges: Float64Array, counts: BigUint64Array, per_frame.counts with
   * shape [frames, bins], ...).
   * @returns {Promise<Record<string, import('./index').NpyArray>>}
   */
  async arrays() {
    if (this.doc.status === 'failed' || this.doc.status === 'cancelled') throw new JobFailed(this.doc);
    return readNpz(await this.client.request('GET', this.path('/result?format=npz'), { as: 'bytes' }));
  }

  /**
   * The result as the daemon's CSV text.
   * @returns {Promise<string>}
   */
  csv() { return this.client.request('GET', this.path('/result?format=csv'), { as: 'text' }); }
}

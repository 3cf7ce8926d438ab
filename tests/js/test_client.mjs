// test_client.mjs -- the JavaScript client (api/js) under node's own test
// runner, against the real daemon (HISTD_BIN, started here with a token on
// a port of its choosing, a temporary data dir, one worker).
//
// Results are checked against the definitions, computed here: the
// dataset id as openapi.yaml defines it (SHA-256 of the three float64
// arrays' SHA-256s), the counts by the contract's arithmetic (minimum image
// with round-half-even, (dx*dx + dy*dy) + dz*dz, sqrt, floor(d / w)) and
// g(r) by LAMMPS's convention with each frame's own volume. The npz reader
// also reads what numpy.savez writes (python3-numpy), values known here.
//
//   HISTD_BIN=build/src/service/histd node --test tests/js/test_client.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { Client, Job, HistdError, JobFailed, parseJSON, readNpz, rows, formatOfName } from '../../api/js/histd.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.HISTD_BIN || path.join(HERE, '..', '..', 'build', 'src', 'service', 'histd');
const TOKEN = 'js-client-test-token';

let daemon;
let base;
let work;
let histd;

/** The daemon on 127.0.0.1, port 0: the port it prints. */
before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'histd-js-'));
  daemon = spawn(BIN, ['--listen', '127.0.0.1:0', '--data-dir', path.join(work, 'data'), '--workers', '1',
    '--token', TOKEN], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
  let log = '';
  base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('histd did not say where it listens in 20 s:\n' + log)), 20000);
    const read = (chunk) => {
      log += chunk;
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    daemon.stdout.on('data', read);
    daemon.stderr.on('data', read);
    daemon.on('exit', (code) => { clearTimeout(timer); reject(new Error('histd exited with ' + code + ':\n' + log)); });
  });
  histd = new Client(base, { token: TOKEN });
});

after(() => {
  if (daemon && daemon.exitCode === null) daemon.kill('SIGTERM');
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

// ---- the definitions ---------------------------------------------------------------

/** A little deterministic generator (mulberry32), for points in [0, side). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function cube(n, side, seed) {
  const r = random(seed);
  return Array.from({ length: n }, () => [r() * side, r() * side, r() * side]);
}

/** nearbyint: the nearest integer, halves to even. */
function rint(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : r;
}

/** The contract's counts of a point set's own pairs (i < j) in `buckets` bins of width w, orthorhombic box L (or none). */
function bruteCounts(pts, w, buckets, L) {
  const counts = new Array(buckets).fill(0);
  let overflow = 0;
  for (let i = 0; i < pts.length; i++) {
    for (let j = i + 1; j < pts.length; j++) {
      let dx = pts[i][0] - pts[j][0];
      let dy = pts[i][1] - pts[j][1];
      let dz = pts[i][2] - pts[j][2];
      if (L) {
        dx = dx - L[0] * rint(dx / L[0]);
        dy = dy - L[1] * rint(dy / L[1]);
        dz = dz - L[2] * rint(dz / L[2]);
      }
      const b = Math.floor(Math.sqrt((dx * dx + dy * dy) + dz * dz) / w);
      if (b < buckets) counts[b]++; else overflow++;
    }
  }
  return { counts, overflow };
}

/** g_k = sum_f counts_f,k / sum_f (P_f V_k / V_f), V_k the shell's volume. */
function gOf(counts, edges, frames) {
  return counts.map((c, k) => {
    const vk = (4 / 3) * Math.PI * (edges[k + 1] ** 3 - edges[k] ** 3);
    return c / frames.reduce((s, f) => s + (f.pairs * vk) / f.volume, 0);
  });
}

/** openapi.yaml's dataset id: SHA-256(SHA-256(x) || SHA-256(y) || SHA-256(z)), float64 little-endian. */
function datasetId(pts) {
  const sha = (buf) => createHash('sha256').update(buf).digest();
  const col = (k) => Buffer.from(new Float64Array(pts.map((p) => p[k])).buffer);
  return createHash('sha256').update(Buffer.concat([sha(col(0)), sha(col(1)), sha(col(2))])).digest('hex');
}

const csvOf = (pts) => 'x,y,z\n' + pts.map((p) => p.map((v) => v.toPrecision(17)).join(',')).join('\n') + '\n';
const close = (a, b, rel = 1e-12) => Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b), 1e-300);

// ---- the tests ------------------------------------------------------------------------

test('a stream uploads with progress; the stored points are the file\'s', async () => {
  const pts = cube(3000, 10, 1).map((p) => p.map((v) => Number(v.toPrecision(17))));
  const file = path.join(work, 'cube.csv');
  fs.writeFileSync(file, csvOf(pts));
  const size = fs.statSync(file).size;
  const seen = [];
  const ds = await histd.upload(fs.createReadStream(file, { highWaterMark: 16384 }),
    { format: 'csv', size, name: 'cube', onProgress: (sent, total) => seen.push([sent, total]) });
  assert.equal(ds.n, 3000);
  assert.equal(ds.name, 'cube');
  assert.equal(ds.id, datasetId(pts), 'the id is the SHA-256 tree hash of the points');
  assert.ok(seen.length >= 4, 'progress came chunk by chunk: ' + seen.length);
  assert.ok(seen.every(([s, t], k) => t === size && s <= size && (k === 0 || s >= seen[k - 1][0])), 'progress grows to the size');
  assert.equal(seen[seen.length - 1][0], size);
  // a web stream of unknown length (chunked), and a Blob: the same points, the same dataset
  const again = await histd.upload(Readable.toWeb(fs.createReadStream(file)), { format: 'csv' });
  assert.equal(again.id, ds.id);
  const blob = await histd.upload(new Blob([fs.readFileSync(file)]), { contentType: 'text/csv' });
  assert.equal(blob.id, ds.id);
  const json = await histd.upload({ points: pts });
  assert.equal(json.id, ds.id, 'points as JSON: the same dataset');
  assert.deepEqual(formatOfName('run.XTC'), ['xtc', 'application/x-xtc']);
  await assert.rejects(histd.upload('1,2,3\n'), (e) => e instanceof HistdError && /format/.test(e.message),
    'a string with no format is refused with a sentence');
});

test('a periodic histogram: counts, g(r) and the npz arrays as the definitions give', async () => {
  const pts = cube(700, 10, 2);
  const ds = await histd.upload({ points: pts });
  const job = await histd.submit({ dataset: ds.id, bucket_width: 0.5, buckets: 10, box: [10] });
  assert.ok(job instanceof Job && /^[0-9a-f]{32}$/.test(job.id));
  const seen = [];
  const r = await job.wait({ onProgress: (j) => seen.push(j.status) });
  assert.equal(seen[seen.length - 1], 'succeeded');
  assert.equal(job.progress, 1);
  const want = bruteCounts(pts, 0.5, 10, [10, 10, 10]);
  assert.deepEqual(r.counts, want.counts, 'the counts are the contract\'s');
  assert.equal(r.overflow, want.overflow);
  assert.equal(r.total, 700 * 699 / 2);
  assert.equal(r.box_source, 'job');
  const edges = Array.from({ length: 11 }, (_, k) => k * 0.5);
  const g = gOf(want.counts, edges, [{ pairs: 700 * 699 / 2, volume: 1000 }]);
  assert.ok(r.g.every((v, k) => close(v, g[k])), 'g(r) is LAMMPS\'s: ' + r.g.slice(0, 3) + ' vs ' + g.slice(0, 3));

  const a = await job.arrays();
  assert.ok(a.counts instanceof BigUint64Array && a.edges instanceof Float64Array && a.g instanceof Float64Array);
  assert.deepEqual(a.counts.shape, [10]);
  assert.deepEqual(Array.from(a.counts, Number), want.counts);
  assert.deepEqual(Array.from(a.edges), r.edges.map(Number));
  assert.deepEqual(Array.from(a.g), r.g, 'the npz g is the JSON g, bit for bit');
  assert.equal(a.total[0], BigInt(700 * 699 / 2));
  assert.deepEqual(a.total.shape, []);
  assert.deepEqual(Array.from(a.statistic), ['histogram']);
  assert.deepEqual(Array.from(a.box_source), ['job']);
  const csv = await job.csv();
  assert.match(csv.split('\n').find((l) => !l.startsWith('#')), /^bucket,lower,upper,count/);
  // the handle from the list reads its result from /result
  const listed = new Job(histd, (await histd.jobs()).find((j) => j.id === job.id));
  assert.deepEqual((await listed.result()).counts, want.counts);
});

test('a trajectory whose frames carry their boxes: per-frame counts as 2-D typed arrays', async () => {
  const frames = [cube(60, 8, 3), cube(60, 8, 4), cube(60, 8, 5)];
  const L = [8, 9, 10];
  const xyz = frames.map((f, k) => '60\nLattice="' + L[k] + ' 0 0 0 ' + L[k] + ' 0 0 0 ' + L[k] + '" pbc="T T T" ' +
    'Properties=species:S:1:pos:R:3\n' + f.map((p) => 'Ar ' + p.map((v) => v.toPrecision(17)).join(' ')).join('\n') + '\n').join('');
  const ds = await histd.upload(xyz, { format: 'xyz', name: 'three-frames.xyz' });
  assert.equal(ds.frames, 3);
  assert.equal(ds.n, 180);
  const job = await histd.submit({ dataset: ds.id, bucket_width: 0.25, buckets: 16, per_frame: true });
  const r = await job.wait();
  assert.equal(r.box_source, 'dataset', 'the file\'s boxes serve');
  const per = frames.map((f, k) => bruteCounts(f.map((p) => p.map((v) => Number(v.toPrecision(17)))), 0.25, 16, [L[k], L[k], L[k]]));
  const sum = per[0].counts.map((_, b) => per.reduce((s, p) => s + p.counts[b], 0));
  assert.deepEqual(r.counts, sum);
  const a = await job.arrays();
  const table = a['per_frame.counts'];
  assert.deepEqual(table.shape, [3, 16]);
  assert.deepEqual(rows(table).map((row) => Array.from(row, Number)), per.map((p) => p.counts));
  const g = gOf(sum, Array.from({ length: 17 }, (_, k) => k * 0.25), L.map((l) => ({ pairs: 60 * 59 / 2, volume: l ** 3 })));
  assert.ok(Array.from(a.g).every((v, k) => close(v, g[k])), 'g(r) uses each frame\'s own volume');
});

test('cancel, abort and errors carry the daemon\'s sentence', async () => {
  // a job long enough to be running when it is cancelled (5e9 pairs on one CPU worker)
  const big = new Float64Array(3 * 100000);
  const rnd = random(6);
  for (let k = 0; k < big.length; k++) big[k] = rnd() * 1000;
  const ds = await histd.upload(big, { format: 'f64' });
  assert.equal(ds.n, 100000);
  const long = await histd.submit({ dataset: ds.id, bucket_width: 1 });
  const queued = await histd.submit({ dataset: ds.id, bucket_width: 2 });
  // a wait aborted stops waiting, not the job
  const stop = new AbortController();
  setTimeout(() => stop.abort(), 300);
  await assert.rejects(long.wait({ signal: stop.signal, poll: 1 }), (e) => e.name === 'AbortError');
  await long.refresh();
  assert.ok(['queued', 'running'].includes(long.status), 'the job goes on: ' + long.status);
  await queued.cancel();
  assert.equal(queued.status, 'cancelled', 'a queued job is cancelled at once');
  await long.cancel();
  await assert.rejects(long.wait(), (e) => e instanceof JobFailed && e.job.status === 'cancelled' && e.job.id === long.id);
  await assert.rejects(queued.arrays(), JobFailed);

  // a refusal: the error's message is the problem+json detail
  const bad = { dataset: ds.id, bucket_width: -1 };
  const raw = await fetch(base + '/v1/jobs', { method: 'POST', body: JSON.stringify(bad),
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + TOKEN } });
  const problem = await raw.json();
  await assert.rejects(histd.submit(bad), (e) => e instanceof HistdError && e.status === raw.status &&
    e.message === problem.detail && e.title === problem.title && e.problem.detail === problem.detail);
  await assert.rejects(histd.job('0'.repeat(32)), (e) => e instanceof HistdError && e.status === 404 && e.message.length > 10);
  await assert.rejects(new Client(base).kernels(), (e) => e instanceof HistdError && e.status === 401);
  await assert.rejects(new Client('http://127.0.0.1:9').health(), (e) => e instanceof HistdError && e.status === 0 &&
    /no answer from http:\/\/127.0.0.1:9/.test(e.message));
});

test('the one-request histogram and the schema', async () => {
  const pts = [[0, 0, 0], [3, 4, 0], [6, 8, 0]];
  const r = await histd.histogram({ points: pts, bucket_width: 5, buckets: 4 });
  assert.deepEqual(r.counts, [0, 2, 1, 0]);
  const fields = await histd.schema();
  assert.ok(fields.some((f) => f.name === 'counts' && f.npz === 'counts' && f.type === 'u64'));
  assert.equal(await histd.schema(), fields, 'read once');
});

test('the README\'s Node example runs as written', async () => {
  const readme = fs.readFileSync(path.join(HERE, '..', '..', 'README.md'), 'utf8');
  const m = /<!-- test: js-node -->\s*```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(m, 'a <!-- test: js-node --> js block in README.md');
  // as after npm install ./api/js: the package's name is its histd.js
  const script = path.join(work, 'histogram.mjs');
  const url = new URL('../../api/js/histd.js', import.meta.url).href;
  fs.writeFileSync(script, m[1].replace(/from 'histd-client'/, `from '${url}'`));
  const pts = cube(500, 5, 8).map((p) => p.map((v) => Number(v.toPrecision(17))));
  const csv = path.join(work, 'points.csv');
  fs.writeFileSync(csv, csvOf(pts));
  const out = execFileSync(process.execPath, [script, csv], {
    env: { ...process.env, HISTD_URL: base, HISTD_TOKEN: TOKEN }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const want = bruteCounts(pts, 0.5, 10, null);
  assert.equal(out.trim(), `${500 * 499 / 2} pairs: ${want.counts.join(' ')}`);
});

test('integers beyond 2^53 are BigInts with every digit; the rest Numbers', () => {
  const v = parseJSON('{"c":[9007199254740993,18446744073709551615,9007199254740991,1e20,0.5],"s":"18446744073709551615"}');
  assert.deepEqual(v.c.map((x) => typeof x), ['bigint', 'bigint', 'number', 'number', 'number']);
  assert.equal(v.c[0], 2n ** 53n + 1n);
  assert.equal(v.c[1], 2n ** 64n - 1n);
  assert.equal(v.s, '18446744073709551615');
});

test('the npz reader reads what numpy.savez writes', (t) => {
  const file = path.join(work, 'numpy.npz');
  const code = [
    'import sys, numpy as np',
    'np.savez(sys.argv[1], big=np.array([2**64 - 1, 2**53 + 1, 0], dtype="<u8"),',
    '  neg=np.array([-1, -(2**62)], dtype="<i8"), f=np.arange(6, dtype="<f8").reshape(2, 3) / 4,',
    '  f4=np.array([0.5, -2], dtype="<f4"), be=np.array([1.5, 2.5], dtype=">f8"), s=np.array(["O", "OW", "Na+"]),',
    '  flag=np.array(True), scalar=np.uint64(7), i4=np.array([-3, 4], dtype="<i4"))',
    'np.savez_compressed(sys.argv[1] + ".z.npz", x=np.arange(3))',
  ].join('\n');
  try {
    execFileSync('/usr/bin/python3', ['-c', code, file], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    t.skip('numpy is not here (python3-numpy): ' + String(e.stderr || e.message).trim().split('\n').pop());
    return;
  }
  const a = readNpz(fs.readFileSync(file));
  assert.deepEqual(Array.from(a.big), [2n ** 64n - 1n, 2n ** 53n + 1n, 0n]);
  assert.deepEqual(Array.from(a.neg), [-1n, -(2n ** 62n)]);
  assert.deepEqual(a.f.shape, [2, 3]);
  assert.deepEqual(rows(a.f).map((r) => Array.from(r)), [[0, 0.25, 0.5], [0.75, 1, 1.25]]);
  assert.deepEqual(Array.from(a.f4), [0.5, -2]);
  assert.deepEqual(Array.from(a.be), [1.5, 2.5], 'big-endian values read value by value');
  assert.deepEqual(Array.from(a.s), ['O', 'OW', 'Na+']);
  assert.deepEqual([a.flag[0], a.flag.shape], [1, []]);
  assert.deepEqual([a.scalar[0], a.scalar.shape], [7n, []]);
  assert.deepEqual(Array.from(a.i4), [-3, 4]);
  assert.throws(() => readNpz(fs.readFileSync(file + '.z.npz')), /compressed/);
  assert.throws(() => readNpz(new Uint8Array(100)), /not a readable \.npz/);
});

// types.ts -- checked by tsc --noEmit -p tests/js (never run): the client's
// implementation (histd.js, typed by its JSDoc) must be what index.d.ts
// declares, and a consumer's code must compile against the declarations
// and api.d.ts (generated from api/openapi.yaml).
import * as impl from '../../api/js/histd.js';
import type * as decl from '../../api/js/index';
import { Client, HistdError, JobFailed, rows } from '../../api/js/index';
import type { Result, JobDoc, Dataset, Int, NpyArray, SchemaField } from '../../api/js/index';

// every export index.d.ts declares, histd.js has, with a type that fits
export const implemented: typeof decl = impl;

// a consumer
export async function periodicRdf(file: Blob, onBar: (f: number) => void): Promise<number[]> {
  const histd = new Client('http://127.0.0.1:8080', { token: 'secret' });
  const ds: Dataset = await histd.upload(file, { format: 'gro', onProgress: (sent, size) => onBar(size ? sent / size : 0) });
  const frames: Int | undefined = ds.frames;
  const job = await histd.submit({ dataset: ds.id, r_max: 1.2, buckets: 120, select_a: 'name:OW', exclude: 'molecule', frames: '::2' });
  let r: Result;
  try {
    r = await job.wait({ onProgress: (j) => onBar(j.progress), signal: new AbortController().signal });
  } catch (e) {
    if (e instanceof JobFailed) console.log(e.job.error, e.detail);
    else if (e instanceof HistdError) console.log(e.status, e.problem && e.problem.title);
    throw e;
  }
  const total: bigint = BigInt(r.total);
  const unit: string | undefined = r.unit;
  const source: 'job' | 'dataset' | undefined = r.box_source;
  const doc: JobDoc = job.doc;
  const a: Record<string, NpyArray> = await job.arrays();
  const perFrame = rows(a['per_frame.counts']);
  const fields: SchemaField[] | null = await histd.schema();
  console.log(total, unit, source, doc.status, perFrame.length, fields && fields.length, frames);
  return (r.g || []).map((g) => (g === null ? NaN : g));
}

// index.d.ts -- the types of histd-client (histd.js, npz.js, exact-json.js).
// The JSON documents' types (Result, JobDoc, Dataset, JobParams, ...) are
// api.d.ts, generated from api/openapi.yaml; this file declares the client.

import type {
  Int, Problem, Dataset, Devices, Kernel, JobDoc, JobRequest, HistogramRequest, Result,
  ResultSummary, SchemaField,
} from './api';

export * from './api';

/** JSON.parse, with integers beyond Number.MAX_SAFE_INTEGER as BigInts (every digit kept). */
export function parseJSON(text: string): any;

/** A typed array of a .npy's dtype, or strings for '<U' arrays, with the .npy's shape ([] for a scalar) and dtype. */
export type NpyArray = (
  Float64Array | Float32Array | BigUint64Array | BigInt64Array | Uint32Array | Int32Array |
  Uint16Array | Int16Array | Uint8Array | Int8Array | string[]
) & { shape: number[]; dtype: string };

/** One .npy file's array. */
export function readNpy(bytes: Uint8Array, name?: string): NpyArray;
/** Every array of an .npz (stored entries, as histd and numpy.savez write them), by name without ".npy". */
export function readNpz(data: ArrayBuffer | Uint8Array): Record<string, NpyArray>;
/** The rows of a 2-D array (frames x bins, partials x bins, ...), each a view on it. */
export function rows<T extends NpyArray>(a: T): T[];

/** The statuses a job ends in. */
export const DONE: readonly ['succeeded', 'failed', 'cancelled'];
/** A file's extension -> [the daemon's format, its Content-Type]. */
export const FORMATS: Readonly<Record<string, readonly [string, string]>>;
/** The format and Content-Type a file's name says, or null. */
export function formatOfName(name: string): [string, string] | null;

/** An error answer of the daemon (status 0: no answer); message is its sentence (detail). */
export class HistdError extends Error {
  constructor(status: number, title: string, detail: string, problem?: Problem | null);
  status: number;
  title: string;
  detail: string;
  /** The whole problem+json document, or null where the answer was not one. */
  problem: Problem | null;
}

/** A job that ended failed or cancelled; job is its last document. */
export class JobFailed extends HistdError {
  constructor(job: JobDoc);
  job: JobDoc;
}

export interface ClientOptions {
  /** The daemon's --token, when it has one. */
  token?: string;
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  /** An object goes as JSON; a string, Blob, bytes or ReadableStream as it is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** How to read a 2xx answer: parsed JSON (default), text, or bytes. */
  as?: 'json' | 'text' | 'bytes';
  signal?: AbortSignal;
}

/** What upload() sends: a File or Blob, a stream or async iterable of bytes, a string, bytes, or points as JSON. */
export type UploadData =
  | Blob
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array | string>
  | string
  | ArrayBuffer
  | ArrayBufferView
  | { points: number[][]; w?: number[] }
  | { x: number[]; y: number[]; z: number[]; w?: number[] };

export interface UploadOptions {
  /** The daemon's format (csv, xyz, gro, pdb, lammps, dcd, xtc, trr, netcdf, json, f64, f32); default: contentType, or a File's name. */
  format?: string;
  contentType?: string;
  /** A label for people (default: a File's name). */
  name?: string;
  /** The bytes a stream will give: sent as Content-Length, so that the daemon streams or spools it. */
  size?: number;
  /** Called as the bytes go; size is null where unknown. */
  onProgress?: (sent: number, size: number | null) => void;
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Called with the job after each read. */
  onProgress?: (job: Job) => void;
  /** Seconds each long poll may wait (default 1 with onProgress, else 10). */
  poll?: number;
  /** Stops the waiting (not the job: Job#cancel does that). */
  signal?: AbortSignal;
}

export class Client {
  constructor(base?: string, options?: ClientOptions);
  base: string;
  token: string;
  fetch: typeof fetch;
  schemaLoad: Promise<SchemaField[] | null> | null;
  url(path: string): string;
  headers(extra?: Record<string, string>): Record<string, string>;
  request(method: string, path: string, options?: RequestOptions): Promise<any>;
  health(): Promise<{ status: 'ok'; version?: string }>;
  kernels(): Promise<Kernel[]>;
  devices(): Promise<Devices>;
  /** GET /v1/schema's fields (read once), or null from a daemon without it. */
  schema(): Promise<SchemaField[] | null>;
  datasets(options?: { limit?: number }): Promise<Dataset[]>;
  dataset(id: string): Promise<Dataset>;
  deleteDataset(id: string): Promise<void>;
  upload(data: UploadData, options?: UploadOptions): Promise<Dataset>;
  xhrUpload(path: string, headers: Record<string, string>, body: any,
            onProgress: (sent: number, size: number | null) => void, signal?: AbortSignal): Promise<Dataset>;
  submit(params: JobRequest): Promise<Job>;
  /** submit, then wait. */
  compute(params: JobRequest, options?: WaitOptions): Promise<Result>;
  job(id: string): Promise<Job>;
  jobs(options?: { limit?: number }): Promise<JobDoc[]>;
  /** POST /v1/histogram: small point sets in one request, nothing stored. */
  histogram(params: HistogramRequest): Promise<Result>;
}

export class Job {
  constructor(client: Client, doc: JobDoc, full?: boolean);
  client: Client;
  doc: JobDoc;
  id: string;
  /** Whether doc.result holds the arrays (a whole GET /v1/jobs/{id}). */
  full: boolean;
  readonly status: JobDoc['status'];
  /** From 0 to 1. */
  readonly progress: number;
  readonly done: boolean;
  path(tail?: string): string;
  refresh(options?: { wait?: number; summary?: boolean; signal?: AbortSignal }): Promise<Job>;
  cancel(): Promise<Job>;
  /** Waits for the end; the result, or JobFailed. */
  wait(options?: WaitOptions): Promise<Result>;
  result(): Promise<Result>;
  /** The result as typed arrays, by the .npz names of GET /v1/schema (counts: BigUint64Array, ...). */
  arrays(): Promise<Record<string, NpyArray>>;
  csv(): Promise<string>;
}

export type { Int, ResultSummary };

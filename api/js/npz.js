/*
 * npz.js -- NumPy .npz files read into typed arrays, with no dependency.
 *
 * An .npz is a zip archive of .npy files. histd writes its entries stored
 * (not compressed; src/io/write_npz.c), so reading one is walking the zip's
 * central directory (ZIP64 records included: a long pair list passes 4 GiB)
 * and reading each .npy's header ({'descr': '<u8', 'fortran_order': False,
 * 'shape': (K,), }) in front of its raw values. numpy.savez's files are read
 * the same way; a compressed entry (numpy.savez_compressed) is refused with
 * a sentence rather than inflated.
 *
 * Each array comes back as a typed array of its dtype (uint64 counts as a
 * BigUint64Array: exact beyond 2^53), a view on the file's bytes where the
 * alignment allows, with `shape` (the .npy's, [] for a scalar) and `dtype`
 * (its descr) added; unicode strings ('<U8') as an Array of strings.
 */

/** @type {Record<string, any>} the typed array of each kind and width */
const TYPED = {
  f8: Float64Array, f4: Float32Array,
  u8: BigUint64Array, i8: BigInt64Array,
  u4: Uint32Array, i4: Int32Array, u2: Uint16Array, i2: Int16Array,
  u1: Uint8Array, i1: Int8Array, b1: Uint8Array,
};
/** @type {Record<string, string>} DataView's reader for each typed array, for big-endian ('>') data */
const GETTER = {
  f8: 'getFloat64', f4: 'getFloat32', u8: 'getBigUint64', i8: 'getBigInt64',
  u4: 'getUint32', i4: 'getInt32', u2: 'getUint16', i2: 'getInt16', u1: 'getUint8', i1: 'getInt8', b1: 'getUint8',
};

/** @param {string} what */
function bad(what) { return new Error('not a readable .npz: ' + what); }

/**
 * One .npy file's array.
 * @param {Uint8Array} bytes the .npy file
 * @param {string} [name] its name, for error sentences
 * @returns {import('./index').NpyArray}
 */
export function readNpy(bytes, name = 'the array') {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 10 || bytes[0] !== 0x93 || String.fromCharCode(...bytes.subarray(1, 6)) !== 'NUMPY') {
    throw bad(name + ' does not start with the .npy magic');
  }
  const major = bytes[6];
  const hlen = major === 1 ? dv.getUint16(8, true) : dv.getUint32(8, true);
  const start = (major === 1 ? 10 : 12) + hlen;
  if (start > bytes.length) throw bad(name + "'s header runs past its end");
  const header = new TextDecoder().decode(bytes.subarray(major === 1 ? 10 : 12, start));
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header);
  const shapeText = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shapeText) throw bad(name + "'s header has no descr or shape: " + header.trim());
  if (/'fortran_order'\s*:\s*True/.test(header)) {
    throw bad(name + ' is in Fortran order; this reader reads C order (numpy.ascontiguousarray)');
  }
  const shape = shapeText[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const m = /^([<>|=])([a-zA-Z])(\d+)$/.exec(descr[1]);
  if (!m) throw bad(name + ' has the dtype ' + descr[1] + ', which this reader does not know');
  const [, order, kind, width] = m;
  const size = Number(width);
  let out;
  if (kind === 'U') { // fixed-width UTF-32 strings, NUL-padded
    const end = start + count * size * 4;
    if (end > bytes.length) throw bad(name + "'s values run past its end");
    out = [];
    for (let k = 0; k < count; k++) {
      let s = '';
      for (let c = 0; c < size; c++) {
        const code = dv.getUint32(start + (k * size + c) * 4, order !== '>');
        if (code === 0) break;
        s += String.fromCodePoint(code);
      }
      out.push(s);
    }
  } else {
    const key = (kind === 'b' ? 'b' : kind) + size;
    const Typed = TYPED[key];
    if (!Typed) throw bad(name + ' has the dtype ' + descr[1] + ', which this reader does not know');
    const end = start + count * size;
    if (end > bytes.length) throw bad(name + "'s values run past its end");
    if (order === '>' && size > 1) { // big-endian: value by value
      out = new Typed(count);
      const get = /** @type {any} */ (dv)[GETTER[key]].bind(dv);
      for (let k = 0; k < count; k++) out[k] = get(start + k * size, false);
    } else if ((bytes.byteOffset + start) % size === 0) { // a view, no copy
      out = new Typed(bytes.buffer, bytes.byteOffset + start, count);
    } else { // misaligned in the file: one copy
      out = new Typed(Uint8Array.prototype.slice.call(bytes, start, end).buffer); // (a Buffer's slice is a view)
    }
  }
  return Object.assign(out, { shape, dtype: descr[1] });
}

/**
 * Every array of an .npz file, by name (".npy" left off).
 * @param {ArrayBuffer | Uint8Array} data the whole file
 * @returns {Record<string, import('./index').NpyArray>}
 */
export function readNpz(data) {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u16 = (/** @type {number} */ p) => dv.getUint16(p, true);
  const u32 = (/** @type {number} */ p) => dv.getUint32(p, true);
  const u64 = (/** @type {number} */ p) => Number(dv.getBigUint64(p, true));
  // the end of central directory record: the last 22 bytes, or before a comment
  let eocd = -1;
  for (let p = bytes.length - 22; p >= Math.max(0, bytes.length - 22 - 65535); p--) {
    if (u32(p) === 0x06054b50) { eocd = p; break; }
  }
  if (eocd < 0) throw bad('no zip end record (is it an .npz?)');
  let entries = u16(eocd + 10);
  let cdOffset = u32(eocd + 16);
  if (entries === 0xffff || cdOffset === 0xffffffff) { // ZIP64: its locator sits just before
    const loc = eocd - 20;
    if (loc < 0 || u32(loc) !== 0x07064b50) throw bad('a ZIP64 end record without its locator');
    const z = u64(loc + 8);
    if (u32(z) !== 0x06064b50) throw bad('the ZIP64 end record is not where its locator says');
    entries = u64(z + 32);
    cdOffset = u64(z + 48);
  }
  /** @type {Record<string, import('./index').NpyArray>} */
  const out = {};
  let p = cdOffset;
  for (let k = 0; k < entries; k++) {
    if (p + 46 > bytes.length || u32(p) !== 0x02014b50) throw bad('central directory entry ' + k + ' is damaged');
    const method = u16(p + 10);
    let size = u32(p + 24);
    const nameLen = u16(p + 28);
    const extraLen = u16(p + 30);
    const commentLen = u16(p + 32);
    let local = u32(p + 42);
    const name = new TextDecoder().decode(bytes.subarray(p + 46, p + 46 + nameLen));
    // ZIP64 extra field: the sizes and offset that did not fit, in this order
    for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen; x += 4 + u16(x + 2)) {
      if (u16(x) !== 0x0001) continue;
      let f = x + 4;
      if (size === 0xffffffff) { size = u64(f); f += 8; }
      if (u32(p + 20) === 0xffffffff) f += 8; // the compressed size
      if (local === 0xffffffff) local = u64(f);
    }
    if (method !== 0) {
      throw bad(name + ' is compressed (zip method ' + method + '); this reader reads stored entries, ' +
        'as histd and numpy.savez write them');
    }
    if (u32(local) !== 0x04034b50) throw bad(name + "'s local header is not where the directory says");
    const at = local + 30 + u16(local + 26) + u16(local + 28);
    const key = name.replace(/\.npy$/, '');
    out[key] = readNpy(bytes.subarray(at, at + size), key);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/**
 * The rows of a 2-D array (frames x bins, partials x bins, ...), each a
 * view on it.
 * @template {import('./index').NpyArray} T
 * @param {T} a
 * @returns {T[]}
 */
export function rows(a) {
  if (!a.shape || a.shape.length !== 2) throw new Error('rows() needs a 2-D array; this one has shape [' + (a.shape || []) + ']');
  const [r, c] = a.shape;
  const out = [];
  for (let i = 0; i < r; i++) {
    out.push(/** @type {any} */ (Array.isArray(a) ? a.slice(i * c, (i + 1) * c) : a.subarray(i * c, (i + 1) * c)));
  }
  return out;
}

/*
 * exact-json.js -- JSON.parse that keeps every digit of large integers.
 *
 * histd writes counts as exact 64-bit integers, and JSON has no limit on
 * digits, but JSON.parse reads every number into a double, which holds
 * integers exactly only up to 2^53 (9,007,199,254,740,992): a histogram of
 * more than ~134 million points has counts and totals beyond it, and
 * JSON.parse would round them silently. parseJSON(text) returns what
 * JSON.parse does, except that an integer literal beyond
 * Number.MAX_SAFE_INTEGER becomes a BigInt with all its digits; smaller
 * integers and every other number stay Numbers, so the code that reads a
 * result does not change where counts are small. Strings are skipped
 * whole, so digits inside them are never touched.
 *
 * The client (histd.js) reads every answer with it; it has no
 * dependencies, so any JavaScript can import it alone: Number(big) where a
 * double is enough (plotting), big.toString() or Intl.NumberFormat#format(big)
 * for display, and BigInt arithmetic (BigInt(x) on both sides) where
 * exactness matters.
 */

// a string literal (skipped), or a run of the characters numbers are made of
const TOKEN = /"(?:[^"\\]|\\.)*"|[-+.\deE]+/g;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** @param {string} tok */
function isBig(tok) {
  if (tok.length < 16 || !/^-?\d+$/.test(tok)) return false;
  const v = BigInt(tok);
  return v > SAFE || v < -SAFE;
}

/**
 * JSON.parse, with integers beyond Number.MAX_SAFE_INTEGER as BigInts.
 * @param {string} text
 * @returns {any}
 */
export function parseJSON(text) {
  let marked = false;
  const quoted = String(text).replace(TOKEN, (tok) => {
    if (tok.charCodeAt(0) === 34 || !isBig(tok)) return tok;
    marked = true;
    return '"\\u0000' + tok + '"';
  });
  if (!marked) return JSON.parse(quoted);
  return JSON.parse(quoted, (key, v) =>
    typeof v === 'string' && v.charCodeAt(0) === 0 && /^\u0000-?\d+$/.test(v) ? BigInt(v.slice(1)) : v);
}

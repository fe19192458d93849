// Python-compatible JSON, so the page hashes and signs exactly the bytes the signer does.
//
// The signer hashes `json.dumps(body, sort_keys=True, separators=(",", ":"))`. JSON.parse would
// turn 1764129785.0 into 1764129785 and lose digits of integers above 2^53, and the recomputed
// hash would differ, so numbers are kept as the lexeme the wire carried (a Num) and written back
// verbatim: Python's float repr round-trips, so that lexeme is what the signer hashed.

export class Num {
  constructor(text) { this.text = text; }
  toString() { return this.text; }
  get value() { return Number(this.text); }
  get big() {
    if (!/^-?\d+$/.test(this.text)) throw new Error('not an integer: ' + this.text);
    return BigInt(this.text);
  }
}

const MAX_DEPTH = 64;

export function parse(text) {
  let i = 0;
  const ws = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i++; };
  const fail = (what) => { throw new SyntaxError(`bad JSON at ${i}: ${what}`); };
  function value(depth) {
    if (depth > MAX_DEPTH) fail('too deep');
    ws();
    const c = text[i];
    if (c === '{') {
      i++; const out = Object.create(null); ws();
      if (text[i] === '}') { i++; return out; }
      for (;;) {
        ws(); if (text[i] !== '"') fail('key');
        const k = str(); ws(); if (text[i++] !== ':') fail(':');
        out[k] = value(depth + 1); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i++] === '}') return out;
        fail('object');
      }
    }
    if (c === '[') {
      i++; const out = []; ws();
      if (text[i] === ']') { i++; return out; }
      for (;;) {
        out.push(value(depth + 1)); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i++] === ']') return out;
        fail('array');
      }
    }
    if (c === '"') return str();
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m && m[0]) { i += m[0].length; return new Num(m[0]); }
    for (const [w, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(w, i)) { i += w.length; return v; }
    }
    fail('value');
  }
  function str() {
    // eslint-disable-next-line no-control-regex -- JSON forbids raw control characters in a string: the regex names them
    const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(i));
    if (!m) fail('string');
    i += m[0].length;
    return JSON.parse(m[0]);
  }
  const out = value(0); ws();
  if (i !== text.length) fail('trailing data');
  return out;
}

// An integer field as the signer wrote it: a JSON number or a decimal string (amounts in base units).
export function int(v, what = 'integer') {
  const t = v instanceof Num ? v.text : typeof v === 'string' ? v : null;
  if (t === null || !/^(0|[1-9]\d*)$/.test(t)) throw new Error(`malformed ${what} in the request`);
  return BigInt(t);
}

function pyString(s, asciiOnly) {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (cp < 0x20 || (asciiOnly && cp > 0x7e)) {
      if (cp > 0xffff) {
        const v = cp - 0x10000;
        out += '\\u' + (0xd800 + (v >> 10)).toString(16) + '\\u' + (0xdc00 + (v & 0x3ff)).toString(16);
      } else out += '\\u' + cp.toString(16).padStart(4, '0');  // ensure_ascii escapes DEL (0x7f) too
    } else out += ch;
  }
  return out + '"';
}

function pyNumber(n) {
  if (!Number.isFinite(n)) throw new Error('not a finite number');
  if (Number.isInteger(n)) {
    if (!Number.isSafeInteger(n)) throw new Error('integer too large for a JS number: use Num or BigInt');
    return String(n);
  }
  // Python's repr: shortest round-trip digits, like JS, but exponents as e+16 / e-05.
  const s = String(n);
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

// Python sorts str keys by code point; JS's default sort compares UTF-16 units, which puts a key
// with a character above U+FFFF (a surrogate pair, 0xD800...) before one with U+E000..U+FFFF.
function byCodePoint(a, b) {
  const x = Array.from(a), y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d;
  }
  return x.length - y.length;
}

// json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=asciiOnly)
export function dumps(v, asciiOnly = true) {
  if (v === null || v === undefined) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (v instanceof Num) return v.text;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return pyNumber(v);
  if (typeof v === 'string') return pyString(v, asciiOnly);
  if (Array.isArray(v)) return '[' + v.map((x) => dumps(x, asciiOnly)).join(',') + ']';
  const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort(byCodePoint);
  return '{' + keys.map((k) => pyString(k, asciiOnly) + ':' + dumps(v[k], asciiOnly)).join(',') + '}';
}

// A JS value of a parsed tree (Num -> number or string), for display only.
export function plain(v) {
  if (v instanceof Num) return v.text;
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

// A timestamp with a fractional part: Python would read an integral one back as an int and
// a pydantic float field would then re-serialize it as "1.0", breaking the signed bytes.
export function nowTs() {
  let ts = Date.now() / 1000;
  if (Number.isInteger(ts)) ts += 0.001;
  return ts;
}

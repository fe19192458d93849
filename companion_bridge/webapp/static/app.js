var __defProp = Object.defineProperty;
var __export = (target, all2) => {
  for (var name in all2)
    __defProp(target, name, { get: all2[name], enumerable: true });
};

// src/store.js
var store_exports = {};
__export(store_exports, {
  all: () => all,
  del: () => del,
  get: () => get,
  put: () => put
});
var DB = "owliabot-companion";
var STORES = ["kv"];
var dbp = null;
function open() {
  if (!dbp) {
    dbp = new Promise((resolve, reject) => {
      const req = indexedDB.open(DB, 1);
      req.onupgradeneeded = () => {
        for (const s of STORES) if (!req.result.objectStoreNames.contains(s)) req.result.createObjectStore(s);
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  }
  return dbp;
}
async function tx(store, mode, fn) {
  const db = await open();
  return new Promise((resolve, reject) => {
    const t = db.transaction(store, mode);
    const result = fn(t.objectStore(store));
    t.oncomplete = () => resolve(result && "result" in result ? result.result : void 0);
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error || new Error("storage transaction aborted"));
  });
}
var get = (store, key) => tx(store, "readonly", (s) => s.get(key));
var put = (store, key, value) => tx(store, "readwrite", (s) => s.put(value, key));
var del = (store, key) => tx(store, "readwrite", (s) => s.delete(key));
var all = (store) => tx(store, "readonly", (s) => s.getAll());

// src/vault.js
var vault_exports = {};
__export(vault_exports, {
  VaultError: () => VaultError,
  createPasskey: () => createPasskey,
  load: () => load,
  markBackedUp: () => markBackedUp,
  prfSupported: () => prfSupported,
  seal: () => seal,
  withSecret: () => withSecret
});

// ../../node_modules/@noble/hashes/_u64.js
var U32_MASK64 = /* @__PURE__ */ (() => BigInt(2 ** 32 - 1))();
var _32n = /* @__PURE__ */ BigInt(32);
function fromBig(n, le = false) {
  if (le)
    return { h: Number(n & U32_MASK64), l: Number(n >> _32n & U32_MASK64) };
  return { h: Number(n >> _32n & U32_MASK64) | 0, l: Number(n & U32_MASK64) | 0 };
}
function split(lst, le = false) {
  const len = lst.length;
  let Ah = new Uint32Array(len);
  let Al = new Uint32Array(len);
  for (let i = 0; i < len; i++) {
    const { h, l } = fromBig(lst[i], le);
    [Ah[i], Al[i]] = [h, l];
  }
  return [Ah, Al];
}
var fromNumH = (n) => n / 2 ** 32 | 0;
var fromNumL = (n) => n >>> 0;
function setU64FromNum(view, byteOffset, n, isLE2) {
  const h = fromNumH(n);
  const l = fromNumL(n);
  view.setUint32(byteOffset, isLE2 ? l : h, isLE2);
  view.setUint32(byteOffset + 4, isLE2 ? h : l, isLE2);
}
var shrSH = (h, _l, s) => h >>> s;
var shrSL = (h, l, s) => h << 32 - s | l >>> s;
var rotrSH = (h, l, s) => h >>> s | l << 32 - s;
var rotrSL = (h, l, s) => h << 32 - s | l >>> s;
var rotrBH = (h, l, s) => h << 64 - s | l >>> s - 32;
var rotrBL = (h, l, s) => h >>> s - 32 | l << 64 - s;
function add(Ah, Al, Bh, Bl) {
  const l = (Al >>> 0) + (Bl >>> 0);
  return { h: Ah + Bh + (l / 2 ** 32 | 0) | 0, l: l | 0 };
}
var add3L = (Al, Bl, Cl) => (Al >>> 0) + (Bl >>> 0) + (Cl >>> 0);
var add3H = (low, Ah, Bh, Ch) => Ah + Bh + Ch + (low / 2 ** 32 | 0) | 0;
var add4L = (Al, Bl, Cl, Dl) => (Al >>> 0) + (Bl >>> 0) + (Cl >>> 0) + (Dl >>> 0);
var add4H = (low, Ah, Bh, Ch, Dh) => Ah + Bh + Ch + Dh + (low / 2 ** 32 | 0) | 0;
var add5L = (Al, Bl, Cl, Dl, El) => (Al >>> 0) + (Bl >>> 0) + (Cl >>> 0) + (Dl >>> 0) + (El >>> 0);
var add5H = (low, Ah, Bh, Ch, Dh, Eh) => Ah + Bh + Ch + Dh + Eh + (low / 2 ** 32 | 0) | 0;

// ../../node_modules/@noble/hashes/utils.js
function isBytes(a) {
  return a instanceof Uint8Array || ArrayBuffer.isView(a) && a.constructor.name === "Uint8Array" && "BYTES_PER_ELEMENT" in a && a.BYTES_PER_ELEMENT === 1;
}
var atitle = (title) => title ? `"${title}" ` : "";
function anumber(n, title = "") {
  if (typeof n !== "number")
    throw new TypeError(atitle(title) + "expected number, got " + typeof n);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(atitle(title) + "expected integer >= 0, got " + n);
  return n;
}
function abool(value, title = "") {
  if (typeof value !== "boolean")
    throw new TypeError(atitle(title) + "expected boolean, got type=" + typeof value);
  return value;
}
function abytes(value, length, title = "") {
  if (isBytes(value) && (length === void 0 || value.length === length))
    return value;
  if (length !== void 0)
    anumber(length, "length");
  const bytes = isBytes(value);
  const ofLen = length !== void 0 ? ` of length ${length}` : "";
  const got = bytes ? `length=${value.length}` : `type=${typeof value}`;
  const message = atitle(title) + "expected Uint8Array" + ofLen + ", got " + got;
  if (!bytes)
    throw new TypeError(message);
  throw new RangeError(message);
}
function ahash(h) {
  if (typeof h !== "function" || typeof h.create !== "function")
    throw new TypeError("expected hash wrapped by utils.createHasher");
  anumber(h.outputLen);
  anumber(h.blockLen);
  if (h.outputLen < 1 || h.blockLen < 1)
    throw new Error("hash blockLen / outputLen must be >= 1");
}
var aobject = (value, label) => {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new TypeError((label === "object" ? "" : `"${label}" `) + "expected object, got type=" + typeof value);
};
var aopts = (value, label) => {
  aobject(value, label);
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null)
    throw new TypeError(`"${label}" expected plain object`);
  if (Object.hasOwn(value, "__proto__"))
    throw new TypeError(`"${label}.__proto__" is not allowed`);
};
function aexists(instance, checkFinished = true) {
  if (instance.destroyed)
    throw new Error("hash was destroyed");
  if (checkFinished && instance.finished)
    throw new Error("digest() was already called");
}
function aoutput(out, instance) {
  abytes(out, void 0, "output");
  const min = instance.outputLen;
  if (!(out.length >= min)) {
    throw new RangeError('"output" expected length >= ' + min);
  }
}
function u32(arr) {
  return new Uint32Array(arr.buffer, arr.byteOffset, Math.floor(arr.byteLength / 4));
}
function clean(...arrays) {
  for (let i = 0; i < arrays.length; i++) {
    arrays[i].fill(0);
  }
}
function createView(arr) {
  return new DataView(arr.buffer, arr.byteOffset, arr.byteLength);
}
function rotr(word2, shift) {
  return word2 << 32 - shift | word2 >>> shift;
}
function rotl(word2, shift) {
  return word2 << shift | word2 >>> 32 - shift >>> 0;
}
var isLE = /* @__PURE__ */ (() => new Uint8Array(new Uint32Array([287454020]).buffer)[0] === 68)();
function byteSwap(word2) {
  return word2 << 24 & 4278190080 | word2 << 8 & 16711680 | word2 >>> 8 & 65280 | word2 >>> 24 & 255;
}
function byteSwap32(arr) {
  for (let i = 0; i < arr.length; i++) {
    arr[i] = byteSwap(arr[i]);
  }
  return arr;
}
var swap32IfBE = isLE ? (u) => u : byteSwap32;
var hasHexBuiltin = /* @__PURE__ */ (() => (
  // @ts-ignore
  typeof Uint8Array.from([]).toHex === "function" && typeof Uint8Array.fromHex === "function"
))();
var hexes = /* @__PURE__ */ Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
function bytesToHex(bytes) {
  abytes(bytes);
  if (hasHexBuiltin)
    return bytes.toHex();
  let hex = "";
  for (let i = 0; i < bytes.length; i++) {
    hex += hexes[bytes[i]];
  }
  return hex;
}
function asciiToBase16(ch) {
  return ch >= 48 && ch <= 57 ? ch - 48 : ch >= 65 && ch <= 70 ? ch - (65 - 10) : ch >= 97 && ch <= 102 ? ch - (97 - 10) : void 0;
}
function hexToBytes(hex) {
  if (typeof hex !== "string")
    throw new TypeError("hex string expected, got " + typeof hex);
  if (hasHexBuiltin) {
    try {
      return Uint8Array.fromHex(hex);
    } catch (error) {
      if (error instanceof SyntaxError)
        throw new RangeError(error.message);
      throw error;
    }
  }
  const hl = hex.length;
  const al = hl / 2;
  if (hl % 2)
    throw new RangeError("hex string expected, got unpadded hex of length " + hl);
  const array = new Uint8Array(al);
  for (let ai = 0, hi = 0; ai < al; ai++, hi += 2) {
    const n1 = asciiToBase16(hex.charCodeAt(hi));
    const n2 = asciiToBase16(hex.charCodeAt(hi + 1));
    if (n1 === void 0 || n2 === void 0) {
      const char = hex[hi] + hex[hi + 1];
      throw new RangeError('hex string expected, got non-hex character "' + char + '" at index ' + hi);
    }
    array[ai] = n1 * 16 + n2;
  }
  return array;
}
function nextTick(onReject) {
  const host = globalThis;
  if (typeof host.scheduler?.yield === "function") {
    const promise = host.scheduler.yield();
    if (onReject)
      promise.catch(onReject);
    return promise;
  }
  return new Promise((resolve) => host.setTimeout(resolve, 0));
}
async function asyncLoop(iters, tick2, cb, onReject) {
  anumber(iters, "iters");
  anumber(tick2, "tick");
  if (typeof cb !== "function")
    throw new TypeError("callback must be a function");
  let ts = Date.now();
  for (let i = 0; i < iters; i++) {
    cb(i);
    const diff2 = Date.now() - ts;
    if (diff2 >= 0 && diff2 < tick2)
      continue;
    await nextTick(onReject);
    ts = Date.now();
  }
}
function utf8ToBytes(str) {
  if (typeof str !== "string")
    throw new TypeError("string expected");
  const encoded = new TextEncoder().encode(str);
  try {
    return new Uint8Array(encoded);
  } finally {
    clean(encoded);
  }
}
function kdfInputToBytes(data, errorTitle = "") {
  if (typeof data === "string")
    return utf8ToBytes(data);
  return abytes(data, void 0, errorTitle);
}
function concatBytes(...arrays) {
  let sum = 0;
  for (let i = 0; i < arrays.length; i++) {
    const a = arrays[i];
    abytes(a);
    sum += a.length;
  }
  const res = new Uint8Array(sum);
  for (let i = 0, pad = 0; i < arrays.length; i++) {
    const a = arrays[i];
    res.set(a, pad);
    pad += a.length;
  }
  return res;
}
function checkOpts(defaults, opts, title = "opts") {
  aopts(defaults, "defaults");
  if (opts !== void 0)
    aopts(opts, title);
  const merged = Object.assign(/* @__PURE__ */ Object.create(null), defaults, opts);
  return merged;
}
function createHasher(hashCons, info = {}) {
  if (typeof hashCons !== "function")
    throw new TypeError('"hashCons" expected function, got type=' + typeof hashCons);
  info = checkOpts({}, info, "info");
  const hashC = (msg, opts) => hashCons(opts).update(msg).digest();
  const tmp = hashCons(void 0);
  hashC.outputLen = tmp.outputLen;
  hashC.blockLen = tmp.blockLen;
  hashC.canXOF = tmp.canXOF;
  hashC.create = (opts) => hashCons(opts);
  Object.assign(hashC, info);
  return Object.freeze(hashC);
}
function randomBytes(bytesLength = 32) {
  anumber(bytesLength, "bytesLength");
  const cr = typeof globalThis === "object" ? globalThis.crypto : null;
  if (typeof cr?.getRandomValues !== "function")
    throw new Error("crypto.getRandomValues must be defined");
  if (bytesLength > 65536)
    throw new RangeError(`"bytesLength" expected <= 65536, got ${bytesLength}`);
  return cr.getRandomValues(new Uint8Array(bytesLength));
}
var oidNist = (suffix) => ({
  // Current NIST hashAlgs suffixes used here fit in one DER subidentifier octet.
  // Larger suffix values would need base-128 OID encoding and a different length byte.
  oid: Uint8Array.from([6, 9, 96, 134, 72, 1, 101, 3, 4, 2, suffix])
});

// ../../node_modules/@noble/hashes/_md.js
function Chi(a, b, c) {
  return a & b ^ ~a & c;
}
function Maj(a, b, c) {
  return a & b ^ a & c ^ b & c;
}
var HashMD = class {
  blockLen;
  outputLen;
  canXOF = false;
  padOffset;
  isLE;
  // For partial updates less than block size
  buffer;
  view;
  finished = false;
  length = 0;
  pos = 0;
  destroyed = false;
  constructor(blockLen, outputLen, padOffset, isLE2) {
    this.blockLen = blockLen;
    this.outputLen = outputLen;
    this.padOffset = padOffset;
    this.isLE = isLE2;
    this.buffer = new Uint8Array(blockLen);
    this.view = createView(this.buffer);
  }
  update(data) {
    aexists(this);
    abytes(data);
    const { view, buffer, blockLen } = this;
    const len = data.length;
    let processed = false;
    for (let pos = 0; pos < len; ) {
      const take = Math.min(blockLen - this.pos, len - pos);
      if (take === blockLen) {
        const dataView = createView(data);
        for (; blockLen <= len - pos; pos += blockLen)
          this.process(dataView, pos);
        processed = true;
        continue;
      }
      buffer.set(pos === 0 && take === len ? data : data.subarray(pos, pos + take), this.pos);
      this.pos += take;
      pos += take;
      if (this.pos === blockLen) {
        this.process(view, 0);
        this.pos = 0;
        processed = true;
      }
    }
    this.length += data.length;
    if (processed)
      this.roundClean();
    return this;
  }
  digestInto(out) {
    aexists(this);
    aoutput(out, this);
    this.finished = true;
    const { buffer, view, blockLen, isLE: isLE2 } = this;
    let { pos } = this;
    buffer[pos++] = 128;
    buffer.fill(0, pos);
    if (this.padOffset > blockLen - pos) {
      this.process(view, 0);
      buffer.fill(0);
    }
    setU64FromNum(view, blockLen - 8, this.length * 8, isLE2);
    this.process(view, 0);
    this.roundClean();
    const oview = out === buffer ? view : createView(out);
    const len = this.outputLen;
    const outLen = len / 4;
    const state = this.get();
    if (len % 4 || outLen > state.length)
      throw new Error("invalid outputLen");
    for (let i = 0; i < outLen; i++)
      oview.setUint32(4 * i, state[i], isLE2);
  }
  digest() {
    const { buffer, outputLen } = this;
    this.digestInto(buffer);
    const res = buffer.slice(0, outputLen);
    this.destroy();
    return res;
  }
  _cloneIntoMeta(to) {
    const { buffer, length, finished, destroyed, pos } = this;
    to.destroyed = destroyed;
    to.finished = finished;
    to.length = length;
    to.pos = pos;
    if (pos)
      to.buffer.set(buffer);
    return to;
  }
  clone() {
    return this._cloneInto();
  }
};
var SHA256_IV = /* @__PURE__ */ Uint32Array.from([
  1779033703,
  3144134277,
  1013904242,
  2773480762,
  1359893119,
  2600822924,
  528734635,
  1541459225
]);
var SHA512_IV = /* @__PURE__ */ Uint32Array.from([
  1779033703,
  4089235720,
  3144134277,
  2227873595,
  1013904242,
  4271175723,
  2773480762,
  1595750129,
  1359893119,
  2917565137,
  2600822924,
  725511199,
  528734635,
  4215389547,
  1541459225,
  327033209
]);

// ../../node_modules/@noble/hashes/sha2.js
var SHA256_K = /* @__PURE__ */ Uint32Array.from([
  1116352408,
  1899447441,
  3049323471,
  3921009573,
  961987163,
  1508970993,
  2453635748,
  2870763221,
  3624381080,
  310598401,
  607225278,
  1426881987,
  1925078388,
  2162078206,
  2614888103,
  3248222580,
  3835390401,
  4022224774,
  264347078,
  604807628,
  770255983,
  1249150122,
  1555081692,
  1996064986,
  2554220882,
  2821834349,
  2952996808,
  3210313671,
  3336571891,
  3584528711,
  113926993,
  338241895,
  666307205,
  773529912,
  1294757372,
  1396182291,
  1695183700,
  1986661051,
  2177026350,
  2456956037,
  2730485921,
  2820302411,
  3259730800,
  3345764771,
  3516065817,
  3600352804,
  4094571909,
  275423344,
  430227734,
  506948616,
  659060556,
  883997877,
  958139571,
  1322822218,
  1537002063,
  1747873779,
  1955562222,
  2024104815,
  2227730452,
  2361852424,
  2428436474,
  2756734187,
  3204031479,
  3329325298
]);
var SHA256_W = /* @__PURE__ */ new Uint32Array(64);
var SHA2_32B = class extends HashMD {
  // We cannot use array here since array allows indexing by variable
  // which means optimizer/compiler cannot use registers.
  // Numeric initializers matter: starting the fields as `undefined` changes
  // V8's field representation and makes sha256 3x slower (measured).
  A = 0;
  B = 0;
  C = 0;
  D = 0;
  E = 0;
  F = 0;
  G = 0;
  H = 0;
  constructor(outputLen, IV) {
    super(64, outputLen, 8, false);
    this.A = IV[0] | 0;
    this.B = IV[1] | 0;
    this.C = IV[2] | 0;
    this.D = IV[3] | 0;
    this.E = IV[4] | 0;
    this.F = IV[5] | 0;
    this.G = IV[6] | 0;
    this.H = IV[7] | 0;
  }
  get() {
    const { A, B: B2, C, D, E, F, G, H } = this;
    return [A, B2, C, D, E, F, G, H];
  }
  // prettier-ignore
  set(A, B2, C, D, E, F, G, H) {
    this.A = A | 0;
    this.B = B2 | 0;
    this.C = C | 0;
    this.D = D | 0;
    this.E = E | 0;
    this.F = F | 0;
    this.G = G | 0;
    this.H = H | 0;
  }
  _cloneInto(to) {
    (to ||= new this.constructor()).set(...this.get());
    return this._cloneIntoMeta(to);
  }
  process(view, offset) {
    for (let i = 0; i < 16; i++, offset += 4)
      SHA256_W[i] = view.getUint32(offset, false);
    for (let i = 16; i < 64; i++) {
      const W15 = SHA256_W[i - 15];
      const W2 = SHA256_W[i - 2];
      const s0 = rotr(W15, 7) ^ rotr(W15, 18) ^ W15 >>> 3;
      const s1 = rotr(W2, 17) ^ rotr(W2, 19) ^ W2 >>> 10;
      SHA256_W[i] = s1 + SHA256_W[i - 7] + s0 + SHA256_W[i - 16] | 0;
    }
    let { A, B: B2, C, D, E, F, G, H } = this;
    for (let i = 0; i < 64; i++) {
      const sigma1 = rotr(E, 6) ^ rotr(E, 11) ^ rotr(E, 25);
      const T1 = H + sigma1 + Chi(E, F, G) + SHA256_K[i] + SHA256_W[i] | 0;
      const sigma0 = rotr(A, 2) ^ rotr(A, 13) ^ rotr(A, 22);
      const T2 = sigma0 + Maj(A, B2, C) | 0;
      H = G;
      G = F;
      F = E;
      E = D + T1 | 0;
      D = C;
      C = B2;
      B2 = A;
      A = T1 + T2 | 0;
    }
    A = A + this.A | 0;
    B2 = B2 + this.B | 0;
    C = C + this.C | 0;
    D = D + this.D | 0;
    E = E + this.E | 0;
    F = F + this.F | 0;
    G = G + this.G | 0;
    H = H + this.H | 0;
    this.set(A, B2, C, D, E, F, G, H);
  }
  roundClean() {
    clean(SHA256_W);
  }
  destroy() {
    this.destroyed = true;
    this.set(0, 0, 0, 0, 0, 0, 0, 0);
    clean(this.buffer);
  }
};
var _SHA256 = class extends SHA2_32B {
  constructor() {
    super(32, SHA256_IV);
  }
};
var K512 = /* @__PURE__ */ (() => split([
  "0x428a2f98d728ae22",
  "0x7137449123ef65cd",
  "0xb5c0fbcfec4d3b2f",
  "0xe9b5dba58189dbbc",
  "0x3956c25bf348b538",
  "0x59f111f1b605d019",
  "0x923f82a4af194f9b",
  "0xab1c5ed5da6d8118",
  "0xd807aa98a3030242",
  "0x12835b0145706fbe",
  "0x243185be4ee4b28c",
  "0x550c7dc3d5ffb4e2",
  "0x72be5d74f27b896f",
  "0x80deb1fe3b1696b1",
  "0x9bdc06a725c71235",
  "0xc19bf174cf692694",
  "0xe49b69c19ef14ad2",
  "0xefbe4786384f25e3",
  "0x0fc19dc68b8cd5b5",
  "0x240ca1cc77ac9c65",
  "0x2de92c6f592b0275",
  "0x4a7484aa6ea6e483",
  "0x5cb0a9dcbd41fbd4",
  "0x76f988da831153b5",
  "0x983e5152ee66dfab",
  "0xa831c66d2db43210",
  "0xb00327c898fb213f",
  "0xbf597fc7beef0ee4",
  "0xc6e00bf33da88fc2",
  "0xd5a79147930aa725",
  "0x06ca6351e003826f",
  "0x142929670a0e6e70",
  "0x27b70a8546d22ffc",
  "0x2e1b21385c26c926",
  "0x4d2c6dfc5ac42aed",
  "0x53380d139d95b3df",
  "0x650a73548baf63de",
  "0x766a0abb3c77b2a8",
  "0x81c2c92e47edaee6",
  "0x92722c851482353b",
  "0xa2bfe8a14cf10364",
  "0xa81a664bbc423001",
  "0xc24b8b70d0f89791",
  "0xc76c51a30654be30",
  "0xd192e819d6ef5218",
  "0xd69906245565a910",
  "0xf40e35855771202a",
  "0x106aa07032bbd1b8",
  "0x19a4c116b8d2d0c8",
  "0x1e376c085141ab53",
  "0x2748774cdf8eeb99",
  "0x34b0bcb5e19b48a8",
  "0x391c0cb3c5c95a63",
  "0x4ed8aa4ae3418acb",
  "0x5b9cca4f7763e373",
  "0x682e6ff3d6b2b8a3",
  "0x748f82ee5defb2fc",
  "0x78a5636f43172f60",
  "0x84c87814a1f0ab72",
  "0x8cc702081a6439ec",
  "0x90befffa23631e28",
  "0xa4506cebde82bde9",
  "0xbef9a3f7b2c67915",
  "0xc67178f2e372532b",
  "0xca273eceea26619c",
  "0xd186b8c721c0c207",
  "0xeada7dd6cde0eb1e",
  "0xf57d4f7fee6ed178",
  "0x06f067aa72176fba",
  "0x0a637dc5a2c898a6",
  "0x113f9804bef90dae",
  "0x1b710b35131c471b",
  "0x28db77f523047d84",
  "0x32caab7b40c72493",
  "0x3c9ebe0a15c9bebc",
  "0x431d67c49c100d4c",
  "0x4cc5d4becb3e42b6",
  "0x597f299cfc657e2a",
  "0x5fcb6fab3ad6faec",
  "0x6c44198c4a475817"
].map((n) => BigInt(n))))();
var SHA512_Kh = /* @__PURE__ */ (() => K512[0])();
var SHA512_Kl = /* @__PURE__ */ (() => K512[1])();
var SHA512_W_H = /* @__PURE__ */ new Uint32Array(80);
var SHA512_W_L = /* @__PURE__ */ new Uint32Array(80);
var SHA2_64B = class extends HashMD {
  // We cannot use array here since array allows indexing by variable
  // which means optimizer/compiler cannot use registers.
  // h -- high 32 bits, l -- low 32 bits
  // Numeric initializers matter: starting the fields as `undefined` changes
  // V8's field representation and slows hashing down (measured on sha256).
  Ah = 0;
  Al = 0;
  Bh = 0;
  Bl = 0;
  Ch = 0;
  Cl = 0;
  Dh = 0;
  Dl = 0;
  Eh = 0;
  El = 0;
  Fh = 0;
  Fl = 0;
  Gh = 0;
  Gl = 0;
  Hh = 0;
  Hl = 0;
  constructor(outputLen, IV) {
    super(128, outputLen, 16, false);
    this.Ah = IV[0] | 0;
    this.Al = IV[1] | 0;
    this.Bh = IV[2] | 0;
    this.Bl = IV[3] | 0;
    this.Ch = IV[4] | 0;
    this.Cl = IV[5] | 0;
    this.Dh = IV[6] | 0;
    this.Dl = IV[7] | 0;
    this.Eh = IV[8] | 0;
    this.El = IV[9] | 0;
    this.Fh = IV[10] | 0;
    this.Fl = IV[11] | 0;
    this.Gh = IV[12] | 0;
    this.Gl = IV[13] | 0;
    this.Hh = IV[14] | 0;
    this.Hl = IV[15] | 0;
  }
  // prettier-ignore
  get() {
    const { Ah, Al, Bh, Bl, Ch, Cl, Dh, Dl, Eh, El, Fh, Fl, Gh, Gl, Hh, Hl } = this;
    return [Ah, Al, Bh, Bl, Ch, Cl, Dh, Dl, Eh, El, Fh, Fl, Gh, Gl, Hh, Hl];
  }
  // prettier-ignore
  set(Ah, Al, Bh, Bl, Ch, Cl, Dh, Dl, Eh, El, Fh, Fl, Gh, Gl, Hh, Hl) {
    this.Ah = Ah | 0;
    this.Al = Al | 0;
    this.Bh = Bh | 0;
    this.Bl = Bl | 0;
    this.Ch = Ch | 0;
    this.Cl = Cl | 0;
    this.Dh = Dh | 0;
    this.Dl = Dl | 0;
    this.Eh = Eh | 0;
    this.El = El | 0;
    this.Fh = Fh | 0;
    this.Fl = Fl | 0;
    this.Gh = Gh | 0;
    this.Gl = Gl | 0;
    this.Hh = Hh | 0;
    this.Hl = Hl | 0;
  }
  _cloneInto(to) {
    (to ||= new this.constructor()).set(...this.get());
    return this._cloneIntoMeta(to);
  }
  process(view, offset) {
    for (let i = 0; i < 16; i++, offset += 4) {
      SHA512_W_H[i] = view.getUint32(offset);
      SHA512_W_L[i] = view.getUint32(offset += 4);
    }
    for (let i = 16; i < 80; i++) {
      const W15h = SHA512_W_H[i - 15] | 0;
      const W15l = SHA512_W_L[i - 15] | 0;
      const s0h = rotrSH(W15h, W15l, 1) ^ rotrSH(W15h, W15l, 8) ^ shrSH(W15h, W15l, 7);
      const s0l = rotrSL(W15h, W15l, 1) ^ rotrSL(W15h, W15l, 8) ^ shrSL(W15h, W15l, 7);
      const W2h = SHA512_W_H[i - 2] | 0;
      const W2l = SHA512_W_L[i - 2] | 0;
      const s1h = rotrSH(W2h, W2l, 19) ^ rotrBH(W2h, W2l, 61) ^ shrSH(W2h, W2l, 6);
      const s1l = rotrSL(W2h, W2l, 19) ^ rotrBL(W2h, W2l, 61) ^ shrSL(W2h, W2l, 6);
      const SUMl = add4L(s0l, s1l, SHA512_W_L[i - 7], SHA512_W_L[i - 16]);
      const SUMh = add4H(SUMl, s0h, s1h, SHA512_W_H[i - 7], SHA512_W_H[i - 16]);
      SHA512_W_H[i] = SUMh | 0;
      SHA512_W_L[i] = SUMl | 0;
    }
    let { Ah, Al, Bh, Bl, Ch, Cl, Dh, Dl, Eh, El, Fh, Fl, Gh, Gl, Hh, Hl } = this;
    for (let i = 0; i < 80; i++) {
      const sigma1h = rotrSH(Eh, El, 14) ^ rotrSH(Eh, El, 18) ^ rotrBH(Eh, El, 41);
      const sigma1l = rotrSL(Eh, El, 14) ^ rotrSL(Eh, El, 18) ^ rotrBL(Eh, El, 41);
      const CHIh = Eh & Fh ^ ~Eh & Gh;
      const CHIl = El & Fl ^ ~El & Gl;
      const T1ll = add5L(Hl, sigma1l, CHIl, SHA512_Kl[i], SHA512_W_L[i]);
      const T1h = add5H(T1ll, Hh, sigma1h, CHIh, SHA512_Kh[i], SHA512_W_H[i]);
      const T1l = T1ll | 0;
      const sigma0h = rotrSH(Ah, Al, 28) ^ rotrBH(Ah, Al, 34) ^ rotrBH(Ah, Al, 39);
      const sigma0l = rotrSL(Ah, Al, 28) ^ rotrBL(Ah, Al, 34) ^ rotrBL(Ah, Al, 39);
      const MAJh = Ah & Bh ^ Ah & Ch ^ Bh & Ch;
      const MAJl = Al & Bl ^ Al & Cl ^ Bl & Cl;
      Hh = Gh | 0;
      Hl = Gl | 0;
      Gh = Fh | 0;
      Gl = Fl | 0;
      Fh = Eh | 0;
      Fl = El | 0;
      ({ h: Eh, l: El } = add(Dh | 0, Dl | 0, T1h | 0, T1l | 0));
      Dh = Ch | 0;
      Dl = Cl | 0;
      Ch = Bh | 0;
      Cl = Bl | 0;
      Bh = Ah | 0;
      Bl = Al | 0;
      const All = add3L(T1l, sigma0l, MAJl);
      Ah = add3H(All, T1h, sigma0h, MAJh);
      Al = All | 0;
    }
    ({ h: Ah, l: Al } = add(this.Ah | 0, this.Al | 0, Ah | 0, Al | 0));
    ({ h: Bh, l: Bl } = add(this.Bh | 0, this.Bl | 0, Bh | 0, Bl | 0));
    ({ h: Ch, l: Cl } = add(this.Ch | 0, this.Cl | 0, Ch | 0, Cl | 0));
    ({ h: Dh, l: Dl } = add(this.Dh | 0, this.Dl | 0, Dh | 0, Dl | 0));
    ({ h: Eh, l: El } = add(this.Eh | 0, this.El | 0, Eh | 0, El | 0));
    ({ h: Fh, l: Fl } = add(this.Fh | 0, this.Fl | 0, Fh | 0, Fl | 0));
    ({ h: Gh, l: Gl } = add(this.Gh | 0, this.Gl | 0, Gh | 0, Gl | 0));
    ({ h: Hh, l: Hl } = add(this.Hh | 0, this.Hl | 0, Hh | 0, Hl | 0));
    this.set(Ah, Al, Bh, Bl, Ch, Cl, Dh, Dl, Eh, El, Fh, Fl, Gh, Gl, Hh, Hl);
  }
  roundClean() {
    clean(SHA512_W_H, SHA512_W_L);
  }
  destroy() {
    this.destroyed = true;
    clean(this.buffer);
    this.set(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  }
};
var _SHA512 = class extends SHA2_64B {
  constructor() {
    super(64, SHA512_IV);
  }
};
var sha256 = /* @__PURE__ */ createHasher(
  () => new _SHA256(),
  /* @__PURE__ */ oidNist(1)
);
var sha512 = /* @__PURE__ */ createHasher(
  () => new _SHA512(),
  /* @__PURE__ */ oidNist(3)
);

// ../../node_modules/@noble/curves/utils.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
function aarray(item, title, inner = () => {
}) {
  if (!Array.isArray(item))
    throw new TypeError(`"${title}" expected array, got type=${typeof item}`);
  for (let i = 0; i < item.length; i++)
    inner(item[i], `${title}[${i}]`);
  return item;
}
var abytes2 = (value, length, title) => abytes(value, length, title);
var anumber2 = anumber;
function astring(value, title = "") {
  if (typeof value !== "string") {
    const prefix = title && `"${title}" `;
    throw new TypeError(prefix + "expected string, got type=" + typeof value);
  }
  return value;
}
function aobject2(value, title = "object") {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new TypeError(title === "object" ? "expected valid options object" : `"${title}" expected object, got type=${typeof value}`);
  return value;
}
function afunction(value, title) {
  if (typeof value !== "function")
    throw new TypeError(`"${title}" is invalid: expected function, got ${typeof value}`);
  return value;
}
var bytesToHex2 = bytesToHex;
var concatBytes2 = (...arrays) => concatBytes(...arrays);
var hexToBytes2 = (hex) => hexToBytes(hex);
var isBytes2 = isBytes;
var randomBytes2 = (bytesLength) => randomBytes(bytesLength);
var _0n = /* @__PURE__ */ BigInt(0);
var _1n = /* @__PURE__ */ BigInt(1);
var atitle2 = (title) => title ? `"${title}" ` : "";
function abool2(value, title = "") {
  if (typeof value !== "boolean")
    throw new TypeError(atitle2(title) + "expected boolean, got type=" + typeof value);
  return value;
}
function abignumber(n) {
  if (typeof n === "bigint") {
    if (!isPosBig(n))
      throw new RangeError("positive bigint expected, got " + n);
  } else
    anumber2(n);
  return n;
}
function asafenumber(value, title = "") {
  if (typeof value !== "number") {
    const prefix = title && `"${title}" `;
    throw new TypeError(prefix + "expected number, got type=" + typeof value);
  }
  if (!Number.isSafeInteger(value)) {
    const prefix = title && `"${title}" `;
    throw new RangeError(prefix + "expected safe integer, got " + value);
  }
}
function numberToHexUnpadded(num) {
  const hex = abignumber(num).toString(16);
  return hex.length & 1 ? "0" + hex : hex;
}
function hexToNumber(hex) {
  if (typeof hex !== "string")
    throw new TypeError("hex string expected, got " + typeof hex);
  return hex === "" ? _0n : BigInt("0x" + hex);
}
function bytesToNumberBE(bytes) {
  return hexToNumber(bytesToHex(bytes));
}
function bytesToNumberLE(bytes) {
  return hexToNumber(bytesToHex(copyBytes(abytes(bytes)).reverse()));
}
function numberToBytesBE(n, len) {
  anumber(len);
  if (len === 0)
    throw new Error("zero output length is invalid");
  n = abignumber(n);
  const expectedLen = len * 2;
  const hex = n.toString(16);
  if (hex.length > expectedLen)
    throw new RangeError("number is too large");
  return hexToBytes(hex.padStart(expectedLen, "0"));
}
function numberToBytesLE(n, len) {
  return numberToBytesBE(n, len).reverse();
}
function copyBytes(bytes) {
  return Uint8Array.from(abytes2(bytes));
}
function isPosBig(n) {
  return typeof n === "bigint" && _0n <= n;
}
function inRange(n, min, max) {
  return isPosBig(n) && isPosBig(min) && isPosBig(max) && min <= n && n < max;
}
function aInRange(title, n, min, max) {
  if (!inRange(n, min, max))
    throw new RangeError("expected valid " + title + ": " + min + " <= n < " + max + ", got " + n);
}
function bitLen(n) {
  if (n < _0n)
    throw new Error("expected non-negative bigint, got " + n);
  return n === _0n ? 0 : n.toString(2).length;
}
var bitMask = (n) => {
  asafenumber(n, "n");
  return (_1n << BigInt(n)) - _1n;
};
function createHmacDrbg(hashLen, qByteLen, hmacFn) {
  anumber(hashLen, "hashLen");
  anumber(qByteLen, "qByteLen");
  if (typeof hmacFn !== "function")
    throw new TypeError("hmacFn must be a function");
  const u8n = (len) => new Uint8Array(len);
  const NULL = Uint8Array.of();
  const byte0 = Uint8Array.of(0);
  const byte1 = Uint8Array.of(1);
  const _maxDrbgIters = 1e3;
  let v = u8n(hashLen);
  let k = u8n(hashLen);
  let i = 0;
  const reset2 = () => {
    v.fill(1);
    k.fill(0);
    i = 0;
  };
  const h = (...msgs) => hmacFn(k, concatBytes2(v, ...msgs));
  const reseed = (seed = NULL) => {
    k = h(byte0, seed);
    v = h();
    if (seed.length === 0)
      return;
    k = h(byte1, seed);
    v = h();
  };
  const gen = () => {
    if (i++ >= _maxDrbgIters)
      throw new Error("drbg: tried max amount of iterations");
    let len = 0;
    const out = [];
    while (len < qByteLen) {
      v = h();
      const sl = v.slice();
      out.push(sl);
      len += v.length;
    }
    return concatBytes2(...out);
  };
  const genUntil = (seed, pred) => {
    reset2();
    reseed(seed);
    let res = void 0;
    while ((res = pred(gen())) === void 0)
      reseed();
    reset2();
    return res;
  };
  return genUntil;
}
function validateObject(object, fields = {}, optFields = {}, title = "object") {
  aobject2(object, title);
  aobject2(fields, "fields");
  aobject2(optFields, "optFields");
  function checkField(fieldName, expectedType, isOpt) {
    const label = title === "object" ? `param "${String(fieldName)}"` : `"${title}.${String(fieldName)}"`;
    const val = object[fieldName];
    if (!Object.hasOwn(object, fieldName) && (isOpt ? val !== void 0 : expectedType !== "function")) {
      throw new TypeError(`${label} is invalid: expected own property`);
    }
    if (isOpt && val === void 0)
      return;
    const current = typeof val;
    if (current !== expectedType || val === null)
      throw new TypeError(`${label} is invalid: expected ${expectedType}, got ${current}`);
  }
  const iter = (f, isOpt) => Object.entries(f).forEach(([k, v]) => checkField(k, v, isOpt));
  iter(fields, false);
  iter(optFields, true);
}

// ../../node_modules/@noble/curves/abstract/modular.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var _0n2 = /* @__PURE__ */ BigInt(0);
var _1n2 = /* @__PURE__ */ BigInt(1);
var _2n = /* @__PURE__ */ BigInt(2);
var _3n = /* @__PURE__ */ BigInt(3);
var _4n = /* @__PURE__ */ BigInt(4);
var _5n = /* @__PURE__ */ BigInt(5);
var _7n = /* @__PURE__ */ BigInt(7);
var _8n = /* @__PURE__ */ BigInt(8);
var _9n = /* @__PURE__ */ BigInt(9);
var _15n = /* @__PURE__ */ BigInt(15);
var _16n = /* @__PURE__ */ BigInt(16);
var POW_WINDOWED_MIN = /* @__PURE__ */ BigInt("0x10000000000000000");
function mod(a, b) {
  if (b <= _0n2)
    throw new Error("mod: expected positive modulus, got " + b);
  const result = a % b;
  return result >= _0n2 ? result : b + result;
}
function pow(num, power, modulo) {
  if (modulo <= _1n2)
    throw new Error("pow: expected modulus > 1, got " + modulo);
  if (typeof power !== "bigint")
    throw new TypeError("invalid exponent: expected bigint, got " + typeof power);
  if (power < _0n2)
    throw new Error("invalid exponent, negatives unsupported");
  if (power === _0n2)
    return _1n2;
  if (power === _1n2)
    return num;
  let d = num % modulo;
  if (d < _0n2)
    d += modulo;
  if (power < POW_WINDOWED_MIN) {
    let p2 = _1n2;
    while (power > _0n2) {
      if (power & _1n2)
        p2 = p2 * d % modulo;
      d = d * d % modulo;
      power >>= _1n2;
    }
    return p2;
  }
  const digits = [];
  while (power > _0n2) {
    digits.push(Number(power & _15n));
    power >>= _4n;
  }
  const table = new Array(16);
  table[0] = _1n2;
  table[1] = d;
  for (let i = 2; i < 16; i++)
    table[i] = table[i - 1] * d % modulo;
  let p = table[digits[digits.length - 1]];
  for (let w = digits.length - 2; w >= 0; w--) {
    p = p * p % modulo;
    p = p * p % modulo;
    p = p * p % modulo;
    p = p * p % modulo;
    const digit = digits[w];
    if (digit !== 0)
      p = p * table[digit] % modulo;
  }
  return p;
}
function pow2(x, power, modulo) {
  if (modulo <= _1n2)
    throw new Error("pow2: expected modulus > 1, got " + modulo);
  if (power < _0n2)
    throw new Error("pow2: expected non-negative exponent, got " + power);
  let res = x;
  while (power-- > _0n2) {
    res *= res;
    res %= modulo;
  }
  return res;
}
function invert(number, modulo) {
  if (number === _0n2)
    throw new Error("invert: expected non-zero number");
  if (modulo <= _1n2)
    throw new Error("invert: expected modulus > 1, got " + modulo);
  let a = mod(number, modulo);
  let b = modulo;
  let x = _0n2, u = _1n2;
  while (a !== _0n2) {
    const q = b / a;
    const r = b - a * q;
    const m = x - u * q;
    b = a, a = r, x = u, u = m;
  }
  const gcd = b;
  if (gcd !== _1n2)
    throw new Error("invert: does not exist");
  return mod(x, modulo);
}
function invertCt(a, prime) {
  if (prime <= _1n2)
    throw new Error("invertCt: expected prime modulus > 1, got " + prime);
  const an = mod(a, prime);
  if (an === _0n2)
    throw new Error("invertCt: expected non-zero number");
  const inverse = pow(an, prime - _2n, prime);
  if (mod(an * inverse, prime) !== _1n2)
    throw new Error("invertCt: does not exist");
  return inverse;
}
function assertIsSquare(Fp2, root, n) {
  const F = Fp2;
  if (!F.eql(F.sqr(root), n))
    throw new Error("Cannot find square root");
}
function aoddModulus(order, fnName) {
  if ((order & _1n2) === _0n2)
    throw new Error(fnName + ": expected odd modulus, got " + order);
}
function sqrt3mod4(Fp2, n) {
  const F = Fp2;
  const p1div4 = (F.ORDER + _1n2) / _4n;
  const root = F.pow(n, p1div4);
  assertIsSquare(F, root, n);
  return root;
}
function sqrt5mod8(Fp2, n) {
  const F = Fp2;
  const p5div8 = (F.ORDER - _5n) / _8n;
  const n2 = F.mul(n, _2n);
  const v = F.pow(n2, p5div8);
  const nv = F.mul(n, v);
  const i = F.mul(F.mul(nv, _2n), v);
  const root = F.mul(nv, F.sub(i, F.ONE));
  assertIsSquare(F, root, n);
  return root;
}
function sqrt9mod16(P) {
  const Fp_ = Field(P);
  const tn = tonelliShanks(P);
  const c1 = tn(Fp_, Fp_.neg(Fp_.ONE));
  const c2 = tn(Fp_, c1);
  const c3 = tn(Fp_, Fp_.neg(c1));
  const c4 = (P + _7n) / _16n;
  return ((Fp2, n) => {
    const F = Fp2;
    let tv1 = F.pow(n, c4);
    let tv2 = F.mul(tv1, c1);
    const tv3 = F.mul(tv1, c2);
    const tv4 = F.mul(tv1, c3);
    const e1 = F.eql(F.sqr(tv2), n);
    const e2 = F.eql(F.sqr(tv3), n);
    tv1 = F.cmov(tv1, tv2, e1);
    tv2 = F.cmov(tv4, tv3, e2);
    const e3 = F.eql(F.sqr(tv2), n);
    const root = F.cmov(tv1, tv2, e3);
    assertIsSquare(F, root, n);
    return root;
  });
}
function tonelliShanks(P) {
  if (P < _3n)
    throw new Error("sqrt is not defined for small field");
  aoddModulus(P, "tonelliShanks");
  let Q = P - _1n2;
  let S = 0;
  while (Q % _2n === _0n2) {
    Q /= _2n;
    S++;
  }
  let Z = _2n;
  const _Fp = Field(P);
  while (FpLegendre(_Fp, Z) === 1) {
    if (Z++ > 1e3)
      throw new Error("Cannot find square root: probably non-prime P");
  }
  if (S === 1)
    return sqrt3mod4;
  let cc = _Fp.pow(Z, Q);
  const Q1div2 = (Q + _1n2) / _2n;
  return function tonelliSlow(Fp2, n) {
    const F = Fp2;
    if (F.is0(n))
      return n;
    if (FpLegendre(F, n) !== 1)
      throw new Error("Cannot find square root");
    let M = S;
    let c = F.mul(F.ONE, cc);
    let t = F.pow(n, Q);
    let R = F.pow(n, Q1div2);
    while (!F.eql(t, F.ONE)) {
      if (F.is0(t))
        throw new Error("Cannot find square root: probably non-prime P");
      let i = 1;
      let t_tmp = F.sqr(t);
      while (!F.eql(t_tmp, F.ONE)) {
        i++;
        t_tmp = F.sqr(t_tmp);
        if (i === M)
          throw new Error("Cannot find square root");
      }
      const exponent = _1n2 << BigInt(M - i - 1);
      const b = F.pow(c, exponent);
      M = i;
      c = F.sqr(b);
      t = F.mul(t, c);
      R = F.mul(R, b);
    }
    return R;
  };
}
function FpSqrt(P) {
  aoddModulus(P, "Fp.sqrt");
  if (P % _4n === _3n)
    return sqrt3mod4;
  if (P % _8n === _5n)
    return sqrt5mod8;
  if (P % _16n === _9n)
    return sqrt9mod16(P);
  return tonelliShanks(P);
}
var isNegativeLE = (num, modulo) => (mod(num, modulo) & _1n2) === _1n2;
var FIELD_FIELDS = [
  "create",
  "isValid",
  "is0",
  "neg",
  "inv",
  "sqrt",
  "sqr",
  "eql",
  "add",
  "sub",
  "mul",
  "pow",
  "div",
  "addN",
  "subN",
  "mulN",
  "sqrN"
];
function validateField(field2) {
  aobject2(field2, "field");
  if (typeof field2.ORDER !== "bigint")
    throw new TypeError('param "ORDER" is invalid: expected bigint, got ' + typeof field2.ORDER);
  asafenumber(field2.BYTES, "BYTES");
  asafenumber(field2.BITS, "BITS");
  for (const name of FIELD_FIELDS)
    afunction(field2[name], "field." + name);
  if (field2.BYTES < 1 || field2.BITS < 1)
    throw new Error("invalid field: expected BYTES/BITS > 0");
  if (field2.ORDER <= _1n2)
    throw new Error("invalid field: expected ORDER > 1, got " + field2.ORDER);
  return field2;
}
function FpInvertBatch(Fp2, nums, passZero = false) {
  validateField(Fp2);
  aarray(nums, "nums");
  abool2(passZero, "passZero");
  const F = Fp2;
  const inverted = new Array(nums.length).fill(passZero ? F.ZERO : void 0);
  const multipliedAcc = nums.reduce((acc, num, i) => {
    if (F.is0(num))
      return acc;
    inverted[i] = acc;
    return F.mul(acc, num);
  }, F.ONE);
  const invertedAcc = F.inv(multipliedAcc);
  nums.reduceRight((acc, num, i) => {
    if (F.is0(num))
      return acc;
    inverted[i] = F.mul(acc, inverted[i]);
    return F.mul(acc, num);
  }, invertedAcc);
  return inverted;
}
function FpLegendre(Fp2, n) {
  validateField(Fp2);
  const F = Fp2;
  aoddModulus(F.ORDER, "FpLegendre");
  const p1mod2 = (F.ORDER - _1n2) / _2n;
  const powered = F.pow(n, p1mod2);
  const yes = F.eql(powered, F.ONE);
  const zero = F.eql(powered, F.ZERO);
  const no = F.eql(powered, F.neg(F.ONE));
  if (!yes && !zero && !no)
    throw new Error("invalid Legendre symbol result");
  return yes ? 1 : zero ? 0 : -1;
}
function nLength(n, nBitLength) {
  if (nBitLength !== void 0)
    anumber2(nBitLength);
  if (n <= _0n2)
    throw new Error("invalid n length: expected positive n, got " + n);
  if (nBitLength !== void 0 && nBitLength < 1)
    throw new Error("invalid n length: expected positive bit length, got " + nBitLength);
  const bits = bitLen(n);
  if (nBitLength !== void 0 && nBitLength < bits)
    throw new Error(`invalid n length: expected nBitLength (${nBitLength}) >= bitLen(n) (${bits})`);
  const _nBitLength = nBitLength !== void 0 ? nBitLength : bits;
  const nByteLength = Math.ceil(_nBitLength / 8);
  return { nBitLength: _nBitLength, nByteLength };
}
var FIELD_SQRT = /* @__PURE__ */ new WeakMap();
var _Field = class {
  ORDER;
  BITS;
  BYTES;
  isLE;
  ZERO = _0n2;
  ONE = _1n2;
  _lengths;
  _mod;
  constructor(ORDER, opts = {}) {
    if (ORDER <= _1n2)
      throw new Error("invalid field: expected ORDER > 1, got " + ORDER);
    let _nbitLength = void 0;
    this.isLE = false;
    if (opts != null && typeof opts === "object") {
      if (typeof opts.BITS === "number")
        _nbitLength = opts.BITS;
      if (typeof opts.sqrt === "function")
        Object.defineProperty(this, "sqrt", { value: opts.sqrt, enumerable: true });
      if (typeof opts.isLE === "boolean")
        this.isLE = opts.isLE;
      if (opts.allowedLengths)
        this._lengths = Object.freeze(opts.allowedLengths.slice());
      if (typeof opts.modFromBytes === "boolean")
        this._mod = opts.modFromBytes;
    }
    const { nBitLength, nByteLength } = nLength(ORDER, _nbitLength);
    if (nByteLength > 2048)
      throw new Error("invalid field: expected ORDER of <= 2048 bytes");
    this.ORDER = ORDER;
    this.BITS = nBitLength;
    this.BYTES = nByteLength;
    Object.freeze(this);
  }
  create(num) {
    return mod(num, this.ORDER);
  }
  isValid(num) {
    if (typeof num !== "bigint")
      throw new TypeError("invalid field element: expected bigint, got " + typeof num);
    return _0n2 <= num && num < this.ORDER;
  }
  is0(num) {
    return num === _0n2;
  }
  // is valid and invertible
  isValidNot0(num) {
    return !this.is0(num) && this.isValid(num);
  }
  isOdd(num) {
    return (num & _1n2) === _1n2;
  }
  neg(num) {
    return mod(-num, this.ORDER);
  }
  eql(lhs, rhs) {
    return lhs === rhs;
  }
  sqr(num) {
    return mod(num * num, this.ORDER);
  }
  add(lhs, rhs) {
    return mod(lhs + rhs, this.ORDER);
  }
  sub(lhs, rhs) {
    return mod(lhs - rhs, this.ORDER);
  }
  mul(lhs, rhs) {
    return mod(lhs * rhs, this.ORDER);
  }
  pow(num, power) {
    return pow(num, power, this.ORDER);
  }
  div(lhs, rhs) {
    return mod(lhs * invert(rhs, this.ORDER), this.ORDER);
  }
  // Same as above, but doesn't normalize
  sqrN(num) {
    return num * num;
  }
  addN(lhs, rhs) {
    return lhs + rhs;
  }
  subN(lhs, rhs) {
    return lhs - rhs;
  }
  mulN(lhs, rhs) {
    return lhs * rhs;
  }
  inv(num) {
    return invert(num, this.ORDER);
  }
  sqrt(num) {
    let sqrt = FIELD_SQRT.get(this);
    if (!sqrt)
      FIELD_SQRT.set(this, sqrt = FpSqrt(this.ORDER));
    return sqrt(this, num);
  }
  toBytes(num) {
    return this.isLE ? numberToBytesLE(num, this.BYTES) : numberToBytesBE(num, this.BYTES);
  }
  fromBytes(bytes, skipValidation = false) {
    abytes2(bytes);
    const { _lengths: allowedLengths, BYTES, isLE: isLE2, ORDER, _mod: modFromBytes } = this;
    if (allowedLengths) {
      if (bytes.length < 1 || !allowedLengths.includes(bytes.length) || bytes.length > BYTES) {
        throw new Error("Field.fromBytes: expected " + allowedLengths + " bytes, got " + bytes.length);
      }
      const padded = new Uint8Array(BYTES);
      padded.set(bytes, isLE2 ? 0 : padded.length - bytes.length);
      bytes = padded;
    }
    if (bytes.length !== BYTES)
      throw new Error("Field.fromBytes: expected " + BYTES + " bytes, got " + bytes.length);
    let scalar = isLE2 ? bytesToNumberLE(bytes) : bytesToNumberBE(bytes);
    if (modFromBytes)
      scalar = mod(scalar, ORDER);
    if (!skipValidation) {
      if (!this.isValid(scalar))
        throw new Error("invalid field element: outside of range 0..ORDER");
    }
    return scalar;
  }
  // TODO: we don't need it here, move out to separate fn
  invertBatch(lst) {
    return FpInvertBatch(this, lst, true);
  }
  // We can't move this out because Fp6, Fp12 implement it
  // and it's unclear what to return in there.
  cmov(a, b, condition) {
    abool2(condition, "condition");
    return condition ? b : a;
  }
};
function Field(ORDER, opts = {}) {
  Object.freeze(_Field.prototype);
  return new _Field(ORDER, opts);
}
function getFieldBytesLength(fieldOrder) {
  if (typeof fieldOrder !== "bigint")
    throw new Error("field order must be bigint");
  if (fieldOrder <= _1n2)
    throw new Error("field order must be greater than 1");
  const bitLength = bitLen(fieldOrder - _1n2);
  return Math.ceil(bitLength / 8);
}
function getMinHashLength(fieldOrder) {
  const length = getFieldBytesLength(fieldOrder);
  return length + Math.ceil(length / 2);
}
function mapHashToField(key, fieldOrder, isLE2 = false) {
  abytes2(key);
  const len = key.length;
  const fieldLen = getFieldBytesLength(fieldOrder);
  const minLen = Math.max(getMinHashLength(fieldOrder), 16);
  if (len < minLen || len > 1024)
    throw new Error("expected " + minLen + "-1024 bytes of input, got " + len);
  const num = isLE2 ? bytesToNumberLE(key) : bytesToNumberBE(key);
  const reduced = mod(num, fieldOrder - _1n2) + _1n2;
  return isLE2 ? numberToBytesLE(reduced, fieldLen) : numberToBytesBE(reduced, fieldLen);
}

// ../../node_modules/@noble/curves/abstract/curve.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var _0n3 = /* @__PURE__ */ BigInt(0);
var _1n3 = /* @__PURE__ */ BigInt(1);
var _4n2 = /* @__PURE__ */ BigInt(4);
var BLIND_BYTES = 16;
var BLIND_BITS = 128;
var FW_WINDOW = 5;
var TABLE_BYTES_MAX = /* @__PURE__ */ (() => 2 ** 31)();
function validatePointCons(Point2) {
  const pc = Point2;
  if (typeof pc !== "function")
    throw new TypeError('"Point" expected constructor, got type=' + typeof Point2);
  afunction(pc.fromAffine, "Point.fromAffine");
  afunction(pc.fromBytes, "Point.fromBytes");
  afunction(pc.fromHex, "Point.fromHex");
  aobject2(pc.BASE, "Point.BASE");
  aobject2(pc.ZERO, "Point.ZERO");
  validateField(pc.Fp);
  validateField(pc.Fn);
}
function normalizeZ(c, points) {
  validatePointCons(c);
  validateMSMPoints(points, c);
  const invertedZs = FpInvertBatch(c.Fp, points.map((p) => p.Z));
  return points.map((p, i) => c.fromAffine(p.toAffine(invertedZs[i])));
}
function validateW(W, bits, min = 1) {
  if (!Number.isSafeInteger(W) || W < min || W > bits)
    throw new Error("invalid window size, expected [" + min + ".." + bits + "], got W=" + W);
}
function validateTableBytes(numPoints, fpBytes) {
  const bytes = numPoints * (4 * fpBytes + 128);
  if (bytes > TABLE_BYTES_MAX)
    throw new Error("invalid window size: table would need ~" + Math.ceil(bytes / 2 ** 20) + " MiB, max " + TABLE_BYTES_MAX / 2 ** 20 + " MiB");
}
function probeRandomBytes(randomBytes3, length) {
  if (randomBytes3 === void 0)
    return void 0;
  afunction(randomBytes3, "randomBytes");
  try {
    const probe = randomBytes3(length);
    if (!isBytes2(probe) || probe.length !== length)
      return void 0;
  } catch {
    return void 0;
  }
  return randomBytes3;
}
function validateMSMPoints(points, c) {
  aarray(points, "points");
  points.forEach((p, i) => {
    if (!(p instanceof c))
      throw new Error("invalid point at index " + i);
  });
}
function validateMSMScalars(scalars, field2, maxScalar) {
  if (!Array.isArray(scalars))
    throw new Error("array of scalars expected");
  scalars.forEach((s, i) => {
    const ok = maxScalar === void 0 ? field2.isValid(s) : isPosBig(s) && s < maxScalar;
    if (!ok)
      throw new Error("invalid scalar at index " + i);
  });
}
var pointWindowSizes = /* @__PURE__ */ new WeakMap();
function getWindowSize(P) {
  return pointWindowSizes.get(P) || 1;
}
function oddMultiples(p, size) {
  const dbl = p.double();
  const t = [p];
  for (let j = 1; j < size; j++)
    t.push(t[j - 1].add(dbl));
  return t;
}
function wnafDigits(n, W) {
  const size = 2 ** W;
  const half = size / 2;
  const mask = BigInt(size - 1);
  const d = [];
  while (n > _0n3) {
    let w = 0;
    if (n & _1n3) {
      w = Number(n & mask);
      if (w >= half)
        w -= size;
      n -= BigInt(w);
    }
    d.push(w);
    n >>= _1n3;
  }
  return d;
}
function signedWindowDigits(n, W, windows) {
  const size = 2 ** W;
  const half = size / 2;
  const mask = BigInt(size - 1);
  const shiftBy = BigInt(W);
  const d = [];
  for (let w = 0; w < windows; w++) {
    let v = Number(n & mask);
    n >>= shiftBy;
    if (v > half) {
      v -= size;
      n += _1n3;
    }
    d.push(v);
  }
  if (n !== _0n3)
    throw new Error("invalid wnaf");
  return d;
}
function wnafWalk(zero, tables, digits) {
  let max = 0;
  for (const d of digits)
    max = Math.max(max, d.length);
  let acc = zero;
  for (let bit = max - 1; bit >= 0; bit--) {
    if (bit !== max - 1)
      acc = acc.double();
    for (let i = 0; i < digits.length; i++) {
      const w = digits[i][bit];
      if (w) {
        const item = tables[i][Math.abs(w) - 1 >> 1];
        acc = acc.add(w < 0 ? item.negate() : item);
      }
    }
  }
  return acc;
}
var ScalarMultiplier = class {
  Point;
  BASE;
  ZERO;
  randomBytes;
  wnafPrecomputes = /* @__PURE__ */ new WeakMap();
  baseCanBeBlinded;
  bits;
  // Parametrized with a given Point class (not individual point)
  constructor(Point2, randomBytes3) {
    validatePointCons(Point2);
    this.randomBytes = probeRandomBytes(randomBytes3, BLIND_BYTES);
    this.Point = Point2;
    this.BASE = Point2.BASE;
    this.ZERO = Point2.ZERO;
    this.bits = Point2.Fn.BITS;
  }
  /**
   * Creates a signed fixed-window wNAF precomputation table: for every window w, the
   * multiples `[1..2^(W−1)]⋅2^(w⋅W)⋅P`, flattened. All doublings are baked into the table,
   * so cached multiplication is additions-only. `windows = ceil(bits/W) + 1`: the extra
   * window absorbs the final carry of signed-digit recoding.
   * For a 256-bit curve and W=6, the table is 44⋅32 = 1408 points.
   * @param point - Point instance
   * @param W - window size
   * @param bits - scalar bitlength the table must cover
   */
  buildWnafTable(point, W, bits) {
    const windows = Math.ceil(bits / W) + 1;
    const half = 2 ** (W - 1);
    const comp = [];
    let base = point;
    for (let w = 0; w < windows; w++) {
      let acc = base;
      for (let i = 0; i < half; i++) {
        comp.push(acc);
        acc = acc.add(base);
      }
      base = comp[comp.length - 1].double();
    }
    return { W, bits, windows, comp };
  }
  /**
   * Implements ec multiplication using precomputed signed fixed-window wNAF tables.
   * Constant-time: fixed window count with one table addition per window — zero digits feed
   * the fake accumulator — and no doublings; the lookup scans the whole window slice.
   * Scalar bounds are validated by the public entry points ({@link ScalarMultiplier.mulCT},
   * {@link ScalarMultiplier.mulCTBlinded}, {@link ScalarMultiplier.mulUnsafe});
   * signedWindowDigits throws if `n` exceeds the table.
   * @returns real and fake (for const-time) points
   */
  wnafCachedCT(precomputes, n) {
    const { W, windows, comp } = precomputes;
    const half = 2 ** (W - 1);
    const digits = signedWindowDigits(n, W, windows);
    let p = this.ZERO;
    let f = this.BASE;
    for (let w = 0; w < windows; w++) {
      const digit = digits[w];
      const start2 = w * half;
      const idx = Math.abs(digit) - 1;
      let sel = comp[start2];
      for (let i = 1; i < half; i++)
        sel = i === idx ? comp[start2 + i] : sel;
      const neg = sel.negate();
      if (digit === 0)
        f = f.add(comp[start2]);
      else
        p = p.add(digit < 0 ? neg : sel);
    }
    return { p, f };
  }
  // Cache key is point identity plus (W, bits); at most two entries exist per point (public-width
  // `Fn.BITS` and blinded `Fn.BITS + BLIND_BITS`). Callers must not reuse the same point with
  // incompatible `transform(...)` layouts and expect a separate cache entry.
  getWnafPrecomputes(W, point, bits, transform) {
    let entries = this.wnafPrecomputes.get(point);
    let comp = entries?.find((entry) => entry.W === W && entry.bits === bits);
    if (!comp) {
      comp = this.buildWnafTable(point, W, bits);
      if (typeof transform === "function")
        comp = { ...comp, comp: transform(comp.comp) };
      if (!entries) {
        entries = [];
        this.wnafPrecomputes.set(point, entries);
      }
      entries.push(comp);
    }
    return comp;
  }
  assertPoint(point) {
    if (!(point instanceof this.Point))
      throw new TypeError('"point" expected Point instance, got type=' + typeof point);
  }
  // Shared prologue of the constant-time entry points. Rejects scalar 0: in key/signature-style
  // callers a zero scalar means broken upstream plumbing, and concrete Points already reject it.
  // Uses inRange instead of Fn.isValidNot0: validateField() only certifies the arithmetic subset.
  validateMulInput(point, scalar) {
    this.assertPoint(point);
    if (!inRange(scalar, _1n3, this.Point.Fn.ORDER))
      throw new Error("invalid scalar");
  }
  // Constant-time dispatch shared by mulCT / mulCTBlinded. Un-precomputed points (W===1, e.g.
  // ECDH peer keys) skip building a throwaway cached table in favor of a small fixed-window
  // multiply. `n` must be < 2^bits.
  runCT(point, n, bits, transform) {
    const W = getWindowSize(point);
    if (W === 1)
      return this.fixedWindowCT(point, n, bits);
    return this.wnafCachedCT(this.getWnafPrecomputes(W, point, bits, transform), n);
  }
  mulCT(point, scalar, transform) {
    this.validateMulInput(point, scalar);
    return this.runCT(point, scalar, this.bits, transform);
  }
  mulCTBlinded(point, scalar, transform) {
    this.validateMulInput(point, scalar);
    if (this.randomBytes === void 0)
      throw new Error("randomBytes is required for scalar blinding");
    const bits = this.Point.Fn.BITS + BLIND_BITS;
    const blind = this.randomBytes(BLIND_BYTES);
    if (!isBytes2(blind) || blind.length !== BLIND_BYTES)
      throw new Error("randomBytes returned invalid byte array");
    blind[0] = blind[0] & 63 | 128;
    const n = scalar + bytesToNumberBE(blind) * this.Point.Fn.ORDER;
    return this.runCT(point, n, bits, transform);
  }
  /**
   * Constant-time multiplication `n*point` for an un-precomputed point, via a small fixed window.
   * A cached wNAF table only pays off when reused; a flat 2^FW_WINDOW table (`size-1` adds) is
   * far cheaper to build for a single use. The point-operation sequence is independent of `n`:
   * build the table, then per window exactly FW_WINDOW doublings, a data-oblivious scan over
   * every table entry, and one addition (adds the identity when the window digit is 0 — never
   * skipped).
   *
   * `n` must be `< 2^bits`. Assumes complete addition (adding the identity costs the same as any
   * add), which holds for the Weierstrass/Edwards point types used here. The table is left in
   * projective form (no normalizeZ): normalizing this small a table costs more than the
   * mixed-add savings it would buy for a single multiply.
   * @returns real point `p`; `f` duplicates it only to match {@link wnafCachedCT}'s return shape
   * (this path needs no fake accumulator — its op-count is already scalar-independent).
   */
  fixedWindowCT(point, n, bits) {
    const W = FW_WINDOW;
    const size = 1 << W;
    const mask = bitMask(W);
    const table = new Array(size);
    table[0] = this.ZERO;
    for (let i = 1; i < size; i++)
      table[i] = table[i - 1].add(point);
    const windows = Math.ceil(bits / W);
    let acc = this.ZERO;
    for (let window2 = windows - 1; window2 >= 0; window2--) {
      if (window2 !== windows - 1)
        for (let d = 0; d < W; d++)
          acc = acc.double();
      const digit = Number(n >> BigInt(window2 * W) & mask);
      let sel = table[0];
      for (let i = 1; i < size; i++)
        sel = i === digit ? table[i] : sel;
      acc = acc.add(sel);
    }
    return { p: acc, f: acc };
  }
  shouldBlind(point, cofactor) {
    if (this.randomBytes === void 0)
      return false;
    if (cofactor === _1n3)
      return true;
    if (point !== this.BASE)
      return false;
    if (this.baseCanBeBlinded === void 0)
      this.baseCanBeBlinded = this.mulUnsafe(this.BASE, this.Point.Fn.ORDER).is0();
    return this.baseCanBeBlinded;
  }
  mulSecret(point, scalar, cofactor, transform) {
    return this.shouldBlind(point, cofactor) ? this.mulCTBlinded(point, scalar, transform) : this.mulCT(point, scalar, transform);
  }
  mulUnsafe(point, scalar, transform) {
    this.assertPoint(point);
    if (!isPosBig(scalar))
      throw new Error("invalid scalar");
    const W = getWindowSize(point);
    if (W === 1 || scalar >= this.Point.Fn.ORDER)
      return mulAddUnsafe(this.Point, [point], [scalar], true);
    const precomputes = this.getWnafPrecomputes(W, point, this.bits, transform);
    return this.wnafCachedCT(precomputes, scalar).p;
  }
  // Remembers the window size used for precomputed wNAF multiplication of the given point
  // and drops any previously built tables. Usually only the base point is precomputed.
  // W=1 resets the point to the un-precomputed (table-less) paths.
  // W is additionally capped so tables stay under ~2 GiB ({@link TABLE_BYTES_MAX}).
  setWindowSize(point, W) {
    this.assertPoint(point);
    validateW(W, this.bits);
    const windows = Math.ceil((this.bits + BLIND_BITS) / W) + 1;
    validateTableBytes(windows * 2 ** (W - 1), this.Point.Fp.BYTES);
    pointWindowSizes.set(point, W);
    this.wnafPrecomputes.delete(point);
  }
  // True when a window size is set: tables themselves are built lazily on first multiply.
  hasWindowSize(point) {
    return getWindowSize(point) !== 1;
  }
};
function mulAddUnsafe(c, points, scalars, allowOversized = false) {
  validatePointCons(c);
  validateMSMPoints(points, c);
  abool2(allowOversized, "allowOversized");
  validateMSMScalars(scalars, c.Fn, allowOversized ? c.Fn.ORDER ** _4n2 : void 0);
  if (points.length !== scalars.length)
    throw new Error("arrays of points and scalars must have equal length");
  const tables = points.map((p) => oddMultiples(p, 4));
  const digits = scalars.map((n) => wnafDigits(n, 4));
  return wnafWalk(c.ZERO, tables, digits);
}
function createField(order, field2, isLE2) {
  if (field2) {
    if (field2.ORDER !== order)
      throw new Error("Field.ORDER must match order: Fp == p, Fn == n");
    validateField(field2);
    return field2;
  } else {
    return Field(order, { isLE: isLE2 });
  }
}
function createCurveFields(type, CURVE, curveOpts = {}, FpFnLE) {
  if (type !== "weierstrass" && type !== "edwards")
    throw new Error('expected curve type "weierstrass" or "edwards"');
  if (FpFnLE === void 0)
    FpFnLE = type === "edwards";
  if (!CURVE || typeof CURVE !== "object")
    throw new Error(`expected valid ${type} CURVE object`);
  validateObject(curveOpts);
  for (const p of ["p", "n", "h"]) {
    const val = CURVE[p];
    if (!(isPosBig(val) && val !== _0n3))
      throw new Error(`CURVE.${p} must be positive bigint`);
  }
  const Fp2 = createField(CURVE.p, curveOpts.Fp, FpFnLE);
  const Fn2 = createField(CURVE.n, curveOpts.Fn, FpFnLE);
  const _b = type === "weierstrass" ? "b" : "d";
  const params = ["Gx", "Gy", "a", _b];
  for (const p of params) {
    if (!Fp2.isValid(CURVE[p]))
      throw new Error(`CURVE.${p} must be valid field element of CURVE.Fp`);
  }
  CURVE = Object.freeze(Object.assign({}, CURVE));
  return { CURVE, Fp: Fp2, Fn: Fn2 };
}
function createKeygen(randomSecretKey, getPublicKey) {
  return function keygen(seed) {
    const secretKey = randomSecretKey(seed);
    return { secretKey, publicKey: getPublicKey(secretKey) };
  };
}

// ../../node_modules/@noble/hashes/hmac.js
var _HMAC = class {
  oHash;
  iHash;
  blockLen;
  outputLen;
  canXOF = false;
  finished = false;
  destroyed = false;
  constructor(hash, key) {
    ahash(hash);
    abytes(key, void 0, "key");
    this.iHash = hash.create();
    if (typeof this.iHash.update !== "function")
      throw new Error("expected Hash instance");
    this.blockLen = this.iHash.blockLen;
    this.outputLen = this.iHash.outputLen;
    const blockLen = this.blockLen;
    const pad = new Uint8Array(blockLen);
    pad.set(key.length > blockLen ? hash.create().update(key).digest() : key);
    for (let i = 0; i < pad.length; i++)
      pad[i] ^= 54;
    this.iHash.update(pad);
    this.oHash = hash.create();
    for (let i = 0; i < pad.length; i++)
      pad[i] ^= 54 ^ 92;
    this.oHash.update(pad);
    clean(pad);
  }
  update(buf) {
    aexists(this);
    this.iHash.update(buf);
    return this;
  }
  digestInto(out) {
    aexists(this);
    aoutput(out, this);
    this.finished = true;
    const buf = out.subarray(0, this.outputLen);
    this.iHash.digestInto(buf);
    this.oHash.update(buf);
    this.oHash.digestInto(buf);
    this.destroy();
  }
  digest() {
    const out = new Uint8Array(this.oHash.outputLen);
    this.digestInto(out);
    return out;
  }
  _cloneInto(to) {
    to ||= Object.create(Object.getPrototypeOf(this), {});
    const { oHash, iHash, finished, destroyed, blockLen, outputLen, canXOF } = this;
    to = to;
    to.finished = finished;
    to.destroyed = destroyed;
    to.blockLen = blockLen;
    to.outputLen = outputLen;
    to.canXOF = canXOF;
    to.oHash = oHash._cloneInto(to.oHash);
    to.iHash = iHash._cloneInto(to.iHash);
    return to;
  }
  clone() {
    return this._cloneInto();
  }
  destroy() {
    this.destroyed = true;
    this.oHash.destroy();
    this.iHash.destroy();
  }
};
var hmac = /* @__PURE__ */ (() => {
  const hmac_ = ((hash, key, message) => new _HMAC(hash, key).update(message).digest());
  hmac_.create = (hash, key) => new _HMAC(hash, key);
  return hmac_;
})();

// ../../node_modules/@noble/curves/abstract/der.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var _0n4 = /* @__PURE__ */ BigInt(0);
var DERErr = class extends Error {
  constructor(m = "") {
    super(m);
  }
};
var _DER = {
  // asn.1 DER encoding utils
  Err: DERErr,
  // Basic building block is TLV (Tag-Length-Value)
  _tlv: {
    encode: (tag, data) => {
      const { Err: E } = _DER;
      asafenumber(tag, "tag");
      if (tag < 0 || tag > 255)
        throw new E("tlv.encode: wrong tag");
      astring(data, "data");
      if (data.length & 1)
        throw new E("tlv.encode: unpadded data");
      const dataLen = data.length / 2;
      const len = numberToHexUnpadded(dataLen);
      if (len.length / 2 & 128)
        throw new E("tlv.encode: long form length too big");
      const lenLen = dataLen > 127 ? numberToHexUnpadded(len.length / 2 | 128) : "";
      const t = numberToHexUnpadded(tag);
      return t + lenLen + len + data;
    },
    // v - value, l - left bytes (unparsed)
    decode(tag, data) {
      const { Err: E } = _DER;
      data = abytes2(data, void 0, "DER data");
      let pos = 0;
      if (tag < 0 || tag > 255)
        throw new E("tlv.decode: wrong tag");
      if (data.length < 2 || data[pos++] !== tag)
        throw new E("tlv.decode: wrong tlv");
      const first = data[pos++];
      const isLong = !!(first & 128);
      let length = 0;
      if (!isLong)
        length = first;
      else {
        const lenLen = first & 127;
        if (!lenLen)
          throw new E("tlv.decode(long): indefinite length not supported");
        if (lenLen > 4)
          throw new E("tlv.decode(long): byte length is too big");
        const lengthBytes = data.subarray(pos, pos + lenLen);
        if (lengthBytes.length !== lenLen)
          throw new E("tlv.decode: length bytes not complete");
        if (lengthBytes[0] === 0)
          throw new E("tlv.decode(long): zero leftmost byte");
        for (const b of lengthBytes)
          length = length << 8 | b;
        pos += lenLen;
        if (length < 128)
          throw new E("tlv.decode(long): not minimal encoding");
      }
      const v = data.subarray(pos, pos + length);
      if (v.length !== length)
        throw new E("tlv.decode: wrong value length");
      return { v, l: data.subarray(pos + length) };
    }
  },
  // https://crypto.stackexchange.com/a/57734 Leftmost bit of first byte is 'negative' flag,
  // since we always use positive integers here. It must always be empty:
  // - add zero byte if exists
  // - if next byte doesn't have a flag, leading zero is not allowed (minimal encoding)
  _int: {
    encode(num) {
      const { Err: E } = _DER;
      abignumber(num);
      if (num < _0n4)
        throw new E("integer: negative integers are not allowed");
      let hex = numberToHexUnpadded(num);
      if (Number.parseInt(hex[0], 16) & 8)
        hex = "00" + hex;
      if (hex.length & 1)
        throw new E("unexpected DER parsing assertion: unpadded hex");
      return hex;
    },
    decode(data) {
      const { Err: E } = _DER;
      if (data.length < 1)
        throw new E("invalid signature integer: empty");
      if (data[0] & 128)
        throw new E("invalid signature integer: negative");
      if (data.length > 1 && data[0] === 0 && !(data[1] & 128))
        throw new E("invalid signature integer: unnecessary leading zero");
      return bytesToNumberBE(data);
    }
  },
  toSig(bytes, maxScalarBytes) {
    const { Err: E, _int: int2, _tlv: tlv } = _DER;
    if (maxScalarBytes !== void 0) {
      asafenumber(maxScalarBytes, "maxScalarBytes");
      if (maxScalarBytes < 1)
        throw new E("invalid signature: maxScalarBytes must be positive");
    }
    const data = abytes2(bytes, void 0, "signature");
    const { v: seqBytes, l: seqLeftBytes } = tlv.decode(48, data);
    if (seqLeftBytes.length)
      throw new E("invalid signature: left bytes after parsing");
    const { v: rBytes, l: rLeftBytes } = tlv.decode(2, seqBytes);
    const { v: sBytes, l: sLeftBytes } = tlv.decode(2, rLeftBytes);
    if (sLeftBytes.length)
      throw new E("invalid signature: left bytes after parsing");
    if (maxScalarBytes !== void 0 && (rBytes.length > maxScalarBytes || sBytes.length > maxScalarBytes))
      throw new E("invalid signature: integer too large");
    return { r: int2.decode(rBytes), s: int2.decode(sBytes) };
  },
  hexFromSig(sig) {
    const { _tlv: tlv, _int: int2 } = _DER;
    validateObject(sig, { r: "bigint", s: "bigint" }, {}, "sig");
    const rs = tlv.encode(2, int2.encode(sig.r));
    const ss = tlv.encode(2, int2.encode(sig.s));
    const seq = rs + ss;
    return tlv.encode(48, seq);
  }
};
var DER = /* @__PURE__ */ (() => {
  Object.freeze(_DER._tlv);
  Object.freeze(_DER._int);
  return Object.freeze(_DER);
})();

// ../../node_modules/@noble/curves/abstract/weierstrass.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var divNearest = (num, den) => (num + (num >= 0 ? den : -den) / _2n2) / den;
function _splitEndoScalar(k, basis, n) {
  aInRange("scalar", k, _0n5, n);
  const [[a1, b1], [a2, b2]] = basis;
  const c1 = divNearest(b2 * k, n);
  const c2 = divNearest(-b1 * k, n);
  let k1 = k - c1 * a1 - c2 * a2;
  let k2 = -c1 * b1 - c2 * b2;
  const k1neg = k1 < _0n5;
  const k2neg = k2 < _0n5;
  if (k1neg)
    k1 = -k1;
  if (k2neg)
    k2 = -k2;
  const MAX_NUM = bitMask(Math.ceil(bitLen(n) / 2)) + _1n4;
  if (k1 < _0n5 || k1 >= MAX_NUM || k2 < _0n5 || k2 >= MAX_NUM) {
    throw new Error("splitScalar (endomorphism): failed for k");
  }
  return { k1neg, k1, k2neg, k2 };
}
function validateSigFormat(format) {
  if (!["compact", "recovered", "der"].includes(format))
    throw new Error('Signature format must be "compact", "recovered", or "der"');
  return format;
}
function validateSigOpts(opts, def) {
  validateObject(opts);
  const optsn = {};
  for (let optName of Object.keys(def)) {
    optsn[optName] = opts[optName] === void 0 ? def[optName] : opts[optName];
  }
  abool2(optsn.lowS, "lowS");
  abool2(optsn.prehash, "prehash");
  if (optsn.format !== void 0)
    validateSigFormat(optsn.format);
  return optsn;
}
var _0n5 = /* @__PURE__ */ BigInt(0);
var _1n4 = /* @__PURE__ */ BigInt(1);
var _2n2 = /* @__PURE__ */ BigInt(2);
var _3n2 = /* @__PURE__ */ BigInt(3);
var _4n3 = /* @__PURE__ */ BigInt(4);
function weierstrass(params, extraOpts = {}) {
  const validated = createCurveFields("weierstrass", params, extraOpts);
  const Fp2 = validated.Fp;
  const Fn2 = validated.Fn;
  let CURVE = validated.CURVE;
  const { h: cofactor, n: CURVE_ORDER } = CURVE;
  validateObject(extraOpts, {}, {
    allowInfinityPoint: "boolean",
    clearCofactor: "function",
    isTorsionFree: "function",
    fromBytes: "function",
    toBytes: "function",
    endo: "object",
    randomBytes: "function"
  });
  const { endo: endoOpts, allowInfinityPoint, clearCofactor, isTorsionFree, fromBytes, toBytes } = extraOpts;
  const randomBytes3 = extraOpts.randomBytes === void 0 ? randomBytes2 : extraOpts.randomBytes;
  if (endoOpts) {
    if (!Fp2.is0(CURVE.a) || typeof endoOpts.beta !== "bigint" || !Array.isArray(endoOpts.basises)) {
      throw new Error('invalid endo: expected "beta": bigint and "basises": array');
    }
  }
  const endo = endoOpts ? {
    beta: endoOpts.beta,
    basises: endoOpts.basises.map((basis) => [...basis])
  } : void 0;
  const lengths = getWLengths(Fp2, Fn2);
  function assertCompressionIsSupported() {
    if (!Fp2.isOdd)
      throw new Error("compression is not supported: Field does not have .isOdd()");
  }
  function pointToBytes(_c, point, isCompressed) {
    if (point.is0()) {
      if (!allowInfinityPoint)
        throw new Error("bad point: ZERO");
      return Uint8Array.of(0);
    }
    const { x, y } = point.toAffine();
    const bx = Fp2.toBytes(x);
    abool2(isCompressed, "isCompressed");
    if (isCompressed) {
      assertCompressionIsSupported();
      const hasEvenY = !Fp2.isOdd(y);
      return concatBytes2(pprefix(hasEvenY), bx);
    } else {
      return concatBytes2(Uint8Array.of(4), bx, Fp2.toBytes(y));
    }
  }
  function pointFromBytes(bytes) {
    abytes2(bytes, void 0, "Point");
    const { publicKey: comp, publicKeyUncompressed: uncomp } = lengths;
    const length = bytes.length;
    const head = bytes[0];
    const tail = bytes.subarray(1);
    if (allowInfinityPoint && length === 1 && head === 0)
      return { x: Fp2.ZERO, y: Fp2.ZERO };
    if (length === comp && (head === 2 || head === 3)) {
      const x = Fp2.fromBytes(tail);
      if (!Fp2.isValid(x))
        throw new Error("bad point: is not on curve, wrong x");
      const y2 = weierstrassEquation(x);
      let y;
      try {
        y = Fp2.sqrt(y2);
      } catch (sqrtError) {
        const err = sqrtError instanceof Error ? ": " + sqrtError.message : "";
        throw new Error("bad point: is not on curve, sqrt error" + err);
      }
      assertCompressionIsSupported();
      const evenY = Fp2.isOdd(y);
      const evenH = (head & 1) === 1;
      if (evenH !== evenY)
        y = Fp2.neg(y);
      return { x, y };
    } else if (length === uncomp && head === 4) {
      const L = Fp2.BYTES;
      const x = Fp2.fromBytes(tail.subarray(0, L));
      const y = Fp2.fromBytes(tail.subarray(L, L * 2));
      if (!isValidXY(x, y))
        throw new Error("bad point: is not on curve");
      return { x, y };
    } else {
      throw new Error(`bad point: got length ${length}, expected compressed=${comp} or uncompressed=${uncomp}`);
    }
  }
  const encodePoint = toBytes === void 0 ? pointToBytes : toBytes;
  const decodePoint = fromBytes === void 0 ? pointFromBytes : fromBytes;
  const b3 = Fp2.mul(CURVE.b, _3n2);
  const mulA = Fp2.is0(CURVE.a) ? (_) => Fp2.ZERO : (x) => Fp2.mul(CURVE.a, x);
  function weierstrassEquation(x) {
    const x2 = Fp2.sqr(x);
    const x3 = Fp2.mul(x2, x);
    return Fp2.add(Fp2.add(x3, Fp2.mul(x, CURVE.a)), CURVE.b);
  }
  function isValidXY(x, y) {
    const left = Fp2.sqr(y);
    const right = weierstrassEquation(x);
    return Fp2.eql(left, right);
  }
  if (!isValidXY(CURVE.Gx, CURVE.Gy))
    throw new Error("bad curve params: generator point");
  const _4a3 = Fp2.mul(Fp2.pow(CURVE.a, _3n2), _4n3);
  const _27b2 = Fp2.mul(Fp2.sqr(CURVE.b), BigInt(27));
  if (Fp2.is0(Fp2.add(_4a3, _27b2)))
    throw new Error("bad curve params: a or b");
  function acoord(title, n, banZero = false) {
    if (!Fp2.isValid(n) || banZero && Fp2.is0(n))
      throw new Error(`bad point coordinate ${title}`);
    return typeof n === "object" && n !== null ? Fp2.create(n) : n;
  }
  function aprjpoint(other) {
    if (!(other instanceof Point2))
      throw new Error("Weierstrass Point expected");
  }
  function splitEndoScalarN(k) {
    if (!endo || !endo.basises)
      throw new Error("no endo");
    return _splitEndoScalar(k, endo.basises, Fn2.ORDER);
  }
  function pushWnafPair(points, scalars, p, k) {
    if (!Fn2.isValid(k))
      throw new RangeError("invalid scalar: out of range");
    if (endo) {
      const { k1neg, k1, k2neg, k2 } = splitEndoScalarN(k);
      const psi = new Point2(Fp2.mul(p.X, endo.beta), p.Y, p.Z);
      points.push(k1neg ? p.negate() : p, k2neg ? psi.negate() : psi);
      scalars.push(k1, k2);
    } else {
      points.push(p);
      scalars.push(k);
    }
  }
  const validityCache = /* @__PURE__ */ new WeakSet();
  class Point2 {
    static BASE = new Point2(CURVE.Gx, CURVE.Gy, Fp2.ONE);
    static ZERO = new Point2(Fp2.ZERO, Fp2.ONE, Fp2.ZERO);
    static Fp = Fp2;
    static Fn = Fn2;
    X;
    Y;
    Z;
    /** Does NOT validate if the point is valid. Use `.assertValidity()`. */
    constructor(X, Y, Z) {
      this.X = acoord("x", X);
      this.Y = acoord("y", Y, true);
      this.Z = acoord("z", Z);
      Object.freeze(this);
    }
    static CURVE() {
      return CURVE;
    }
    /** Does NOT validate if the point is valid. Use `.assertValidity()`. */
    static fromAffine(p) {
      const { x, y } = p || {};
      if (!p || !Fp2.isValid(x) || !Fp2.isValid(y))
        throw new Error("invalid affine point");
      if (p instanceof Point2)
        throw new Error("projective point not allowed");
      if (Fp2.is0(x) && Fp2.is0(y))
        return Point2.ZERO;
      return new Point2(x, y, Fp2.ONE);
    }
    static fromBytes(bytes) {
      const P = Point2.fromAffine(decodePoint(abytes2(bytes, void 0, "point")));
      P.assertValidity();
      return P;
    }
    static fromHex(hex) {
      return Point2.fromBytes(hexToBytes2(hex));
    }
    get x() {
      return this.toAffine().x;
    }
    get y() {
      return this.toAffine().y;
    }
    /**
     * @param isLazy - true will defer table computation until the first multiplication
     */
    precompute(windowSize = 6, isLazy = true) {
      wnaf.setWindowSize(this, windowSize);
      if (!isLazy)
        this.multiply(_3n2);
      return this;
    }
    // TODO: return `this`
    /** A point on curve is valid if it conforms to equation. */
    assertValidity() {
      const p = this;
      if (p.is0()) {
        if (allowInfinityPoint && Fp2.is0(p.X) && Fp2.eql(p.Y, Fp2.ONE) && Fp2.is0(p.Z))
          return;
        throw new Error("bad point: ZERO");
      }
      if (validityCache.has(p))
        return;
      const { x, y } = p.toAffine();
      if (!Fp2.isValid(x) || !Fp2.isValid(y))
        throw new Error("bad point: x or y not field elements");
      if (!isValidXY(x, y))
        throw new Error("bad point: equation left != right");
      if (!p.isTorsionFree())
        throw new Error("bad point: not in prime-order subgroup");
      validityCache.add(p);
    }
    hasEvenY() {
      const { y } = this.toAffine();
      if (!Fp2.isOdd)
        throw new Error("Field doesn't support isOdd");
      return !Fp2.isOdd(y);
    }
    /** Compare one point to another. */
    equals(other) {
      aprjpoint(other);
      const { X: X1, Y: Y1, Z: Z1 } = this;
      const { X: X2, Y: Y2, Z: Z2 } = other;
      const U1 = Fp2.eql(Fp2.mul(X1, Z2), Fp2.mul(X2, Z1));
      const U2 = Fp2.eql(Fp2.mul(Y1, Z2), Fp2.mul(Y2, Z1));
      return U1 && U2;
    }
    /** Flips point to one corresponding to (x, -y) in Affine coordinates. */
    negate() {
      return new Point2(this.X, Fp2.neg(this.Y), this.Z);
    }
    // Renes-Costello-Batina exception-free doubling formula.
    // There is 30% faster Jacobian formula, but it is not complete.
    // https://eprint.iacr.org/2015/1060, algorithm 3
    // Cost: 8M + 3S + 3*a + 2*b3 + 15add.
    double() {
      const { X: X1, Y: Y1, Z: Z1 } = this;
      let X3 = Fp2.ZERO, Y3 = Fp2.ZERO, Z3 = Fp2.ZERO;
      let t0 = Fp2.mul(X1, X1);
      let t1 = Fp2.mul(Y1, Y1);
      let t2 = Fp2.mul(Z1, Z1);
      let t3 = Fp2.mul(X1, Y1);
      t3 = Fp2.add(t3, t3);
      Z3 = Fp2.mul(X1, Z1);
      Z3 = Fp2.add(Z3, Z3);
      X3 = mulA(Z3);
      Y3 = Fp2.mul(b3, t2);
      Y3 = Fp2.add(X3, Y3);
      X3 = Fp2.sub(t1, Y3);
      Y3 = Fp2.add(t1, Y3);
      Y3 = Fp2.mul(X3, Y3);
      X3 = Fp2.mul(t3, X3);
      Z3 = Fp2.mul(b3, Z3);
      t2 = mulA(t2);
      t3 = Fp2.sub(t0, t2);
      t3 = mulA(t3);
      t3 = Fp2.add(t3, Z3);
      Z3 = Fp2.add(t0, t0);
      t0 = Fp2.add(Z3, t0);
      t0 = Fp2.add(t0, t2);
      t0 = Fp2.mul(t0, t3);
      Y3 = Fp2.add(Y3, t0);
      t2 = Fp2.mul(Y1, Z1);
      t2 = Fp2.add(t2, t2);
      t0 = Fp2.mul(t2, t3);
      X3 = Fp2.sub(X3, t0);
      Z3 = Fp2.mul(t2, t1);
      Z3 = Fp2.add(Z3, Z3);
      Z3 = Fp2.add(Z3, Z3);
      return new Point2(X3, Y3, Z3);
    }
    // Renes-Costello-Batina exception-free addition formula.
    // There is 30% faster Jacobian formula, but it is not complete.
    // https://eprint.iacr.org/2015/1060, algorithm 1
    // Cost: 12M + 0S + 3*a + 3*b3 + 23add.
    add(other) {
      aprjpoint(other);
      const { X: X1, Y: Y1, Z: Z1 } = this;
      const { X: X2, Y: Y2, Z: Z2 } = other;
      let X3 = Fp2.ZERO, Y3 = Fp2.ZERO, Z3 = Fp2.ZERO;
      let t0 = Fp2.mul(X1, X2);
      let t1 = Fp2.mul(Y1, Y2);
      let t2 = Fp2.mul(Z1, Z2);
      let t3 = Fp2.add(X1, Y1);
      let t4 = Fp2.add(X2, Y2);
      t3 = Fp2.mul(t3, t4);
      t4 = Fp2.add(t0, t1);
      t3 = Fp2.sub(t3, t4);
      t4 = Fp2.add(X1, Z1);
      let t5 = Fp2.add(X2, Z2);
      t4 = Fp2.mul(t4, t5);
      t5 = Fp2.add(t0, t2);
      t4 = Fp2.sub(t4, t5);
      t5 = Fp2.add(Y1, Z1);
      X3 = Fp2.add(Y2, Z2);
      t5 = Fp2.mul(t5, X3);
      X3 = Fp2.add(t1, t2);
      t5 = Fp2.sub(t5, X3);
      Z3 = mulA(t4);
      X3 = Fp2.mul(b3, t2);
      Z3 = Fp2.add(X3, Z3);
      X3 = Fp2.sub(t1, Z3);
      Z3 = Fp2.add(t1, Z3);
      Y3 = Fp2.mul(X3, Z3);
      t1 = Fp2.add(t0, t0);
      t1 = Fp2.add(t1, t0);
      t2 = mulA(t2);
      t4 = Fp2.mul(b3, t4);
      t1 = Fp2.add(t1, t2);
      t2 = Fp2.sub(t0, t2);
      t2 = mulA(t2);
      t4 = Fp2.add(t4, t2);
      t0 = Fp2.mul(t1, t4);
      Y3 = Fp2.add(Y3, t0);
      t0 = Fp2.mul(t5, t4);
      X3 = Fp2.mul(t3, X3);
      X3 = Fp2.sub(X3, t0);
      t0 = Fp2.mul(t3, t1);
      Z3 = Fp2.mul(t5, Z3);
      Z3 = Fp2.add(Z3, t0);
      return new Point2(X3, Y3, Z3);
    }
    subtract(other) {
      aprjpoint(other);
      return this.add(other.negate());
    }
    is0() {
      return this.equals(Point2.ZERO);
    }
    /**
     * Constant time multiplication.
     * Uses precomputed tables (signed fixed-window wNAF) when available.
     * Uses scalar blinding and avoids endomorphism splitting in the secret-scalar path.
     * @param scalar - by which the point would be multiplied
     * @returns New point
     */
    multiply(scalar) {
      if (!Fn2.isValidNot0(scalar))
        throw new RangeError("invalid scalar: out of range");
      const { p, f } = wnaf.mulSecret(this, scalar, cofactor, normalize2);
      return normalize2([p, f])[0];
    }
    /**
     * Non-constant-time multiplication. Uses width-4 wNAF with GLV endomorphism splitting
     * when available (two half-width scalars sharing one halved doubling chain).
     * It's faster, but should only be used when you don't care about
     * an exposed secret key e.g. sig verification, which works over *public* keys.
     */
    multiplyUnsafe(scalar) {
      const p = this;
      const sc = scalar;
      if (!Fn2.isValid(sc))
        throw new RangeError("invalid scalar: out of range");
      if (sc === _0n5 || p.is0())
        return Point2.ZERO;
      if (sc === _1n4)
        return p;
      if (wnaf.hasWindowSize(this))
        return wnaf.mulUnsafe(p, sc, normalize2);
      const points = [];
      const scalars = [];
      pushWnafPair(points, scalars, p, sc);
      return mulAddUnsafe(Point2, points, scalars);
    }
    /**
     * Non-constant-time double-scalar multiplication `a⋅this + b⋅other` (Strauss–Shamir).
     * Both walks share one doubling chain via {@link mulAddUnsafe}, and GLV endomorphism
     * (when available) halves the chain again by splitting each scalar into two half-width
     * parts. Used by ECDSA verification and public-key recovery for `R = u1⋅G + u2⋅P`.
     * Only for public scalars.
     */
    mulAddUnsafe(a, other, b) {
      aprjpoint(other);
      const points = [];
      const scalars = [];
      pushWnafPair(points, scalars, this, a);
      pushWnafPair(points, scalars, other, b);
      return mulAddUnsafe(Point2, points, scalars);
    }
    /**
     * Converts Projective point to affine (x, y) coordinates.
     * (X, Y, Z) ∋ (x=X/Z, y=Y/Z).
     * @param invertedZ - Z^-1 (inverted zero) - optional, precomputation is useful for invertBatch
     */
    toAffine(invertedZ) {
      const p = this;
      let iz = invertedZ;
      if (iz != null && !Fp2.isValid(iz))
        throw new RangeError('"invertedZ" expected valid field element');
      const { X, Y, Z } = p;
      if (Fp2.eql(Z, Fp2.ONE))
        return { x: X, y: Y };
      const is0 = p.is0();
      if (iz == null)
        iz = is0 ? Fp2.ONE : Fp2.inv(Z);
      const x = Fp2.mul(X, iz);
      const y = Fp2.mul(Y, iz);
      const zz = Fp2.mul(Z, iz);
      if (is0)
        return { x: Fp2.ZERO, y: Fp2.ZERO };
      if (!Fp2.eql(zz, Fp2.ONE))
        throw new Error("invZ was invalid");
      return { x, y };
    }
    /**
     * Checks whether Point is free of torsion elements (is in prime subgroup).
     * Always torsion-free for cofactor=1 curves.
     */
    isTorsionFree() {
      if (cofactor === _1n4)
        return true;
      if (isTorsionFree)
        return isTorsionFree(Point2, this);
      return wnaf.mulUnsafe(this, CURVE_ORDER).is0();
    }
    clearCofactor() {
      if (cofactor === _1n4)
        return this;
      if (clearCofactor)
        return clearCofactor(Point2, this);
      return this.multiplyUnsafe(cofactor);
    }
    isSmallOrder() {
      if (cofactor === _1n4)
        return this.is0();
      return this.clearCofactor().is0();
    }
    toBytes(isCompressed = true) {
      abool2(isCompressed, "isCompressed");
      this.assertValidity();
      return encodePoint(Point2, this, isCompressed);
    }
    toHex(isCompressed = true) {
      return bytesToHex2(this.toBytes(isCompressed));
    }
    toString() {
      return `<Point ${this.is0() ? "ZERO" : this.toHex()}>`;
    }
  }
  const normalize2 = (points) => normalizeZ(Point2, points);
  const wnaf = new ScalarMultiplier(Point2, randomBytes3);
  if (wnaf.bits >= 6)
    Point2.BASE.precompute(6);
  Object.freeze(Point2.prototype);
  Object.freeze(Point2);
  return Point2;
}
function pprefix(hasEvenY) {
  return Uint8Array.of(hasEvenY ? 2 : 3);
}
function getWLengths(Fp2, Fn2) {
  return {
    secretKey: Fn2.BYTES,
    publicKey: 1 + Fp2.BYTES,
    publicKeyUncompressed: 1 + 2 * Fp2.BYTES,
    publicKeyHasPrefix: true,
    // Raw compact `(r || s)` signature width; DER and recovered signatures use
    // different lengths outside this helper.
    signature: 2 * Fn2.BYTES
  };
}
function ecdh(Point2, ecdhOpts = {}) {
  validatePointCons(Point2);
  const { Fn: Fn2 } = Point2;
  const randomBytes_ = ecdhOpts.randomBytes === void 0 ? randomBytes2 : ecdhOpts.randomBytes;
  const lengths = Object.assign(getWLengths(Point2.Fp, Fn2), {
    seed: Math.max(getMinHashLength(Fn2.ORDER), 16)
  });
  function isValidSecretKey(secretKey) {
    try {
      const num = Fn2.fromBytes(secretKey);
      return Fn2.isValidNot0(num);
    } catch (error) {
      return false;
    }
  }
  function isValidPublicKey(publicKey, isCompressed) {
    const { publicKey: comp, publicKeyUncompressed } = lengths;
    try {
      const l = publicKey.length;
      if (isCompressed === true && l !== comp)
        return false;
      if (isCompressed === false && l !== publicKeyUncompressed)
        return false;
      return !Point2.fromBytes(publicKey).is0();
    } catch (error) {
      return false;
    }
  }
  function randomSecretKey(seed) {
    seed = seed === void 0 ? randomBytes_(lengths.seed) : seed;
    return mapHashToField(abytes2(seed, lengths.seed, "seed"), Fn2.ORDER);
  }
  function getPublicKey(secretKey, isCompressed = true) {
    return Point2.BASE.multiply(Fn2.fromBytes(secretKey)).toBytes(isCompressed);
  }
  function isProbPub(item) {
    const { secretKey, publicKey, publicKeyUncompressed } = lengths;
    const allowedLengths = Fn2._lengths;
    if (!isBytes2(item))
      return void 0;
    const l = abytes2(item, void 0, "key").length;
    const isPub = l === publicKey || l === publicKeyUncompressed;
    const isSec = l === secretKey || !!allowedLengths?.includes(l);
    if (isPub && isSec)
      return void 0;
    return isPub;
  }
  function getSharedSecret(secretKeyA, publicKeyB, isCompressed = true) {
    if (isProbPub(secretKeyA) === true)
      throw new Error("first arg must be private key");
    if (isProbPub(publicKeyB) === false)
      throw new Error("second arg must be public key");
    const s = Fn2.fromBytes(secretKeyA);
    const b = Point2.fromBytes(publicKeyB);
    if (b.is0())
      throw new Error("invalid public key: point at infinity");
    return b.multiply(s).toBytes(isCompressed);
  }
  const utils = {
    isValidSecretKey,
    isValidPublicKey,
    randomSecretKey
  };
  const keygen = createKeygen(randomSecretKey, getPublicKey);
  Object.freeze(utils);
  Object.freeze(lengths);
  return Object.freeze({ getPublicKey, getSharedSecret, keygen, Point: Point2, utils, lengths });
}
function ecdsa(Point2, hash, ecdsaOpts = {}) {
  validatePointCons(Point2);
  const hash_ = hash;
  ahash(hash_);
  validateObject(ecdsaOpts, {}, {
    hmac: "function",
    lowS: "boolean",
    randomBytes: "function",
    bits2int: "function",
    bits2int_modN: "function"
  });
  const opts = Object.assign({}, ecdsaOpts);
  const randomBytes3 = opts.randomBytes === void 0 ? randomBytes2 : opts.randomBytes;
  const hmac2 = opts.hmac === void 0 ? (key, msg) => hmac(hash_, key, msg) : opts.hmac;
  const { Fp: Fp2, Fn: Fn2 } = Point2;
  const { ORDER: CURVE_ORDER, BITS: fnBits } = Fn2;
  const blindLength = getMinHashLength(CURVE_ORDER);
  const csprng = probeRandomBytes(randomBytes3, blindLength);
  const { keygen, getPublicKey, getSharedSecret, utils, lengths } = ecdh(Point2, opts);
  const defaultSigOpts = {
    prehash: true,
    lowS: typeof opts.lowS === "boolean" ? opts.lowS : true,
    format: "compact",
    extraEntropy: false
  };
  const hasLargeRecoveryLifts = CURVE_ORDER * _2n2 + _1n4 < Fp2.ORDER;
  function isBiggerThanHalfOrder(number) {
    const HALF = CURVE_ORDER >> _1n4;
    return number > HALF;
  }
  function validateRS(title, num) {
    if (!Fn2.isValidNot0(num))
      throw new Error(`invalid signature ${title}: out of range 1..Point.Fn.ORDER`);
    return num;
  }
  function assertFieldSignIsSupported() {
    if (!Fp2.isOdd)
      throw new Error("Field doesn't support isOdd");
  }
  function getRecoveryBit(x, y, r) {
    assertFieldSignIsSupported();
    return (x === r ? 0 : 2) | Number(Fp2.isOdd(y));
  }
  function assertRecoverableCurve() {
    if (hasLargeRecoveryLifts)
      throw new Error('"recovered" sig type is not supported for cofactor >2 curves');
  }
  function validateSigLength(bytes, format) {
    validateSigFormat(format);
    const size = lengths.signature;
    const sizer = format === "compact" ? size : format === "recovered" ? size + 1 : void 0;
    return abytes2(bytes, sizer);
  }
  class Signature {
    r;
    s;
    recovery;
    constructor(r, s, recovery) {
      this.r = validateRS("r", r);
      this.s = validateRS("s", s);
      if (recovery != null) {
        assertRecoverableCurve();
        if (![0, 1, 2, 3].includes(recovery))
          throw new Error("invalid recovery id");
        this.recovery = recovery;
      }
      Object.freeze(this);
    }
    static fromBytes(bytes, format = defaultSigOpts.format) {
      validateSigLength(bytes, format);
      let recid;
      if (format === "der") {
        if (bytes.length > 2 * Fn2.BYTES + 16)
          throw new DER.Err("invalid signature: DER signature too long");
        const { r: r2, s: s2 } = DER.toSig(abytes2(bytes), Fn2.BYTES + 1);
        return new Signature(r2, s2);
      }
      if (format === "recovered") {
        recid = bytes[0];
        format = "compact";
        bytes = bytes.subarray(1);
      }
      const L = lengths.signature / 2;
      const r = bytes.subarray(0, L);
      const s = bytes.subarray(L, L * 2);
      return new Signature(Fn2.fromBytes(r), Fn2.fromBytes(s), recid);
    }
    static fromHex(hex, format) {
      return this.fromBytes(hexToBytes2(hex), format);
    }
    assertRecovery() {
      const { recovery } = this;
      if (recovery == null)
        throw new Error("invalid recovery id: must be present");
      return recovery;
    }
    addRecoveryBit(recovery) {
      return new Signature(this.r, this.s, recovery);
    }
    // Unlike the top-level helper below, this method expects a digest that has
    // already been hashed to the curve's message representative.
    recoverPublicKey(messageHash) {
      const { r, s } = this;
      const recovery = this.assertRecovery();
      const radj = recovery === 2 || recovery === 3 ? r + CURVE_ORDER : r;
      if (!Fp2.isValid(radj))
        throw new Error("invalid recovery id: sig.r+curve.n != R.x");
      const x = Fp2.toBytes(radj);
      const R = Point2.fromBytes(concatBytes2(pprefix((recovery & 1) === 0), x));
      const ir = Fn2.inv(radj);
      const h = bits2int_modN(abytes2(messageHash, void 0, "msgHash"));
      const u1 = Fn2.create(-h * ir);
      const u2 = Fn2.create(s * ir);
      const Q = Point2.BASE.mulAddUnsafe(u1, R, u2);
      if (Q.is0())
        throw new Error("invalid recovery: point at infinify");
      Q.assertValidity();
      return Q;
    }
    // Signatures should be low-s, to prevent malleability.
    hasHighS() {
      return isBiggerThanHalfOrder(this.s);
    }
    toBytes(format = defaultSigOpts.format) {
      validateSigFormat(format);
      if (format === "der")
        return hexToBytes2(DER.hexFromSig(this));
      const { r, s } = this;
      const rb = Fn2.toBytes(r);
      const sb = Fn2.toBytes(s);
      if (format === "recovered") {
        assertRecoverableCurve();
        return concatBytes2(Uint8Array.of(this.assertRecovery()), rb, sb);
      }
      return concatBytes2(rb, sb);
    }
    toHex(format) {
      return bytesToHex2(this.toBytes(format));
    }
  }
  Object.freeze(Signature.prototype);
  Object.freeze(Signature);
  const bits2int = opts.bits2int === void 0 ? function bits2int_def(bytes) {
    if (bytes.length > 8192)
      throw new Error("input is too large");
    const num = bytesToNumberBE(bytes);
    const delta = bytes.length * 8 - fnBits;
    return delta > 0 ? num >> BigInt(delta) : num;
  } : opts.bits2int;
  const bits2int_modN = opts.bits2int_modN === void 0 ? function bits2int_modN_def(bytes) {
    return Fn2.create(bits2int(bytes));
  } : opts.bits2int_modN;
  const ORDER_MASK = bitMask(fnBits);
  function int2octets(num) {
    aInRange("num < 2^" + fnBits, num, _0n5, ORDER_MASK);
    return Fn2.toBytes(num);
  }
  function validateMsgAndHash(message, prehash) {
    abytes2(message, void 0, "message");
    return prehash ? abytes2(hash_(message), void 0, "prehashed message") : message;
  }
  function prepSig(message, secretKey, opts2) {
    const { lowS, prehash, extraEntropy } = validateSigOpts(opts2, defaultSigOpts);
    message = validateMsgAndHash(message, prehash);
    const h1int = bits2int_modN(message);
    const d = Fn2.fromBytes(secretKey);
    if (!Fn2.isValidNot0(d))
      throw new Error("invalid private key");
    const seedArgs = [int2octets(d), int2octets(h1int)];
    if (extraEntropy != null && extraEntropy !== false) {
      const e = extraEntropy === true ? randomBytes3(lengths.secretKey) : extraEntropy;
      seedArgs.push(abytes2(e, void 0, "extraEntropy"));
    }
    const seed = concatBytes2(...seedArgs);
    const m = h1int;
    function k2sig(kBytes) {
      const k = bits2int(kBytes);
      if (!Fn2.isValidNot0(k))
        return;
      const q = Point2.BASE.multiply(k).toAffine();
      const r = Fn2.create(q.x);
      if (r === _0n5)
        return;
      let s;
      if (csprng !== void 0) {
        const b = bytesToNumberBE(mapHashToField(csprng(blindLength), CURVE_ORDER));
        const ibk = Fn2.inv(Fn2.mul(b, k));
        const bm = Fn2.mul(b, m);
        const bd = Fn2.mul(b, d);
        s = Fn2.create(ibk * Fn2.create(bm + bd * r));
      } else {
        const ik = invertCt(k, CURVE_ORDER);
        s = Fn2.create(ik * Fn2.create(m + r * d));
      }
      if (s === _0n5)
        return;
      let recovery = getRecoveryBit(q.x, q.y, r);
      let normS = s;
      if (lowS && isBiggerThanHalfOrder(s)) {
        normS = Fn2.neg(s);
        recovery ^= 1;
      }
      return new Signature(r, normS, hasLargeRecoveryLifts ? void 0 : recovery);
    }
    return { seed, k2sig };
  }
  function sign(message, secretKey, opts2 = {}) {
    const { seed, k2sig } = prepSig(message, secretKey, opts2);
    const drbg = createHmacDrbg(hash_.outputLen, Fn2.BYTES, hmac2);
    const sig = drbg(seed, k2sig);
    return sig.toBytes(opts2.format);
  }
  function verify(signature, message, publicKey, opts2 = {}) {
    const { lowS, prehash, format } = validateSigOpts(opts2, defaultSigOpts);
    publicKey = abytes2(publicKey, void 0, "publicKey");
    message = validateMsgAndHash(message, prehash);
    if (!isBytes2(signature)) {
      const end = signature instanceof Signature ? ", use sig.toBytes()" : "";
      throw new Error("verify expects Uint8Array signature" + end);
    }
    validateSigLength(signature, format);
    try {
      const sig = Signature.fromBytes(signature, format);
      const P = Point2.fromBytes(publicKey);
      if (P.is0())
        return false;
      if (lowS && sig.hasHighS())
        return false;
      const { r, s } = sig;
      const h = bits2int_modN(message);
      const is = Fn2.inv(s);
      const u1 = Fn2.create(h * is);
      const u2 = Fn2.create(r * is);
      const R = Point2.BASE.mulAddUnsafe(u1, P, u2);
      if (R.is0())
        return false;
      const q = R.toAffine();
      const v = Fn2.create(q.x);
      if (v !== r)
        return false;
      if (format === "recovered" && sig.recovery !== getRecoveryBit(q.x, q.y, r))
        return false;
      return true;
    } catch (e) {
      return false;
    }
  }
  function recoverPublicKey(signature, message, opts2 = {}) {
    const { prehash } = validateSigOpts(opts2, defaultSigOpts);
    message = validateMsgAndHash(message, prehash);
    return Signature.fromBytes(signature, "recovered").recoverPublicKey(message).toBytes();
  }
  return Object.freeze({
    keygen,
    getPublicKey,
    getSharedSecret,
    utils,
    lengths,
    Point: Point2,
    sign,
    verify,
    recoverPublicKey,
    Signature,
    hash: hash_
  });
}

// ../../node_modules/@noble/curves/secp256k1.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var secp256k1_CURVE = {
  p: BigInt("0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f"),
  n: BigInt("0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"),
  h: BigInt(1),
  a: BigInt(0),
  b: BigInt(7),
  Gx: BigInt("0x79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"),
  Gy: BigInt("0x483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8")
};
var secp256k1_ENDO = {
  beta: BigInt("0x7ae96a2b657c07106e64479eac3434e99cf0497512f58995c1396c28719501ee"),
  basises: [
    [BigInt("0x3086d221a7d46bcde86c90e49284eb15"), -BigInt("0xe4437ed6010e88286f547fa90abfe4c3")],
    [BigInt("0x114ca50f7a8e2f3f657c1108d9d44cfd8"), BigInt("0x3086d221a7d46bcde86c90e49284eb15")]
  ]
};
var _2n3 = /* @__PURE__ */ BigInt(2);
function sqrtMod(y) {
  const P = secp256k1_CURVE.p;
  const _3n3 = BigInt(3), _6n = BigInt(6), _11n = BigInt(11), _22n = BigInt(22);
  const _23n = BigInt(23), _44n = BigInt(44), _88n = BigInt(88);
  const b2 = y * y * y % P;
  const b3 = b2 * b2 * y % P;
  const b6 = pow2(b3, _3n3, P) * b3 % P;
  const b9 = pow2(b6, _3n3, P) * b3 % P;
  const b11 = pow2(b9, _2n3, P) * b2 % P;
  const b22 = pow2(b11, _11n, P) * b11 % P;
  const b44 = pow2(b22, _22n, P) * b22 % P;
  const b88 = pow2(b44, _44n, P) * b44 % P;
  const b176 = pow2(b88, _88n, P) * b88 % P;
  const b220 = pow2(b176, _44n, P) * b44 % P;
  const b223 = pow2(b220, _3n3, P) * b3 % P;
  const t1 = pow2(b223, _23n, P) * b22 % P;
  const t2 = pow2(t1, _6n, P) * b2 % P;
  const root = pow2(t2, _2n3, P);
  if (!Fpk1.eql(Fpk1.sqr(root), y))
    throw new Error("Cannot find square root");
  return root;
}
var Fpk1 = /* @__PURE__ */ Field(secp256k1_CURVE.p, { sqrt: sqrtMod });
var Pointk1 = /* @__PURE__ */ weierstrass(secp256k1_CURVE, {
  Fp: Fpk1,
  endo: secp256k1_ENDO
});
var secp256k1 = /* @__PURE__ */ ecdsa(Pointk1, sha256);

// ../../node_modules/@noble/hashes/sha3.js
var _0n6 = BigInt(0);
var _1n5 = BigInt(1);
var _2n4 = BigInt(2);
var _7n2 = BigInt(7);
var _256n = BigInt(256);
var _0x71n = BigInt(113);
var SHA3_PI = [];
var SHA3_ROTL = [];
var _SHA3_IOTA = [];
for (let round = 0, R = _1n5, x = 1, y = 0; round < 24; round++) {
  [x, y] = [y, (2 * x + 3 * y) % 5];
  SHA3_PI.push(2 * (5 * y + x));
  SHA3_ROTL.push((round + 1) * (round + 2) / 2 % 64);
  let t = _0n6;
  for (let j = 0; j < 7; j++) {
    R = (R << _1n5 ^ (R >> _7n2) * _0x71n) % _256n;
    if (R & _2n4)
      t ^= _1n5 << (_1n5 << BigInt(j)) - _1n5;
  }
  _SHA3_IOTA.push(t);
}
var IOTAS = split(_SHA3_IOTA, true);
var SHA3_IOTA_H = IOTAS[0];
var SHA3_IOTA_L = IOTAS[1];
var rotlSH = (h, l, s) => h << s | l >>> 32 - s;
var rotlSL = (h, l, s) => l << s | h >>> 32 - s;
var rotlBH = (h, l, s) => l << s - 32 | h >>> 64 - s;
var rotlBL = (h, l, s) => h << s - 32 | l >>> 64 - s;
var rotlH = (h, l, s) => s > 32 ? rotlBH(h, l, s) : rotlSH(h, l, s);
var rotlL = (h, l, s) => s > 32 ? rotlBL(h, l, s) : rotlSL(h, l, s);
var B = new Uint32Array(5 * 2);
function keccakP(s, rounds = 24) {
  if (!(s instanceof Uint32Array))
    throw new TypeError('"s" expected Uint32Array(50), got type=' + typeof s);
  if (s.length !== 50)
    throw new RangeError('"s" expected Uint32Array(50), got length=' + s.length);
  anumber(rounds, "rounds");
  if (rounds < 1 || rounds > 24)
    throw new Error('"rounds" expected integer 1..24');
  for (let round = 24 - rounds; round < 24; round++) {
    for (let x = 0; x < 10; x++)
      B[x] = s[x] ^ s[x + 10] ^ s[x + 20] ^ s[x + 30] ^ s[x + 40];
    for (let x = 0; x < 10; x += 2) {
      const idx1 = (x + 8) % 10;
      const idx0 = (x + 2) % 10;
      const B0 = B[idx0];
      const B1 = B[idx0 + 1];
      const Th = rotlH(B0, B1, 1) ^ B[idx1];
      const Tl = rotlL(B0, B1, 1) ^ B[idx1 + 1];
      for (let y = 0; y < 50; y += 10) {
        s[x + y] ^= Th;
        s[x + y + 1] ^= Tl;
      }
    }
    let curH = s[2];
    let curL = s[3];
    for (let t = 0; t < 24; t++) {
      const shift = SHA3_ROTL[t];
      const Th = rotlH(curH, curL, shift);
      const Tl = rotlL(curH, curL, shift);
      const PI = SHA3_PI[t];
      curH = s[PI];
      curL = s[PI + 1];
      s[PI] = Th;
      s[PI + 1] = Tl;
    }
    for (let y = 0; y < 50; y += 10) {
      const b0 = s[y], b1 = s[y + 1], b2 = s[y + 2], b3 = s[y + 3];
      s[y] ^= ~s[y + 2] & s[y + 4];
      s[y + 1] ^= ~s[y + 3] & s[y + 5];
      s[y + 2] ^= ~s[y + 4] & s[y + 6];
      s[y + 3] ^= ~s[y + 5] & s[y + 7];
      s[y + 4] ^= ~s[y + 6] & s[y + 8];
      s[y + 5] ^= ~s[y + 7] & s[y + 9];
      s[y + 6] ^= ~s[y + 8] & b0;
      s[y + 7] ^= ~s[y + 9] & b1;
      s[y + 8] ^= ~b0 & b2;
      s[y + 9] ^= ~b1 & b3;
    }
    s[0] ^= SHA3_IOTA_H[round];
    s[1] ^= SHA3_IOTA_L[round];
  }
  clean(B);
}
var Keccak = class _Keccak {
  state;
  pos = 0;
  posOut = 0;
  finished = false;
  state32;
  destroyed = false;
  blockLen;
  suffix;
  outputLen;
  canXOF;
  enableXOF = false;
  rounds;
  // NOTE: we accept arguments in bytes instead of bits here.
  constructor(blockLen, suffix, outputLen, enableXOF = false, rounds = 24) {
    anumber(blockLen, "blockLen");
    anumber(suffix, "suffix");
    anumber(rounds, "rounds");
    abool(enableXOF, "enableXOF");
    this.blockLen = blockLen;
    this.suffix = suffix;
    this.outputLen = outputLen;
    this.enableXOF = enableXOF;
    this.canXOF = enableXOF;
    this.rounds = rounds;
    anumber(outputLen, "outputLen");
    if (!(0 < blockLen && blockLen < 200))
      throw new Error('"blockLen" must be 1..199');
    this.state = new Uint8Array(200);
    this.state32 = u32(this.state);
  }
  clone() {
    return this._cloneInto();
  }
  keccak() {
    swap32IfBE(this.state32);
    keccakP(this.state32, this.rounds);
    swap32IfBE(this.state32);
    this.posOut = 0;
    this.pos = 0;
  }
  update(data) {
    aexists(this);
    abytes(data);
    const { blockLen, state, state32 } = this;
    const len = data.length;
    const canUseU32 = blockLen % 4 === 0 && data.byteOffset % 4 === 0;
    const blockLen32 = blockLen / 4;
    const data32 = canUseU32 && len >= blockLen ? u32(data) : void 0;
    for (let pos = 0; pos < len; ) {
      if (data32 !== void 0 && this.pos === 0 && pos % 4 === 0 && len - pos >= blockLen) {
        for (let i = 0, o = pos / 4; i < blockLen32; i++)
          state32[i] ^= data32[o + i];
        pos += blockLen;
        this.pos = blockLen;
        this.keccak();
        continue;
      }
      const take = Math.min(blockLen - this.pos, len - pos);
      for (let i = 0; i < take; i++)
        state[this.pos++] ^= data[pos++];
      if (this.pos === blockLen)
        this.keccak();
    }
    return this;
  }
  finish() {
    if (this.finished)
      return;
    this.finished = true;
    const { state, suffix, pos, blockLen } = this;
    state[pos] ^= suffix;
    if ((suffix & 128) !== 0 && pos === blockLen - 1)
      this.keccak();
    state[blockLen - 1] ^= 128;
    this.keccak();
  }
  writeInto(out) {
    aexists(this, false);
    abytes(out);
    this.finish();
    const bufferOut = this.state;
    const { blockLen } = this;
    for (let pos = 0, len = out.length; pos < len; ) {
      if (this.posOut >= blockLen)
        this.keccak();
      const take = Math.min(blockLen - this.posOut, len - pos);
      out.set(bufferOut.subarray(this.posOut, this.posOut + take), pos);
      this.posOut += take;
      pos += take;
    }
    return out;
  }
  xofInto(out) {
    if (!this.enableXOF)
      throw new Error("XOF is not enabled");
    return this.writeInto(out);
  }
  xof(bytes) {
    anumber(bytes);
    return this.xofInto(new Uint8Array(bytes));
  }
  digestInto(out) {
    aoutput(out, this);
    if (this.finished)
      throw new Error("digest() was already called");
    this.writeInto(out.length === this.outputLen ? out : out.subarray(0, this.outputLen));
    this.destroy();
  }
  digest() {
    const out = new Uint8Array(this.outputLen);
    this.digestInto(out);
    return out;
  }
  destroy() {
    this.destroyed = true;
    clean(this.state);
  }
  _cloneInto(to) {
    const { blockLen, suffix, outputLen, rounds, enableXOF } = this;
    to ||= new _Keccak(blockLen, suffix, outputLen, enableXOF, rounds);
    to.blockLen = blockLen;
    to.state32.set(this.state32);
    to.pos = this.pos;
    to.posOut = this.posOut;
    to.finished = this.finished;
    to.rounds = rounds;
    to.suffix = suffix;
    to.outputLen = outputLen;
    to.enableXOF = enableXOF;
    to.canXOF = this.canXOF;
    to.destroyed = this.destroyed;
    return to;
  }
};
var genKeccak = (suffix, blockLen, outputLen, info = {}) => createHasher(() => new Keccak(blockLen, suffix, outputLen), info);
var keccak_256 = /* @__PURE__ */ genKeccak(1, 136, 32);

// ../../node_modules/@noble/hashes/pbkdf2.js
function pbkdf2Init(hash, _password, _salt, _opts) {
  ahash(hash);
  const opts = checkOpts({ dkLen: 32, asyncTick: 10 }, _opts);
  const { c, dkLen, asyncTick } = opts;
  anumber(c, "c");
  anumber(dkLen, "dkLen");
  anumber(asyncTick, "asyncTick");
  if (c < 1)
    throw new Error('"c" (iterations) must be >= 1');
  if (dkLen < 1)
    throw new Error('"dkLen" must be >= 1');
  if (dkLen > (2 ** 32 - 1) * hash.outputLen)
    throw new Error("derived key too long");
  const p = kdfInputToBytes(_password, "password");
  try {
    const s = kdfInputToBytes(_salt, "salt");
    try {
      const DK = new Uint8Array(dkLen);
      const { iHash, oHash, outputLen } = hmac.create(hash, p);
      const u = new Uint8Array(outputLen);
      const eng = pbkdf2Engine(iHash, oHash, s, u);
      return { c, dkLen, asyncTick, DK, outputLen, eng };
    } finally {
      if (typeof _salt === "string")
        clean(s);
    }
  } finally {
    if (typeof _password === "string")
      clean(p);
  }
}
function pbkdf2Engine(iHash, oHash, salt, u) {
  const counter = new Uint8Array(4);
  const view = createView(counter);
  const salted = iHash._cloneInto().update(salt);
  const work = oHash._cloneInto();
  const iClone = iHash._cloneInto;
  const oClone = oHash._cloneInto;
  return {
    u1: (ti, Ti) => {
      view.setInt32(0, ti, false);
      salted._cloneInto(work).update(counter).digestInto(u);
      oHash._cloneInto(work).update(u).digestInto(u);
      Ti.set(u.subarray(0, Ti.length));
    },
    // Whole `F` inner loop for the sync variant: one optimized function owns the hot loop.
    rounds: (c, Ti) => {
      for (let ui = 1; ui < c; ui++) {
        iClone.call(iHash, work).update(u).digestInto(u);
        oClone.call(oHash, work).update(u).digestInto(u);
        for (let i = 0; i < Ti.length; i++)
          Ti[i] ^= u[i];
      }
    },
    output: (DK) => {
      iHash.destroy();
      oHash.destroy();
      salted.destroy();
      work.destroy();
      clean(u);
      return DK;
    }
  };
}
function pbkdf2(hash, password, salt, opts) {
  const { c, dkLen, DK, outputLen, eng } = pbkdf2Init(hash, password, salt, opts);
  for (let ti = 1, pos = 0; pos < dkLen; ti++, pos += outputLen) {
    const Ti = DK.subarray(pos, pos + outputLen);
    eng.u1(ti, Ti);
    eng.rounds(c, Ti);
  }
  return eng.output(DK);
}
async function pbkdf2Async(hash, password, salt, opts) {
  const { c, dkLen, asyncTick, DK, outputLen, eng } = pbkdf2Init(hash, password, salt, opts);
  const abort = () => {
    eng.output(DK);
    clean(DK);
  };
  for (let ti = 1, pos = 0; pos < dkLen; ti++, pos += outputLen) {
    const Ti = DK.subarray(pos, pos + outputLen);
    eng.u1(ti, Ti);
    await asyncLoop(c - 1, asyncTick, () => {
      eng.rounds(2, Ti);
    }, abort);
  }
  return eng.output(DK);
}

// ../../node_modules/@noble/hashes/scrypt.js
function XorAndSalsa(prev, pi, input, ii, out, oi) {
  let y00 = prev[pi++] ^ input[ii++], y01 = prev[pi++] ^ input[ii++];
  let y02 = prev[pi++] ^ input[ii++], y03 = prev[pi++] ^ input[ii++];
  let y04 = prev[pi++] ^ input[ii++], y05 = prev[pi++] ^ input[ii++];
  let y06 = prev[pi++] ^ input[ii++], y07 = prev[pi++] ^ input[ii++];
  let y08 = prev[pi++] ^ input[ii++], y09 = prev[pi++] ^ input[ii++];
  let y10 = prev[pi++] ^ input[ii++], y11 = prev[pi++] ^ input[ii++];
  let y12 = prev[pi++] ^ input[ii++], y13 = prev[pi++] ^ input[ii++];
  let y14 = prev[pi++] ^ input[ii++], y15 = prev[pi++] ^ input[ii++];
  let x00 = y00, x01 = y01, x02 = y02, x03 = y03, x04 = y04, x05 = y05, x06 = y06, x07 = y07, x08 = y08, x09 = y09, x10 = y10, x11 = y11, x12 = y12, x13 = y13, x14 = y14, x15 = y15;
  for (let i = 0; i < 8; i += 2) {
    x04 ^= rotl(x00 + x12 | 0, 7);
    x08 ^= rotl(x04 + x00 | 0, 9);
    x12 ^= rotl(x08 + x04 | 0, 13);
    x00 ^= rotl(x12 + x08 | 0, 18);
    x09 ^= rotl(x05 + x01 | 0, 7);
    x13 ^= rotl(x09 + x05 | 0, 9);
    x01 ^= rotl(x13 + x09 | 0, 13);
    x05 ^= rotl(x01 + x13 | 0, 18);
    x14 ^= rotl(x10 + x06 | 0, 7);
    x02 ^= rotl(x14 + x10 | 0, 9);
    x06 ^= rotl(x02 + x14 | 0, 13);
    x10 ^= rotl(x06 + x02 | 0, 18);
    x03 ^= rotl(x15 + x11 | 0, 7);
    x07 ^= rotl(x03 + x15 | 0, 9);
    x11 ^= rotl(x07 + x03 | 0, 13);
    x15 ^= rotl(x11 + x07 | 0, 18);
    x01 ^= rotl(x00 + x03 | 0, 7);
    x02 ^= rotl(x01 + x00 | 0, 9);
    x03 ^= rotl(x02 + x01 | 0, 13);
    x00 ^= rotl(x03 + x02 | 0, 18);
    x06 ^= rotl(x05 + x04 | 0, 7);
    x07 ^= rotl(x06 + x05 | 0, 9);
    x04 ^= rotl(x07 + x06 | 0, 13);
    x05 ^= rotl(x04 + x07 | 0, 18);
    x11 ^= rotl(x10 + x09 | 0, 7);
    x08 ^= rotl(x11 + x10 | 0, 9);
    x09 ^= rotl(x08 + x11 | 0, 13);
    x10 ^= rotl(x09 + x08 | 0, 18);
    x12 ^= rotl(x15 + x14 | 0, 7);
    x13 ^= rotl(x12 + x15 | 0, 9);
    x14 ^= rotl(x13 + x12 | 0, 13);
    x15 ^= rotl(x14 + x13 | 0, 18);
  }
  out[oi++] = y00 + x00 | 0;
  out[oi++] = y01 + x01 | 0;
  out[oi++] = y02 + x02 | 0;
  out[oi++] = y03 + x03 | 0;
  out[oi++] = y04 + x04 | 0;
  out[oi++] = y05 + x05 | 0;
  out[oi++] = y06 + x06 | 0;
  out[oi++] = y07 + x07 | 0;
  out[oi++] = y08 + x08 | 0;
  out[oi++] = y09 + x09 | 0;
  out[oi++] = y10 + x10 | 0;
  out[oi++] = y11 + x11 | 0;
  out[oi++] = y12 + x12 | 0;
  out[oi++] = y13 + x13 | 0;
  out[oi++] = y14 + x14 | 0;
  out[oi++] = y15 + x15 | 0;
}
function BlockMix(input, ii, out, oi, r) {
  let head = oi + 0;
  let tail = oi + 16 * r;
  for (let i = 0; i < 16; i++)
    out[tail + i] = input[ii + (2 * r - 1) * 16 + i];
  for (let i = 0; i < r; i++, head += 16, ii += 16) {
    XorAndSalsa(out, tail, input, ii, out, head);
    if (i > 0)
      tail += 16;
    XorAndSalsa(out, head, input, ii += 16, out, tail);
  }
}
var SCRYPT_DEFAULT_MAXMEM = 128 * 8 * (2 ** 20 + 1 + 1);
function scryptInit(password, salt, _opts) {
  const opts = checkOpts({
    dkLen: 32,
    asyncTick: 10,
    maxmem: SCRYPT_DEFAULT_MAXMEM
  }, _opts);
  const { N, r, p, dkLen, asyncTick, maxmem, onProgress } = opts;
  anumber(N, "N");
  anumber(r, "r");
  anumber(p, "p");
  anumber(dkLen, "dkLen");
  anumber(asyncTick, "asyncTick");
  anumber(maxmem, "maxmem");
  if (onProgress !== void 0 && typeof onProgress !== "function")
    throw new Error('"onProgress" must be a function');
  if (r < 1)
    throw new Error('"r" expected integer >= 1');
  const blockSize = 128 * r;
  const blockSize32 = blockSize / 4;
  const pow32 = Math.pow(2, 32);
  if (N <= 1 || (N & N - 1) !== 0 || N > pow32)
    throw new Error('"N" expected a power of 2, and 2^1 <= N <= 2^32');
  if (p < 1 || p > (pow32 - 1) * 32 / blockSize)
    throw new Error('"p" expected integer 1..((2^32 - 1) * 32) / (128 * r)');
  if (dkLen < 1 || dkLen > (pow32 - 1) * 32)
    throw new Error('"dkLen" expected integer 1..(2^32 - 1) * 32');
  const memUsed = blockSize * (N + p + 1);
  if (memUsed > maxmem)
    throw new Error('"maxmem" limit was hit: memUsed(128*r*(N+p+1))=' + memUsed + ", maxmem=" + maxmem);
  const B2 = pbkdf2(sha256, password, salt, { c: 1, dkLen: blockSize * p });
  const B32 = u32(B2);
  const V = u32(new Uint8Array(blockSize * N));
  const tmp = u32(new Uint8Array(blockSize));
  let blockMixCb = () => {
  };
  if (onProgress) {
    const totalBlockMix = 2 * N * p;
    const callbackPer = Math.max(Math.floor(totalBlockMix / 1e4), 1);
    let blockMixCnt = 0;
    blockMixCb = () => {
      blockMixCnt++;
      if (onProgress && (!(blockMixCnt % callbackPer) || blockMixCnt === totalBlockMix)) {
        try {
          onProgress(blockMixCnt / totalBlockMix);
        } catch (e) {
          clean(B2, V, tmp);
          throw e;
        }
      }
    };
  }
  return { N, r, p, dkLen, blockSize32, V, B32, B: B2, tmp, blockMixCb, asyncTick };
}
function scryptOutput(password, dkLen, B2, V, tmp) {
  const res = pbkdf2(sha256, password, B2, { c: 1, dkLen });
  clean(B2, V, tmp);
  return res;
}
async function scryptAsync(password, salt, opts) {
  const { N, r, p, dkLen, blockSize32, V, B32, B: B2, tmp, blockMixCb, asyncTick } = scryptInit(password, salt, opts);
  const abort = () => clean(B2, V, tmp);
  swap32IfBE(B32);
  for (let pi = 0; pi < p; pi++) {
    const Pi = blockSize32 * pi;
    for (let i = 0; i < blockSize32; i++)
      V[i] = B32[Pi + i];
    let pos = 0;
    await asyncLoop(N - 1, asyncTick, () => {
      BlockMix(V, pos, V, pos += blockSize32, r);
      blockMixCb();
    }, abort);
    BlockMix(V, (N - 1) * blockSize32, B32, Pi, r);
    blockMixCb();
    await asyncLoop(N, asyncTick, () => {
      const j = (B32[Pi + blockSize32 - 16] & N - 1) >>> 0;
      for (let k = 0; k < blockSize32; k++)
        tmp[k] = B32[Pi + k] ^ V[j * blockSize32 + k];
      BlockMix(tmp, 0, B32, Pi, r);
      blockMixCb();
    }, abort);
  }
  swap32IfBE(B32);
  return scryptOutput(password, dkLen, B2, V, tmp);
}

// ../../node_modules/@scure/bip39/index.js
/*! scure-bip39 - MIT License (c) 2022 Patricio Palladino, Paul Miller (paulmillr.com) */
function isWellFormedUnicode(value) {
  for (let i = 0; i < value.length; i++) {
    const current = value.charCodeAt(i);
    if (current >= 55296 && current <= 56319) {
      if (i + 1 >= value.length)
        return false;
      const next = value.charCodeAt(++i);
      if (next < 56320 || next > 57343)
        return false;
    } else if (current >= 56320 && current <= 57343) {
      return false;
    }
  }
  return true;
}
function nfkd(str) {
  if (typeof str !== "string")
    throw new TypeError("invalid mnemonic type: " + typeof str);
  if (!isWellFormedUnicode(str))
    throw new TypeError("expected well-formed Unicode string");
  return str.normalize("NFKD");
}
function normalize(str) {
  const norm = nfkd(str);
  const words = norm.split(" ");
  if (![12, 15, 18, 21, 24].includes(words.length))
    throw new Error("Invalid mnemonic");
  return { nfkd: norm, words };
}
function aentropy(ent) {
  abytes(ent);
  if (![16, 20, 24, 28, 32].includes(ent.length))
    throw new RangeError("invalid entropy length");
}
var calcChecksum = (entropy) => {
  const bitsLeft = 8 - entropy.length / 4;
  return sha256(entropy)[0] >> bitsLeft << bitsLeft;
};
function awordlist(wordlist2) {
  if (!Array.isArray(wordlist2) || wordlist2.length !== 2048 || typeof wordlist2[0] !== "string")
    throw new TypeError("Wordlist: expected array of 2048 strings");
  wordlist2.forEach((i) => {
    if (typeof i !== "string")
      throw new TypeError("wordlist: non-string element: " + i);
    if (!isWellFormedUnicode(i))
      throw new TypeError("wordlist: expected well-formed Unicode string");
  });
}
function decodeWords(words, wordlist2) {
  awordlist(wordlist2);
  const entLen = words.length / 3 * 4;
  const bytes = new Uint8Array(entLen + 1);
  let carry = 0;
  let bits = 0;
  let pos = 0;
  for (const word2 of words) {
    const index = wordlist2.indexOf(word2);
    if (index === -1)
      throw new Error("Unknown word: " + word2);
    carry = carry << 11 | index;
    bits += 11;
    while (bits >= 8) {
      bits -= 8;
      bytes[pos++] = carry >>> bits & 255;
    }
    carry &= (1 << bits) - 1;
  }
  if (bits > 0)
    bytes[pos] = carry << 8 - bits;
  const entropy = bytes.subarray(0, entLen);
  if (bytes[entLen] !== calcChecksum(entropy))
    throw new Error("Invalid checksum");
  return Uint8Array.from(entropy);
}
function mnemonicToEntropy(mnemonic, wordlist2) {
  const { words } = normalize(mnemonic);
  const entropy = decodeWords(words, wordlist2);
  aentropy(entropy);
  return entropy;
}
function validateMnemonic(mnemonic, wordlist2) {
  try {
    mnemonicToEntropy(mnemonic, wordlist2);
  } catch (e) {
    return false;
  }
  return true;
}
var psalt = (passphrase) => {
  if (typeof passphrase !== "string")
    throw new TypeError("invalid passphrase type: " + typeof passphrase);
  return nfkd("mnemonic" + passphrase);
};
function mnemonicToSeed(mnemonic, passphrase = "") {
  return pbkdf2Async(sha512, normalize(mnemonic).nfkd, psalt(passphrase), {
    c: 2048,
    dkLen: 64
  });
}

// ../../node_modules/@scure/bip39/wordlists/english.js
var wordlist = /* @__PURE__ */ Object.freeze(`abandon
ability
able
about
above
absent
absorb
abstract
absurd
abuse
access
accident
account
accuse
achieve
acid
acoustic
acquire
across
act
action
actor
actress
actual
adapt
add
addict
address
adjust
admit
adult
advance
advice
aerobic
affair
afford
afraid
again
age
agent
agree
ahead
aim
air
airport
aisle
alarm
album
alcohol
alert
alien
all
alley
allow
almost
alone
alpha
already
also
alter
always
amateur
amazing
among
amount
amused
analyst
anchor
ancient
anger
angle
angry
animal
ankle
announce
annual
another
answer
antenna
antique
anxiety
any
apart
apology
appear
apple
approve
april
arch
arctic
area
arena
argue
arm
armed
armor
army
around
arrange
arrest
arrive
arrow
art
artefact
artist
artwork
ask
aspect
assault
asset
assist
assume
asthma
athlete
atom
attack
attend
attitude
attract
auction
audit
august
aunt
author
auto
autumn
average
avocado
avoid
awake
aware
away
awesome
awful
awkward
axis
baby
bachelor
bacon
badge
bag
balance
balcony
ball
bamboo
banana
banner
bar
barely
bargain
barrel
base
basic
basket
battle
beach
bean
beauty
because
become
beef
before
begin
behave
behind
believe
below
belt
bench
benefit
best
betray
better
between
beyond
bicycle
bid
bike
bind
biology
bird
birth
bitter
black
blade
blame
blanket
blast
bleak
bless
blind
blood
blossom
blouse
blue
blur
blush
board
boat
body
boil
bomb
bone
bonus
book
boost
border
boring
borrow
boss
bottom
bounce
box
boy
bracket
brain
brand
brass
brave
bread
breeze
brick
bridge
brief
bright
bring
brisk
broccoli
broken
bronze
broom
brother
brown
brush
bubble
buddy
budget
buffalo
build
bulb
bulk
bullet
bundle
bunker
burden
burger
burst
bus
business
busy
butter
buyer
buzz
cabbage
cabin
cable
cactus
cage
cake
call
calm
camera
camp
can
canal
cancel
candy
cannon
canoe
canvas
canyon
capable
capital
captain
car
carbon
card
cargo
carpet
carry
cart
case
cash
casino
castle
casual
cat
catalog
catch
category
cattle
caught
cause
caution
cave
ceiling
celery
cement
census
century
cereal
certain
chair
chalk
champion
change
chaos
chapter
charge
chase
chat
cheap
check
cheese
chef
cherry
chest
chicken
chief
child
chimney
choice
choose
chronic
chuckle
chunk
churn
cigar
cinnamon
circle
citizen
city
civil
claim
clap
clarify
claw
clay
clean
clerk
clever
click
client
cliff
climb
clinic
clip
clock
clog
close
cloth
cloud
clown
club
clump
cluster
clutch
coach
coast
coconut
code
coffee
coil
coin
collect
color
column
combine
come
comfort
comic
common
company
concert
conduct
confirm
congress
connect
consider
control
convince
cook
cool
copper
copy
coral
core
corn
correct
cost
cotton
couch
country
couple
course
cousin
cover
coyote
crack
cradle
craft
cram
crane
crash
crater
crawl
crazy
cream
credit
creek
crew
cricket
crime
crisp
critic
crop
cross
crouch
crowd
crucial
cruel
cruise
crumble
crunch
crush
cry
crystal
cube
culture
cup
cupboard
curious
current
curtain
curve
cushion
custom
cute
cycle
dad
damage
damp
dance
danger
daring
dash
daughter
dawn
day
deal
debate
debris
decade
december
decide
decline
decorate
decrease
deer
defense
define
defy
degree
delay
deliver
demand
demise
denial
dentist
deny
depart
depend
deposit
depth
deputy
derive
describe
desert
design
desk
despair
destroy
detail
detect
develop
device
devote
diagram
dial
diamond
diary
dice
diesel
diet
differ
digital
dignity
dilemma
dinner
dinosaur
direct
dirt
disagree
discover
disease
dish
dismiss
disorder
display
distance
divert
divide
divorce
dizzy
doctor
document
dog
doll
dolphin
domain
donate
donkey
donor
door
dose
double
dove
draft
dragon
drama
drastic
draw
dream
dress
drift
drill
drink
drip
drive
drop
drum
dry
duck
dumb
dune
during
dust
dutch
duty
dwarf
dynamic
eager
eagle
early
earn
earth
easily
east
easy
echo
ecology
economy
edge
edit
educate
effort
egg
eight
either
elbow
elder
electric
elegant
element
elephant
elevator
elite
else
embark
embody
embrace
emerge
emotion
employ
empower
empty
enable
enact
end
endless
endorse
enemy
energy
enforce
engage
engine
enhance
enjoy
enlist
enough
enrich
enroll
ensure
enter
entire
entry
envelope
episode
equal
equip
era
erase
erode
erosion
error
erupt
escape
essay
essence
estate
eternal
ethics
evidence
evil
evoke
evolve
exact
example
excess
exchange
excite
exclude
excuse
execute
exercise
exhaust
exhibit
exile
exist
exit
exotic
expand
expect
expire
explain
expose
express
extend
extra
eye
eyebrow
fabric
face
faculty
fade
faint
faith
fall
false
fame
family
famous
fan
fancy
fantasy
farm
fashion
fat
fatal
father
fatigue
fault
favorite
feature
february
federal
fee
feed
feel
female
fence
festival
fetch
fever
few
fiber
fiction
field
figure
file
film
filter
final
find
fine
finger
finish
fire
firm
first
fiscal
fish
fit
fitness
fix
flag
flame
flash
flat
flavor
flee
flight
flip
float
flock
floor
flower
fluid
flush
fly
foam
focus
fog
foil
fold
follow
food
foot
force
forest
forget
fork
fortune
forum
forward
fossil
foster
found
fox
fragile
frame
frequent
fresh
friend
fringe
frog
front
frost
frown
frozen
fruit
fuel
fun
funny
furnace
fury
future
gadget
gain
galaxy
gallery
game
gap
garage
garbage
garden
garlic
garment
gas
gasp
gate
gather
gauge
gaze
general
genius
genre
gentle
genuine
gesture
ghost
giant
gift
giggle
ginger
giraffe
girl
give
glad
glance
glare
glass
glide
glimpse
globe
gloom
glory
glove
glow
glue
goat
goddess
gold
good
goose
gorilla
gospel
gossip
govern
gown
grab
grace
grain
grant
grape
grass
gravity
great
green
grid
grief
grit
grocery
group
grow
grunt
guard
guess
guide
guilt
guitar
gun
gym
habit
hair
half
hammer
hamster
hand
happy
harbor
hard
harsh
harvest
hat
have
hawk
hazard
head
health
heart
heavy
hedgehog
height
hello
helmet
help
hen
hero
hidden
high
hill
hint
hip
hire
history
hobby
hockey
hold
hole
holiday
hollow
home
honey
hood
hope
horn
horror
horse
hospital
host
hotel
hour
hover
hub
huge
human
humble
humor
hundred
hungry
hunt
hurdle
hurry
hurt
husband
hybrid
ice
icon
idea
identify
idle
ignore
ill
illegal
illness
image
imitate
immense
immune
impact
impose
improve
impulse
inch
include
income
increase
index
indicate
indoor
industry
infant
inflict
inform
inhale
inherit
initial
inject
injury
inmate
inner
innocent
input
inquiry
insane
insect
inside
inspire
install
intact
interest
into
invest
invite
involve
iron
island
isolate
issue
item
ivory
jacket
jaguar
jar
jazz
jealous
jeans
jelly
jewel
job
join
joke
journey
joy
judge
juice
jump
jungle
junior
junk
just
kangaroo
keen
keep
ketchup
key
kick
kid
kidney
kind
kingdom
kiss
kit
kitchen
kite
kitten
kiwi
knee
knife
knock
know
lab
label
labor
ladder
lady
lake
lamp
language
laptop
large
later
latin
laugh
laundry
lava
law
lawn
lawsuit
layer
lazy
leader
leaf
learn
leave
lecture
left
leg
legal
legend
leisure
lemon
lend
length
lens
leopard
lesson
letter
level
liar
liberty
library
license
life
lift
light
like
limb
limit
link
lion
liquid
list
little
live
lizard
load
loan
lobster
local
lock
logic
lonely
long
loop
lottery
loud
lounge
love
loyal
lucky
luggage
lumber
lunar
lunch
luxury
lyrics
machine
mad
magic
magnet
maid
mail
main
major
make
mammal
man
manage
mandate
mango
mansion
manual
maple
marble
march
margin
marine
market
marriage
mask
mass
master
match
material
math
matrix
matter
maximum
maze
meadow
mean
measure
meat
mechanic
medal
media
melody
melt
member
memory
mention
menu
mercy
merge
merit
merry
mesh
message
metal
method
middle
midnight
milk
million
mimic
mind
minimum
minor
minute
miracle
mirror
misery
miss
mistake
mix
mixed
mixture
mobile
model
modify
mom
moment
monitor
monkey
monster
month
moon
moral
more
morning
mosquito
mother
motion
motor
mountain
mouse
move
movie
much
muffin
mule
multiply
muscle
museum
mushroom
music
must
mutual
myself
mystery
myth
naive
name
napkin
narrow
nasty
nation
nature
near
neck
need
negative
neglect
neither
nephew
nerve
nest
net
network
neutral
never
news
next
nice
night
noble
noise
nominee
noodle
normal
north
nose
notable
note
nothing
notice
novel
now
nuclear
number
nurse
nut
oak
obey
object
oblige
obscure
observe
obtain
obvious
occur
ocean
october
odor
off
offer
office
often
oil
okay
old
olive
olympic
omit
once
one
onion
online
only
open
opera
opinion
oppose
option
orange
orbit
orchard
order
ordinary
organ
orient
original
orphan
ostrich
other
outdoor
outer
output
outside
oval
oven
over
own
owner
oxygen
oyster
ozone
pact
paddle
page
pair
palace
palm
panda
panel
panic
panther
paper
parade
parent
park
parrot
party
pass
patch
path
patient
patrol
pattern
pause
pave
payment
peace
peanut
pear
peasant
pelican
pen
penalty
pencil
people
pepper
perfect
permit
person
pet
phone
photo
phrase
physical
piano
picnic
picture
piece
pig
pigeon
pill
pilot
pink
pioneer
pipe
pistol
pitch
pizza
place
planet
plastic
plate
play
please
pledge
pluck
plug
plunge
poem
poet
point
polar
pole
police
pond
pony
pool
popular
portion
position
possible
post
potato
pottery
poverty
powder
power
practice
praise
predict
prefer
prepare
present
pretty
prevent
price
pride
primary
print
priority
prison
private
prize
problem
process
produce
profit
program
project
promote
proof
property
prosper
protect
proud
provide
public
pudding
pull
pulp
pulse
pumpkin
punch
pupil
puppy
purchase
purity
purpose
purse
push
put
puzzle
pyramid
quality
quantum
quarter
question
quick
quit
quiz
quote
rabbit
raccoon
race
rack
radar
radio
rail
rain
raise
rally
ramp
ranch
random
range
rapid
rare
rate
rather
raven
raw
razor
ready
real
reason
rebel
rebuild
recall
receive
recipe
record
recycle
reduce
reflect
reform
refuse
region
regret
regular
reject
relax
release
relief
rely
remain
remember
remind
remove
render
renew
rent
reopen
repair
repeat
replace
report
require
rescue
resemble
resist
resource
response
result
retire
retreat
return
reunion
reveal
review
reward
rhythm
rib
ribbon
rice
rich
ride
ridge
rifle
right
rigid
ring
riot
ripple
risk
ritual
rival
river
road
roast
robot
robust
rocket
romance
roof
rookie
room
rose
rotate
rough
round
route
royal
rubber
rude
rug
rule
run
runway
rural
sad
saddle
sadness
safe
sail
salad
salmon
salon
salt
salute
same
sample
sand
satisfy
satoshi
sauce
sausage
save
say
scale
scan
scare
scatter
scene
scheme
school
science
scissors
scorpion
scout
scrap
screen
script
scrub
sea
search
season
seat
second
secret
section
security
seed
seek
segment
select
sell
seminar
senior
sense
sentence
series
service
session
settle
setup
seven
shadow
shaft
shallow
share
shed
shell
sheriff
shield
shift
shine
ship
shiver
shock
shoe
shoot
shop
short
shoulder
shove
shrimp
shrug
shuffle
shy
sibling
sick
side
siege
sight
sign
silent
silk
silly
silver
similar
simple
since
sing
siren
sister
situate
six
size
skate
sketch
ski
skill
skin
skirt
skull
slab
slam
sleep
slender
slice
slide
slight
slim
slogan
slot
slow
slush
small
smart
smile
smoke
smooth
snack
snake
snap
sniff
snow
soap
soccer
social
sock
soda
soft
solar
soldier
solid
solution
solve
someone
song
soon
sorry
sort
soul
sound
soup
source
south
space
spare
spatial
spawn
speak
special
speed
spell
spend
sphere
spice
spider
spike
spin
spirit
split
spoil
sponsor
spoon
sport
spot
spray
spread
spring
spy
square
squeeze
squirrel
stable
stadium
staff
stage
stairs
stamp
stand
start
state
stay
steak
steel
stem
step
stereo
stick
still
sting
stock
stomach
stone
stool
story
stove
strategy
street
strike
strong
struggle
student
stuff
stumble
style
subject
submit
subway
success
such
sudden
suffer
sugar
suggest
suit
summer
sun
sunny
sunset
super
supply
supreme
sure
surface
surge
surprise
surround
survey
suspect
sustain
swallow
swamp
swap
swarm
swear
sweet
swift
swim
swing
switch
sword
symbol
symptom
syrup
system
table
tackle
tag
tail
talent
talk
tank
tape
target
task
taste
tattoo
taxi
teach
team
tell
ten
tenant
tennis
tent
term
test
text
thank
that
theme
then
theory
there
they
thing
this
thought
three
thrive
throw
thumb
thunder
ticket
tide
tiger
tilt
timber
time
tiny
tip
tired
tissue
title
toast
tobacco
today
toddler
toe
together
toilet
token
tomato
tomorrow
tone
tongue
tonight
tool
tooth
top
topic
topple
torch
tornado
tortoise
toss
total
tourist
toward
tower
town
toy
track
trade
traffic
tragic
train
transfer
trap
trash
travel
tray
treat
tree
trend
trial
tribe
trick
trigger
trim
trip
trophy
trouble
truck
true
truly
trumpet
trust
truth
try
tube
tuition
tumble
tuna
tunnel
turkey
turn
turtle
twelve
twenty
twice
twin
twist
two
type
typical
ugly
umbrella
unable
unaware
uncle
uncover
under
undo
unfair
unfold
unhappy
uniform
unique
unit
universe
unknown
unlock
until
unusual
unveil
update
upgrade
uphold
upon
upper
upset
urban
urge
usage
use
used
useful
useless
usual
utility
vacant
vacuum
vague
valid
valley
valve
van
vanish
vapor
various
vast
vault
vehicle
velvet
vendor
venture
venue
verb
verify
version
very
vessel
veteran
viable
vibrant
vicious
victory
video
view
village
vintage
violin
virtual
virus
visa
visit
visual
vital
vivid
vocal
voice
void
volcano
volume
vote
voyage
wage
wagon
wait
walk
wall
walnut
want
warfare
warm
warrior
wash
wasp
waste
water
wave
way
wealth
weapon
wear
weasel
weather
web
wedding
weekend
weird
welcome
west
wet
whale
what
wheat
wheel
when
where
whip
whisper
wide
width
wife
wild
will
win
window
wine
wing
wink
winner
winter
wire
wisdom
wise
wish
witness
wolf
woman
wonder
wood
wool
word
work
world
worry
worth
wrap
wreck
wrestle
wrist
write
wrong
yard
year
yellow
you
young
youth
zebra
zero
zone
zoo`.split("\n"));

// ../../node_modules/@noble/hashes/legacy.js
var Rho160 = /* @__PURE__ */ Uint8Array.from([
  7,
  4,
  13,
  1,
  10,
  6,
  15,
  3,
  12,
  0,
  9,
  5,
  2,
  14,
  11,
  8
]);
var Id160 = /* @__PURE__ */ (() => Uint8Array.from(new Array(16).fill(0).map((_, i) => i)))();
var Pi160 = /* @__PURE__ */ (() => Id160.map((i) => (9 * i + 5) % 16))();
var idxLR = /* @__PURE__ */ (() => {
  const L = [Id160];
  const R = [Pi160];
  const res = [L, R];
  for (let i = 0; i < 4; i++)
    for (let j of res)
      j.push(j[i].map((k) => Rho160[k]));
  return res;
})();
var idxL = /* @__PURE__ */ (() => idxLR[0])();
var idxR = /* @__PURE__ */ (() => idxLR[1])();
var shifts160 = /* @__PURE__ */ [
  [11, 14, 15, 12, 5, 8, 7, 9, 11, 13, 14, 15, 6, 7, 9, 8],
  [12, 13, 11, 15, 6, 9, 9, 7, 12, 15, 11, 13, 7, 8, 7, 7],
  [13, 15, 14, 11, 7, 7, 6, 8, 13, 14, 13, 12, 5, 5, 6, 9],
  [14, 11, 12, 14, 8, 6, 5, 5, 15, 12, 15, 14, 9, 9, 8, 6],
  [15, 12, 13, 13, 9, 5, 8, 6, 14, 11, 12, 11, 8, 6, 5, 5]
].map((i) => Uint8Array.from(i));
var shiftsL160 = /* @__PURE__ */ idxL.map((idx, i) => idx.map((j) => shifts160[i][j]));
var shiftsR160 = /* @__PURE__ */ idxR.map((idx, i) => idx.map((j) => shifts160[i][j]));
var Kl160 = /* @__PURE__ */ Uint32Array.from([
  0,
  1518500249,
  1859775393,
  2400959708,
  2840853838
]);
var Kr160 = /* @__PURE__ */ Uint32Array.from([
  1352829926,
  1548603684,
  1836072691,
  2053994217,
  0
]);
function ripemd_f(group, x, y, z) {
  if (group === 0)
    return x ^ y ^ z;
  if (group === 1)
    return x & y | ~x & z;
  if (group === 2)
    return (x | ~y) ^ z;
  if (group === 3)
    return x & z | y & ~z;
  return x ^ (y | ~z);
}
var BUF_160 = /* @__PURE__ */ new Uint32Array(16);
var _RIPEMD160 = class extends HashMD {
  h0 = 1732584193 | 0;
  h1 = 4023233417 | 0;
  h2 = 2562383102 | 0;
  h3 = 271733878 | 0;
  h4 = 3285377520 | 0;
  constructor() {
    super(64, 20, 8, true);
  }
  get() {
    const { h0, h1, h2, h3, h4 } = this;
    return [h0, h1, h2, h3, h4];
  }
  set(h0, h1, h2, h3, h4) {
    this.h0 = h0 | 0;
    this.h1 = h1 | 0;
    this.h2 = h2 | 0;
    this.h3 = h3 | 0;
    this.h4 = h4 | 0;
  }
  _cloneInto(to) {
    (to ||= new this.constructor()).set(...this.get());
    return this._cloneIntoMeta(to);
  }
  process(view, offset) {
    for (let i = 0; i < 16; i++, offset += 4)
      BUF_160[i] = view.getUint32(offset, true);
    let al = this.h0 | 0, ar = al, bl = this.h1 | 0, br = bl, cl = this.h2 | 0, cr = cl, dl = this.h3 | 0, dr = dl, el2 = this.h4 | 0, er = el2;
    for (let group = 0; group < 5; group++) {
      const rGroup = 4 - group;
      const hbl = Kl160[group], hbr = Kr160[group];
      const rl = idxL[group], rr = idxR[group];
      const sl = shiftsL160[group], sr = shiftsR160[group];
      for (let i = 0; i < 16; i++) {
        const tl = rotl(al + ripemd_f(group, bl, cl, dl) + BUF_160[rl[i]] + hbl, sl[i]) + el2 | 0;
        al = el2, el2 = dl, dl = rotl(cl, 10) | 0, cl = bl, bl = tl;
      }
      for (let i = 0; i < 16; i++) {
        const tr = rotl(ar + ripemd_f(rGroup, br, cr, dr) + BUF_160[rr[i]] + hbr, sr[i]) + er | 0;
        ar = er, er = dr, dr = rotl(cr, 10) | 0, cr = br, br = tr;
      }
    }
    this.set(this.h1 + cl + dr | 0, this.h2 + dl + er | 0, this.h3 + el2 + ar | 0, this.h4 + al + br | 0, this.h0 + bl + cr | 0);
  }
  roundClean() {
    clean(BUF_160);
  }
  destroy() {
    this.destroyed = true;
    clean(this.buffer);
    this.set(0, 0, 0, 0, 0);
  }
};
var ripemd160 = /* @__PURE__ */ createHasher(() => new _RIPEMD160());

// ../../node_modules/@scure/base/index.js
/*! scure-base - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var freeze = (fn) => Object.freeze(fn());
function isBytes3(a) {
  return a instanceof Uint8Array || ArrayBuffer.isView(a) && a.constructor.name === "Uint8Array" && "BYTES_PER_ELEMENT" in a && a.BYTES_PER_ELEMENT === 1;
}
function abytes3(b) {
  if (!isBytes3(b))
    throw new TypeError("Uint8Array expected");
}
function afn(input) {
  if (typeof input !== "function")
    throw new TypeError("function expected");
  return true;
}
function astr(label, input) {
  if (typeof input !== "string")
    throw new TypeError(`${label}: string expected`);
  return true;
}
function anumber3(n, title = "number") {
  if (typeof n !== "number")
    throw new TypeError(`${title}: expected number, got ${typeof n}`);
  if (!Number.isSafeInteger(n))
    throw new RangeError(`${title}: expected safe integer, got ${n}`);
}
function chain(...args) {
  const id = (a) => a;
  const wrap = (a, b) => (c) => a(b(c));
  const encode = args.map((x) => x.encode).reduceRight(wrap, id);
  const decode = args.map((x) => x.decode).reduce(wrap, id);
  return { encode, decode };
}
var asciiDecoder = /* @__PURE__ */ (() => {
  try {
    const decoder = new TextDecoder();
    return decoder.decode(Uint8Array.of(65, 48, 43, 127)) === "A0+\x7F" ? decoder : void 0;
  } catch (e) {
    return void 0;
  }
})();
var B2S_CHUNK = 8192;
function charcodesToString(codes) {
  const len = codes.length;
  if (asciiDecoder !== void 0 && len >= 12)
    return asciiDecoder.decode(codes);
  if (len <= B2S_CHUNK)
    return String.fromCharCode.apply(null, codes);
  let res = "";
  for (let i = 0; i < len; i += B2S_CHUNK)
    res += String.fromCharCode.apply(null, codes.subarray(i, i + B2S_CHUNK));
  return res;
}
function alphabet(letters, aliases) {
  const len = letters.length;
  if (len > 128)
    throw new Error("alphabet: max 128 letters");
  const encTable = new Uint8Array(len);
  const decTable = new Int8Array(128).fill(-1);
  for (let i = 0; i < len; i++) {
    const code = letters.charCodeAt(i);
    if (letters.codePointAt(i) !== code || code > 127)
      throw new Error("alphabet: single-char ASCII letters only");
    encTable[i] = code;
    decTable[code] = i;
  }
  if (aliases !== void 0) {
    for (const alias of Object.keys(aliases)) {
      const code = alias.charCodeAt(0);
      const target = decTable[aliases[alias].charCodeAt(0)];
      if (alias.length !== 1 || code > 127 || target === void 0 || target === -1)
        throw new Error(`alphabet: invalid alias ${alias}`);
      decTable[code] = target;
    }
  }
  return {
    encode: (digits) => {
      const codes = new Uint8Array(digits.length);
      for (let i = 0; i < digits.length; i++) {
        const d = digits[i];
        const code = encTable[d];
        if (code === void 0)
          throw new Error(`alphabet.encode: invalid digit ${d}`);
        codes[i] = code;
      }
      return charcodesToString(codes);
    },
    decode: (input) => {
      astr("decode", input);
      const slen = input.length;
      const digits = new Uint8Array(slen);
      for (let i = 0; i < slen; i++) {
        const code = input.charCodeAt(i);
        const digit = code < 128 ? decTable[code] : -1;
        if (digit === -1)
          throw new Error(`Unknown letter "${input[i]}". Allowed: ${letters}`);
        digits[i] = digit;
      }
      return digits;
    }
  };
}
function checksum(len, fn) {
  anumber3(len);
  if (len <= 0)
    throw new RangeError(`checksum length must be positive: ${len}`);
  afn(fn);
  const _fn = fn;
  return {
    encode(data) {
      abytes3(data);
      const sum = _fn(data).slice(0, len);
      const res = new Uint8Array(data.length + len);
      res.set(data);
      res.set(sum, data.length);
      return res;
    },
    decode(data) {
      abytes3(data);
      const payload = data.slice(0, -len);
      const oldChecksum = data.slice(-len);
      const newChecksum = _fn(payload).slice(0, len);
      for (let i = 0; i < len; i++)
        if (newChecksum[i] !== oldChecksum[i])
          throw new Error("Invalid checksum");
      return payload;
    }
  };
}
var B58_GROUP = 656356768;
var RADIX_BASE_N_MAX_LENGTH = 65536;
var BASE_N_MAX_BYTES = 2048;
var BASE_N_MAX_CHARS = 4096;
var radixBaseN = (BASE, GROUP) => ({
  encode: (bytes) => {
    abytes3(bytes);
    const blen = bytes.length;
    if (blen === 0)
      return new Uint8Array(0);
    if (blen >= RADIX_BASE_N_MAX_LENGTH)
      throw new Error("invalid length");
    let zeros = 0;
    while (zeros < blen - 1 && bytes[zeros] === 0)
      zeros++;
    const nlimbs = Math.ceil(blen / 2);
    const limbs = new Uint16Array(nlimbs);
    const odd = blen & 1;
    if (odd)
      limbs[0] = bytes[0];
    for (let i = odd, j2 = odd; i < blen; i += 2, j2++)
      limbs[j2] = bytes[i] << 8 | bytes[i + 1];
    const groups = [];
    let pos = 0;
    while (pos < nlimbs) {
      let carry = 0;
      for (let i = pos; i < nlimbs; i++) {
        const cur = carry * 65536 + limbs[i];
        const q = Math.floor(cur / GROUP);
        carry = cur - q * GROUP;
        limbs[i] = q;
        if (q === 0 && i === pos)
          pos++;
      }
      groups.push(carry);
    }
    const top = groups.length - 1;
    let sig = top * 5;
    for (let v = groups[top]; ; v = Math.floor(v / BASE)) {
      sig++;
      if (v < BASE)
        break;
    }
    const res = new Uint8Array(zeros + sig);
    let j = res.length - 1;
    for (let g = 0; g < top; g++) {
      let v = groups[g];
      for (let k = 0; k < 5; k++) {
        res[j--] = v % BASE;
        v = Math.floor(v / BASE);
      }
    }
    for (let v = groups[top]; j >= zeros; v = Math.floor(v / BASE))
      res[j--] = v % BASE;
    return res;
  },
  decode: (digits) => {
    abytes3(digits);
    const dlen = digits.length;
    if (dlen === 0)
      return new Uint8Array(0);
    if (dlen >= RADIX_BASE_N_MAX_LENGTH)
      throw new Error("invalid length");
    let zeros = 0;
    while (zeros < dlen - 1 && digits[zeros] === 0)
      zeros++;
    const limbs = new Uint16Array(Math.ceil(dlen * 6 / 16) + 1);
    let used = 0;
    let i = 0;
    let group = dlen % 5 || 5;
    while (i < dlen) {
      let gval = 0;
      let factor = 1;
      for (const end = i + group; i < end; i++) {
        const d = digits[i];
        if (d >= BASE)
          throw new Error(`invalid integer: ${d}`);
        gval = gval * BASE + d;
        factor *= BASE;
      }
      group = 5;
      let carry = gval;
      for (let k = 0; k < used; k++) {
        const cur = limbs[k] * factor + carry;
        carry = Math.floor(cur / 65536);
        limbs[k] = cur - carry * 65536;
      }
      for (; carry > 0; carry = Math.floor(carry / 65536))
        limbs[used++] = carry % 65536;
    }
    const valueBytes = used === 0 ? 1 : used * 2 - (limbs[used - 1] < 256 ? 1 : 0);
    const res = new Uint8Array(zeros + valueBytes);
    let j = res.length - 1;
    for (let k = 0; k < used; k++) {
      const limb = limbs[k];
      res[j--] = limb & 255;
      if (j >= zeros)
        res[j--] = limb >> 8;
    }
    return res;
  }
});
var genBaseN = (radix, abc) => {
  const letters = alphabet(abc);
  return {
    encode(bytes) {
      abytes3(bytes);
      if (bytes.length > BASE_N_MAX_BYTES)
        throw new Error("invalid length");
      return letters.encode(radix.encode(bytes));
    },
    decode(str) {
      astr("baseN.decode", str);
      if (str.length > BASE_N_MAX_CHARS)
        throw new Error("invalid length");
      return radix.decode(letters.decode(str));
    }
  };
};
var radix58 = /* @__PURE__ */ radixBaseN(58, B58_GROUP);
var genBase58 = (abc) => genBaseN(radix58, abc);
var base58 = /* @__PURE__ */ freeze(() => genBase58("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"));
var createBase58check = (sha2562) => {
  afn(sha2562);
  const _sha256 = sha2562;
  return chain(checksum(4, (data) => _sha256(_sha256(data))), base58);
};

// ../../node_modules/@scure/bip32/index.js
/*! scure-bip32 - MIT License (c) 2022 Patricio Palladino, Paul Miller (paulmillr.com) */
var Point = /* @__PURE__ */ (() => secp256k1.Point)();
var Fn = /* @__PURE__ */ (() => Point.Fn)();
var base58check = /* @__PURE__ */ createBase58check(sha256);
var MASTER_SECRET = /* @__PURE__ */ (() => {
  return Uint8Array.from("Bitcoin seed".split(""), (char) => char.charCodeAt(0));
})();
var BITCOIN_VERSIONS = { private: 76066276, public: 76067358 };
var HARDENED_OFFSET = 2147483648;
var MAX_DEPTH = 255;
var hash160 = (data) => ripemd160(sha256(data));
var fromU32 = (data) => createView(data).getUint32(0, false);
var toU32 = (n, title = "number") => {
  if (typeof n !== "number")
    throw new TypeError(`"${title}" expected number, got type=${typeof n}`);
  if (!Number.isSafeInteger(n) || n < 0 || n > 2 ** 32 - 1)
    throw new RangeError(`"${title}" expected integer in range 0..2**32-1, got ${n}`);
  const buf = new Uint8Array(4);
  createView(buf).setUint32(0, n, false);
  return buf;
};
var validateVersions = (versions, title = "versions") => {
  if (!(typeof versions === "object" && versions !== null))
    throw new Error("versions must be an object");
  toU32(versions.private, `${title}.private`);
  toU32(versions.public, `${title}.public`);
  return versions;
};
var HDKey = class _HDKey {
  get fingerprint() {
    if (!this._pubHash) {
      throw new Error("No publicKey set!");
    }
    return fromU32(this._pubHash);
  }
  get identifier() {
    return this._pubHash ? Uint8Array.from(this._pubHash) : void 0;
  }
  get pubKeyHash() {
    return this._pubHash ? Uint8Array.from(this._pubHash) : void 0;
  }
  get privateKey() {
    return this._privateKey ? Uint8Array.from(this._privateKey) : null;
  }
  get publicKey() {
    return this._publicKey ? Uint8Array.from(this._publicKey) : null;
  }
  get chainCode() {
    return this._chainCode ? Uint8Array.from(this._chainCode) : null;
  }
  get privateExtendedKey() {
    const priv = this._privateKey;
    if (!priv) {
      throw new Error("No private key");
    }
    return base58check.encode(this.serialize(this.versions.private, concatBytes(Uint8Array.of(0), priv)));
  }
  get publicExtendedKey() {
    if (!this._publicKey) {
      throw new Error("No public key");
    }
    return base58check.encode(this.serialize(this.versions.public, this._publicKey));
  }
  static fromMasterSeed(seed, versions = BITCOIN_VERSIONS) {
    abytes(seed);
    versions = validateVersions(versions);
    if (8 * seed.length < 128 || 8 * seed.length > 512) {
      throw new RangeError("HDKey: seed length must be between 128 and 512 bits; 256 bits is advised, got " + seed.length);
    }
    const I = hmac(sha512, MASTER_SECRET, seed);
    const privateKey = I.slice(0, 32);
    const chainCode = I.slice(32);
    return new _HDKey({ versions, chainCode, privateKey });
  }
  static fromExtendedKey(base58key, versions = BITCOIN_VERSIONS) {
    versions = validateVersions(versions);
    const keyBuffer = base58check.decode(base58key);
    if (keyBuffer.length !== 78) {
      throw new Error(`HDKey: invalid extended key length: expected 78 bytes, got ${keyBuffer.length}`);
    }
    const keyView = createView(keyBuffer);
    const version = keyView.getUint32(0, false);
    const opt = {
      versions,
      depth: keyBuffer[4],
      parentFingerprint: keyView.getUint32(5, false),
      index: keyView.getUint32(9, false),
      chainCode: keyBuffer.slice(13, 45)
    };
    const key = keyBuffer.slice(45);
    const isPriv = key[0] === 0;
    if (version !== versions[isPriv ? "private" : "public"]) {
      throw new Error("Version mismatch");
    }
    if (isPriv) {
      return new _HDKey({ ...opt, privateKey: key.slice(1) });
    } else {
      return new _HDKey({ ...opt, publicKey: key });
    }
  }
  static fromJSON(json) {
    return _HDKey.fromExtendedKey("xpriv" in json ? json.xpriv : json.xpub);
  }
  versions;
  depth = 0;
  index = 0;
  parentFingerprint = 0;
  _chainCode = null;
  _privateKey;
  _publicKey;
  _pubHash;
  constructor(opt) {
    if (!opt || typeof opt !== "object") {
      throw new Error("HDKey.constructor must not be called directly");
    }
    const depth = opt.depth ?? 0;
    const index = opt.index ?? 0;
    const parentFingerprint = opt.parentFingerprint ?? 0;
    if (!Number.isSafeInteger(depth) || depth < 0 || depth > MAX_DEPTH) {
      throw new RangeError("HDKey: depth must be an integer in range 0..255");
    }
    toU32(index, "index");
    toU32(parentFingerprint, "parentFingerprint");
    if (depth === 0 && (index !== 0 || parentFingerprint !== 0)) {
      throw new Error("HDKey: zero depth with non-zero index/parent fingerprint");
    }
    this.versions = opt.versions ? validateVersions(opt.versions) : BITCOIN_VERSIONS;
    this.depth = depth;
    if (opt.chainCode)
      abytes(opt.chainCode, 32);
    this._chainCode = opt.chainCode ? Uint8Array.from(opt.chainCode) : null;
    this.index = index;
    this.parentFingerprint = parentFingerprint;
    if (opt.publicKey && opt.privateKey) {
      throw new Error("HDKey: publicKey and privateKey at same time.");
    }
    if (opt.privateKey) {
      if (!secp256k1.utils.isValidSecretKey(opt.privateKey))
        throw new Error("Invalid private key");
      this._privateKey = Uint8Array.from(opt.privateKey);
      this._publicKey = secp256k1.getPublicKey(this._privateKey, true);
    } else if (opt.publicKey) {
      this._publicKey = Point.fromBytes(opt.publicKey).toBytes(true);
    } else {
      throw new Error("HDKey: no public or private key provided");
    }
    this._pubHash = hash160(this._publicKey);
  }
  derive(path) {
    if (!/^[mM]'?/.test(path)) {
      throw new Error('Path must start with "m" or "M"');
    }
    if (/^[mM]'?$/.test(path)) {
      return this;
    }
    const parts = path.replace(/^[mM]'?\//, "").split("/");
    if (parts.length > MAX_DEPTH - this.depth) {
      throw new Error("HDKey: path exceeds the serializable depth 255");
    }
    let child = this;
    for (const c of parts) {
      const m = /^(\d+)('?)$/.exec(c);
      const m1 = m && m[1];
      if (!m || m.length !== 3 || typeof m1 !== "string")
        throw new Error("invalid child index: " + c);
      let idx = +m1;
      if (!Number.isSafeInteger(idx) || idx >= HARDENED_OFFSET) {
        throw new Error("Invalid index");
      }
      if (m[2] === "'") {
        idx += HARDENED_OFFSET;
      }
      child = child.deriveChild(idx);
    }
    return child;
  }
  deriveChild(index) {
    return this._deriveChild(index);
  }
  /** Test-only implementation seam. Production callers must use deriveChild(). */
  _deriveChild(index, _I) {
    if (!this._publicKey || !this._chainCode) {
      throw new Error("No publicKey or chainCode set");
    }
    let data = toU32(index, "index");
    if (index >= HARDENED_OFFSET) {
      const priv = this._privateKey;
      if (!priv) {
        throw new Error("Could not derive hardened child key");
      }
      data = concatBytes(Uint8Array.of(0), priv, data);
    } else {
      data = concatBytes(this._publicKey, data);
    }
    const out = _I || hmac(sha512, this._chainCode, data);
    abytes(out, 64);
    const childTweak = out.slice(0, 32);
    const chainCode = out.slice(32);
    const opt = {
      versions: this.versions,
      chainCode,
      depth: this.depth + 1,
      parentFingerprint: this.fingerprint,
      index
    };
    if (opt.depth > MAX_DEPTH) {
      throw new Error("HDKey: depth exceeds the serializable value 255");
    }
    const retry = () => {
      const maxIndex = this._privateKey ? 2 ** 32 - 1 : HARDENED_OFFSET - 1;
      if (index >= maxIndex) {
        throw new Error(`HDKey: cannot retry child derivation at index ${index}`);
      }
      return this.deriveChild(index + 1);
    };
    const ctweak = Fn.fromBytes(childTweak, true);
    if (!Fn.isValid(ctweak))
      return retry();
    if (this._privateKey) {
      const added = Fn.create(Fn.fromBytes(this._privateKey) + ctweak);
      if (!Fn.isValidNot0(added))
        return retry();
      opt.privateKey = Fn.toBytes(added);
    } else {
      const point = Point.fromBytes(this._publicKey);
      const added = ctweak === 0n ? point : point.add(Point.BASE.multiply(ctweak));
      if (added.equals(Point.ZERO))
        return retry();
      opt.publicKey = added.toBytes(true);
    }
    return new _HDKey(opt);
  }
  sign(hash) {
    if (!this._privateKey) {
      throw new Error("No privateKey set!");
    }
    abytes(hash, 32);
    return secp256k1.sign(hash, this._privateKey, { prehash: false });
  }
  verify(hash, signature) {
    abytes(hash, 32);
    abytes(signature, 64);
    if (!this._publicKey) {
      throw new Error("No publicKey set!");
    }
    return secp256k1.verify(signature, hash, this._publicKey, { prehash: false });
  }
  wipePrivateData() {
    if (this._privateKey) {
      this._privateKey.fill(0);
      this._privateKey = void 0;
    }
    return this;
  }
  // TODO(v3): Make automatic JSON serialization public-only so JSON.stringify cannot expose xpriv.
  toJSON() {
    return this.toPrivateJSON();
  }
  /**
   * Explicitly exports private key material. Treat the returned value as a secret.
   */
  toPrivateJSON() {
    return {
      xpriv: this.privateExtendedKey,
      xpub: this.publicExtendedKey
    };
  }
  serialize(version, key) {
    if (!this._chainCode) {
      throw new Error("No chainCode set");
    }
    abytes(key, 33);
    return concatBytes(toU32(version, "version"), new Uint8Array([this.depth]), toU32(this.parentFingerprint, "parentFingerprint"), toU32(this.index, "index"), this._chainCode, key);
  }
};

// src/eth.js
var strip0x = (h) => h.startsWith("0x") || h.startsWith("0X") ? h.slice(2) : h;
var hex0x = (b) => "0x" + bytesToHex(b);
function bigBytes(n, what = "integer") {
  if (typeof n !== "bigint") throw new TypeError(`${what} must be a BigInt, got ${typeof n}`);
  if (n < 0n) throw new Error(`negative ${what}`);
  if (n === 0n) return new Uint8Array(0);
  let h = n.toString(16);
  if (h.length % 2) h = "0" + h;
  return hexToBytes(h);
}
function rlp(item) {
  if (item instanceof Uint8Array) {
    if (item.length === 1 && item[0] < 128) return item;
    return concatBytes(rlpLength(item.length, 128), item);
  }
  const body = concatBytes(...item.map(rlp));
  return concatBytes(rlpLength(body.length, 192), body);
}
function rlpLength(len, offset) {
  if (len < 56) return Uint8Array.of(offset + len);
  const lb = bigBytes(BigInt(len));
  return concatBytes(Uint8Array.of(offset + 55 + lb.length), lb);
}
function addressOfPub(pubUncompressed) {
  return hex0x(keccak_256(pubUncompressed.slice(1)).slice(12));
}
function addressOf(secret) {
  return toChecksum(addressOfPub(secp256k1.getPublicKey(secret, false)));
}
function toChecksum(address) {
  const body = strip0x(address).toLowerCase();
  if (!/^[0-9a-f]{40}$/.test(body)) throw new Error("not an address");
  const digest = bytesToHex(keccak_256(utf8ToBytes(body)));
  let out = "0x";
  for (let i = 0; i < 40; i++) out += parseInt(digest[i], 16) >= 8 ? body[i].toUpperCase() : body[i];
  return out;
}
function signEip1559(tx2, secret) {
  const fields = [
    bigBytes(tx2.chain_id, "chain id"),
    bigBytes(tx2.nonce, "nonce"),
    bigBytes(tx2.max_priority_fee_per_gas, "priority fee"),
    bigBytes(tx2.max_fee_per_gas, "max fee"),
    bigBytes(tx2.gas_limit, "gas limit"),
    hexToBytes(strip0x(tx2.to).toLowerCase()),
    bigBytes(tx2.value, "value"),
    hexToBytes(strip0x(tx2.data)),
    []
  ];
  const digest = keccak_256(concatBytes(Uint8Array.of(2), rlp(fields)));
  const sigBytes = secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: "recovered", extraEntropy: false });
  const sig = secp256k1.Signature.fromBytes(sigBytes, "recovered");
  const raw = concatBytes(Uint8Array.of(2), rlp([...fields, bigBytes(BigInt(sig.recovery)), bigBytes(sig.r), bigBytes(sig.s)]));
  return { raw, hash: hex0x(keccak_256(raw)) };
}
function newSecret() {
  return secp256k1.utils.randomSecretKey();
}
function checkSecret(secret) {
  if (!(secret instanceof Uint8Array) || secret.length !== 32 || !secp256k1.utils.isValidSecretKey(secret)) {
    throw new Error("not a valid private key");
  }
  return secret;
}
async function aesCtr(key16, iv, data) {
  const key = await crypto.subtle.importKey("raw", key16, "AES-CTR", false, ["encrypt"]);
  return new Uint8Array(await crypto.subtle.encrypt({ name: "AES-CTR", counter: iv, length: 128 }, key, data));
}
var KEYSTORE_N = 2 ** 18;
async function encryptKeystore(secret, passphrase, n = KEYSTORE_N, onProgress) {
  const salt = randomBytes(32), iv = randomBytes(16);
  const dk = await scryptAsync(utf8ToBytes(passphrase), salt, { N: n, r: 8, p: 1, dkLen: 32, maxmem: 2 ** 30, onProgress });
  const ciphertext = await aesCtr(dk.slice(0, 16), iv, secret);
  const mac = keccak_256(concatBytes(dk.slice(16, 32), ciphertext));
  dk.fill(0);
  const id = bytesToHex(randomBytes(16)).replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
  return {
    address: strip0x(addressOf(secret)).toLowerCase(),
    id,
    version: 3,
    crypto: {
      cipher: "aes-128-ctr",
      cipherparams: { iv: bytesToHex(iv) },
      ciphertext: bytesToHex(ciphertext),
      kdf: "scrypt",
      kdfparams: { dklen: 32, n, r: 8, p: 1, salt: bytesToHex(salt) },
      mac: bytesToHex(mac)
    }
  };
}
async function decryptKeystore(json, passphrase) {
  const ks = typeof json === "string" ? JSON.parse(json) : json;
  const c = ks && (ks.crypto || ks.Crypto);
  if (!c || ks.version !== 3 || c.cipher !== "aes-128-ctr") throw new Error("not a V3 keystore (aes-128-ctr)");
  const p = c.kdfparams, salt = hexToBytes(p.salt), pass = utf8ToBytes(passphrase);
  let dk;
  if (c.kdf === "scrypt") {
    if (p.n > 2 ** 20 || p.r > 16 || p.p > 4) throw new Error("keystore scrypt parameters too large for a phone");
    dk = await scryptAsync(pass, salt, { N: p.n, r: p.r, p: p.p, dkLen: p.dklen, maxmem: 2 ** 31 });
  } else if (c.kdf === "pbkdf2") {
    if (p.prf !== "hmac-sha256") throw new Error("unsupported keystore pbkdf2 prf");
    dk = await pbkdf2Async(sha256, pass, salt, { c: p.c, dkLen: p.dklen });
  } else throw new Error("unsupported keystore kdf " + String(c.kdf));
  const ciphertext = hexToBytes(c.ciphertext);
  const mac = bytesToHex(keccak_256(concatBytes(dk.slice(16, 32), ciphertext)));
  if (!equalHex(mac, String(c.mac).toLowerCase())) {
    dk.fill(0);
    throw new Error("wrong passphrase");
  }
  const secret = await aesCtr(dk.slice(0, 16), hexToBytes(c.cipherparams.iv), ciphertext);
  dk.fill(0);
  return checkSecret(secret);
}
function equalHex(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return d === 0;
}
var ETH_PATH = "m/44'/60'/0'/0/0";
async function secretFromPhrase(phrase, path = ETH_PATH) {
  const words = phrase.trim().toLowerCase().split(/\s+/).join(" ");
  if (!validateMnemonic(words, wordlist)) throw new Error("not a valid BIP-39 phrase (check the words and their order)");
  const seed = await mnemonicToSeed(words);
  const key = HDKey.fromMasterSeed(seed).derive(path);
  seed.fill(0);
  return checkSecret(Uint8Array.from(key.privateKey));
}

// src/vault.js
var INFO = utf8ToBytes("owliabot companion main key v1");
var PBKDF2_ROUNDS = 6e5;
var b64 = (b) => btoa(String.fromCharCode(...b));
var unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
var VaultError = class extends Error {
};
async function load() {
  return await get("kv", "vault") || null;
}
function prfSupported() {
  return !!(window.PublicKeyCredential && navigator.credentials);
}
async function hkdfKey(material, salt) {
  const base = await crypto.subtle.importKey("raw", material, "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt, info: INFO },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"]
  );
}
async function pbkdf2Key(passphrase, salt) {
  const base = await crypto.subtle.importKey("raw", utf8ToBytes(passphrase), "PBKDF2", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "PBKDF2", hash: "SHA-256", salt, iterations: PBKDF2_ROUNDS },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"]
  );
}
function uvChecked(assertion) {
  const flags = new Uint8Array(assertion.response.authenticatorData)[32];
  if (!(flags & 4)) throw new VaultError("the passkey did not verify you (no biometrics or PIN): nothing was signed");
}
async function createPasskey(label) {
  const cred = await navigator.credentials.create({ publicKey: {
    rp: { name: "OwliaBot companion", id: location.hostname },
    user: { id: randomBytes(16), name: label, displayName: label },
    challenge: randomBytes(32),
    pubKeyCredParams: [{ type: "public-key", alg: -7 }, { type: "public-key", alg: -8 }, { type: "public-key", alg: -257 }],
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
    extensions: { prf: {} }
  } });
  const ext = cred.getClientExtensionResults();
  if (!ext.prf || ext.prf.enabled === false) throw new VaultError("this passkey has no PRF");
  return b64(new Uint8Array(cred.rawId));
}
async function prfOutput(credentialId, salt) {
  const assertion = await navigator.credentials.get({ publicKey: {
    challenge: randomBytes(32),
    rpId: location.hostname,
    userVerification: "required",
    allowCredentials: [{ type: "public-key", id: unb64(credentialId) }],
    extensions: { prf: { eval: { first: salt } } }
  } });
  uvChecked(assertion);
  const res = assertion.getClientExtensionResults();
  const first = res.prf && res.prf.results && res.prf.results.first;
  if (!first) throw new VaultError("the passkey gave no PRF output");
  return new Uint8Array(first);
}
async function seal(secret, how) {
  checkSecret(secret);
  const salt = randomBytes(32), iv = randomBytes(12);
  let key, kind;
  if (how.passkey) {
    const out = await prfOutput(how.passkey, salt);
    key = await hkdfKey(out, salt);
    out.fill(0);
    kind = "passkey";
  } else {
    if (!how.passphrase || how.passphrase.length < 8) throw new VaultError("the passphrase must be at least 8 characters");
    key = await pbkdf2Key(how.passphrase, salt);
    kind = "passphrase";
  }
  const address = addressOf(secret);
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: utf8ToBytes(address) }, key, secret));
  const vault = {
    kind,
    credential_id: how.passkey || null,
    salt: b64(salt),
    iv: b64(iv),
    ciphertext: b64(ct),
    address,
    backed_up: false,
    created_at: Date.now()
  };
  await put("kv", "vault", vault);
  return vault;
}
async function withSecret(passphrase, fn) {
  const vault = await load();
  if (!vault) throw new VaultError("no main key on this device");
  const salt = unb64(vault.salt);
  let key;
  if (vault.kind === "passkey") {
    const out = await prfOutput(vault.credential_id, salt);
    key = await hkdfKey(out, salt);
    out.fill(0);
  } else {
    key = await pbkdf2Key(passphrase || "", salt);
  }
  let secret;
  try {
    secret = new Uint8Array(await crypto.subtle.decrypt({
      name: "AES-GCM",
      iv: unb64(vault.iv),
      additionalData: utf8ToBytes(vault.address)
    }, key, unb64(vault.ciphertext)));
  } catch {
    throw new VaultError(vault.kind === "passkey" ? "that passkey does not unlock this key: nothing was signed" : "wrong passphrase: nothing was signed");
  }
  try {
    if (addressOf(secret) !== vault.address) throw new VaultError("the stored key does not match its address");
    return await fn(secret);
  } finally {
    secret.fill(0);
  }
}
async function markBackedUp() {
  const vault = await load();
  vault.backed_up = true;
  await put("kv", "vault", vault);
}

// ../../node_modules/@noble/curves/abstract/edwards.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var _0n7 = /* @__PURE__ */ BigInt(0);
var _1n6 = /* @__PURE__ */ BigInt(1);
var _2n5 = /* @__PURE__ */ BigInt(2);
var _4n4 = /* @__PURE__ */ BigInt(4);
var _8n2 = /* @__PURE__ */ BigInt(8);
function isEdValidXY(Fp2, CURVE, x, y) {
  const x2 = Fp2.sqr(x);
  const y2 = Fp2.sqr(y);
  const left = Fp2.add(Fp2.mul(CURVE.a, x2), y2);
  const right = Fp2.add(Fp2.ONE, Fp2.mul(CURVE.d, Fp2.mul(x2, y2)));
  return Fp2.eql(left, right);
}
function edwards(params, extraOpts = {}) {
  validateObject(extraOpts, {}, {}, "extraOpts");
  const opts = extraOpts;
  const validated = createCurveFields("edwards", params, opts, opts.FpFnLE);
  const { Fp: Fp2, Fn: Fn2 } = validated;
  let CURVE = validated.CURVE;
  const { h: cofactor } = CURVE;
  if (FpLegendre(Fp2, CURVE.a) !== 1)
    throw new Error("edwards: CURVE.a must be a square in Fp for complete addition formulas");
  if (FpLegendre(Fp2, CURVE.d) !== -1)
    throw new Error("edwards: CURVE.d must be a non-square in Fp for complete addition formulas");
  validateObject(opts, {}, { uvRatio: "function", randomBytes: "function" });
  const randomBytes3 = opts.randomBytes === void 0 ? randomBytes2 : opts.randomBytes;
  const MASK = _2n5 << BigInt(Fp2.BYTES * 8) - _1n6;
  function isOdd(n) {
    if (!Fp2.isOdd)
      throw new Error("Field does not have .isOdd()");
    return Fp2.isOdd(n);
  }
  const uvRatio2 = opts.uvRatio === void 0 ? (u, v) => {
    try {
      return { isValid: true, value: Fp2.sqrt(Fp2.div(u, v)) };
    } catch (e) {
      return { isValid: false, value: _0n7 };
    }
  } : opts.uvRatio;
  if (!isEdValidXY(Fp2, CURVE, CURVE.Gx, CURVE.Gy))
    throw new Error("bad curve params: generator point");
  const mulA = Fp2.eql(CURVE.a, Fp2.neg(Fp2.ONE)) ? (x) => Fp2.neg(x) : Fp2.eql(CURVE.a, Fp2.ONE) ? (x) => x : (x) => Fp2.mul(CURVE.a, x);
  function acoord(title, n, banZero = false) {
    const min = banZero ? _1n6 : _0n7;
    aInRange("coordinate " + title, n, min, MASK);
    return n;
  }
  function aedpoint(other) {
    if (!(other instanceof Point2))
      throw new Error("EdwardsPoint expected");
  }
  class Point2 {
    static BASE = new Point2(CURVE.Gx, CURVE.Gy, Fp2.ONE, Fp2.mul(CURVE.Gx, CURVE.Gy));
    static ZERO = new Point2(Fp2.ZERO, Fp2.ONE, Fp2.ONE, Fp2.ZERO);
    static Fp = Fp2;
    static Fn = Fn2;
    X;
    Y;
    Z;
    T;
    constructor(X, Y, Z, T) {
      this.X = acoord("x", X);
      this.Y = acoord("y", Y);
      this.Z = acoord("z", Z, true);
      this.T = acoord("t", T);
      Object.freeze(this);
    }
    static CURVE() {
      return CURVE;
    }
    /**
     * Create one extended Edwards point from affine coordinates.
     * Does NOT validate that the point is on-curve or torsion-free.
     * Use `.assertValidity()` on adversarial inputs.
     */
    static fromAffine(p) {
      if (p instanceof Point2)
        throw new Error("extended point not allowed");
      const { x, y } = p || {};
      acoord("x", x);
      acoord("y", y);
      return new Point2(x, y, Fp2.ONE, Fp2.mul(x, y));
    }
    // Uses algo from RFC8032 5.1.3.
    static fromBytes(bytes, zip215 = false) {
      const len = Fp2.BYTES;
      const { a, d } = CURVE;
      bytes = copyBytes(abytes2(bytes, len, "point"));
      abool2(zip215, "zip215");
      const normed = copyBytes(bytes);
      const lastByte = bytes[len - 1];
      normed[len - 1] = lastByte & ~128;
      const y = bytesToNumberLE(normed);
      const max = zip215 ? MASK : Fp2.ORDER;
      aInRange("point.y", y, _0n7, max);
      const y2 = Fp2.sqr(y);
      const u = Fp2.sub(y2, Fp2.ONE);
      const v = Fp2.sub(Fp2.mulN(d, y2), a);
      let { isValid, value: x } = uvRatio2(u, v);
      if (!isValid)
        throw new Error("bad point: invalid y coordinate");
      const isXOdd = isOdd(x);
      const isLastByteOdd = (lastByte & 128) !== 0;
      if (!zip215 && Fp2.is0(x) && isLastByteOdd)
        throw new Error("bad point: x=0 and x_0=1");
      if (isLastByteOdd !== isXOdd)
        x = Fp2.neg(x);
      return Point2.fromAffine({ x, y });
    }
    static fromHex(hex, zip215 = false) {
      return Point2.fromBytes(hexToBytes2(hex), zip215);
    }
    get x() {
      return this.toAffine().x;
    }
    get y() {
      return this.toAffine().y;
    }
    precompute(windowSize = 6, isLazy = true) {
      wnaf.setWindowSize(this, windowSize);
      if (!isLazy)
        this.multiply(_2n5);
      return this;
    }
    // Useful in fromAffine() - not for fromBytes(), which always created valid points.
    assertValidity() {
      const p = this;
      const { a, d } = CURVE;
      if (p.is0())
        throw new Error("bad point: ZERO");
      const { X, Y, Z, T } = p;
      const X2 = Fp2.sqr(X);
      const Y2 = Fp2.sqr(Y);
      const Z2 = Fp2.sqr(Z);
      const Z4 = Fp2.sqr(Z2);
      const aX2 = Fp2.mul(X2, a);
      const left = Fp2.mul(Fp2.add(aX2, Y2), Z2);
      const right = Fp2.add(Z4, Fp2.mul(d, Fp2.mul(X2, Y2)));
      if (!Fp2.eql(left, right))
        throw new Error("bad point: equation left != right (1)");
      const XY = Fp2.mul(X, Y);
      const ZT = Fp2.mul(Z, T);
      if (!Fp2.eql(XY, ZT))
        throw new Error("bad point: equation left != right (2)");
    }
    // Compare one point to another.
    equals(other) {
      aedpoint(other);
      const { X: X1, Y: Y1, Z: Z1 } = this;
      const { X: X2, Y: Y2, Z: Z2 } = other;
      const X1Z2 = Fp2.mul(X1, Z2);
      const X2Z1 = Fp2.mul(X2, Z1);
      const Y1Z2 = Fp2.mul(Y1, Z2);
      const Y2Z1 = Fp2.mul(Y2, Z1);
      return Fp2.eql(X1Z2, X2Z1) && Fp2.eql(Y1Z2, Y2Z1);
    }
    is0() {
      return this.equals(Point2.ZERO);
    }
    negate() {
      return new Point2(Fp2.neg(this.X), this.Y, this.Z, Fp2.neg(this.T));
    }
    // Fast algo for doubling Extended Point.
    // https://hyperelliptic.org/EFD/g1p/auto-twisted-extended.html#doubling-dbl-2008-hwcd
    // Cost: 4M + 4S + 1*a + 6add + 1*2.
    double() {
      const { X: X1, Y: Y1, Z: Z1 } = this;
      const A = Fp2.sqr(X1);
      const B2 = Fp2.sqr(Y1);
      const C = Fp2.mul(Fp2.sqr(Z1), _2n5);
      const D = mulA(A);
      const x1y1 = Fp2.addN(X1, Y1);
      const E = Fp2.sub(Fp2.subN(Fp2.sqr(x1y1), A), B2);
      const G = Fp2.addN(D, B2);
      const F = Fp2.subN(G, C);
      const H = Fp2.subN(D, B2);
      const X3 = Fp2.mul(E, F);
      const Y3 = Fp2.mul(G, H);
      const T3 = Fp2.mul(E, H);
      const Z3 = Fp2.mul(F, G);
      return new Point2(X3, Y3, Z3, T3);
    }
    // Fast algo for adding 2 Extended Points.
    // https://hyperelliptic.org/EFD/g1p/auto-twisted-extended.html#addition-add-2008-hwcd
    // Cost: 9M + 1*a + 1*d + 7add.
    add(other) {
      aedpoint(other);
      const { d } = CURVE;
      const { X: X1, Y: Y1, Z: Z1, T: T1 } = this;
      const { X: X2, Y: Y2, Z: Z2, T: T2 } = other;
      const A = Fp2.mul(X1, X2);
      const B2 = Fp2.mul(Y1, Y2);
      const C = Fp2.mul(Fp2.mulN(T1, d), T2);
      const D = Fp2.mul(Z1, Z2);
      const E = Fp2.sub(Fp2.subN(Fp2.mulN(Fp2.addN(X1, Y1), Fp2.addN(X2, Y2)), A), B2);
      const F = Fp2.subN(D, C);
      const G = Fp2.addN(D, C);
      const H = Fp2.sub(B2, mulA(A));
      const X3 = Fp2.mul(E, F);
      const Y3 = Fp2.mul(G, H);
      const T3 = Fp2.mul(E, H);
      const Z3 = Fp2.mul(F, G);
      return new Point2(X3, Y3, Z3, T3);
    }
    subtract(other) {
      aedpoint(other);
      return this.add(other.negate());
    }
    // Constant-time multiplication.
    multiply(scalar) {
      if (!Fn2.isValidNot0(scalar))
        throw new RangeError("invalid scalar: expected 1 <= sc < curve.n");
      const { p, f } = wnaf.mulSecret(this, scalar, cofactor, normalize2);
      return normalize2([p, f])[0];
    }
    // Non-constant-time multiplication. Uses double-and-add algorithm.
    // It's faster, but should only be used when you don't care about
    // an exposed private key e.g. sig verification.
    // Keeps the same subgroup-scalar contract: 0 is allowed for public-scalar callers, but
    // n and larger values are rejected instead of being reduced mod n to the identity point.
    multiplyUnsafe(scalar) {
      if (!Fn2.isValid(scalar))
        throw new RangeError("invalid scalar: expected 0 <= sc < curve.n");
      if (scalar === _0n7)
        return Point2.ZERO;
      if (this.is0() || scalar === _1n6)
        return this;
      return wnaf.mulUnsafe(this, scalar, normalize2);
    }
    // Checks if point is of small order.
    // If you add something to small order point, you will have "dirty"
    // point with torsion component.
    // Clears cofactor and checks if the result is 0.
    isSmallOrder() {
      return this.clearCofactor().is0();
    }
    // Multiplies point by curve order and checks if the result is 0.
    // Returns `false` is the point is dirty.
    isTorsionFree() {
      return wnaf.mulUnsafe(this, CURVE.n).is0();
    }
    // Converts Extended point to default (x, y) coordinates.
    // Can accept precomputed Z^-1 - for example, from invertBatch.
    toAffine(invertedZ) {
      const p = this;
      let iz = invertedZ;
      if (iz != null && typeof iz !== "bigint")
        throw new TypeError('"invertedZ" expected bigint, got type=' + typeof iz);
      const { X, Y, Z } = p;
      const is0 = p.is0();
      if (iz == null)
        iz = is0 ? Fp2.create(_8n2) : Fp2.inv(Z);
      const x = Fp2.mul(X, iz);
      const y = Fp2.mul(Y, iz);
      const zz = Fp2.mul(Z, iz);
      if (is0)
        return { x: Fp2.ZERO, y: Fp2.ONE };
      if (!Fp2.eql(zz, Fp2.ONE))
        throw new Error("invZ was invalid");
      return { x, y };
    }
    clearCofactor() {
      if (cofactor === _1n6)
        return this;
      if (cofactor === _2n5)
        return this.double();
      if (cofactor === _4n4)
        return this.double().double();
      if (cofactor === _8n2)
        return this.double().double().double();
      return this.multiplyUnsafe(cofactor);
    }
    toBytes() {
      const { x, y } = this.toAffine();
      const bytes = Fp2.toBytes(y);
      bytes[bytes.length - 1] |= isOdd(x) ? 128 : 0;
      return bytes;
    }
    toHex() {
      return bytesToHex2(this.toBytes());
    }
    toString() {
      return `<Point ${this.is0() ? "ZERO" : this.toHex()}>`;
    }
  }
  const normalize2 = (points) => normalizeZ(Point2, points);
  const wnaf = new ScalarMultiplier(Point2, randomBytes3);
  if (wnaf.bits >= 6)
    Point2.BASE.precompute(6);
  Object.freeze(Point2.prototype);
  Object.freeze(Point2);
  return Point2;
}
function eddsa(Point2, cHash, eddsaOpts = {}) {
  validatePointCons(Point2);
  if (typeof cHash !== "function")
    throw new Error('"hash" function param is required');
  const hash = cHash;
  const opts = eddsaOpts;
  validateObject(opts, {}, {
    adjustScalarBytes: "function",
    randomBytes: "function",
    domain: "function",
    prehash: "function",
    zip215: "boolean",
    mapToCurve: "function",
    toMontgomery: "function",
    toMontgomerySecret: "function"
  });
  const { prehash } = opts;
  const { BASE, Fp: Fp2, Fn: Fn2 } = Point2;
  const outputLen = hash.outputLen;
  const expectedLen = 2 * Fp2.BYTES;
  if (outputLen !== void 0) {
    asafenumber(outputLen, "hash.outputLen");
    if (outputLen !== expectedLen)
      throw new Error(`hash.outputLen must be ${expectedLen}, got ${outputLen}`);
  }
  const randomBytes3 = opts.randomBytes === void 0 ? randomBytes2 : opts.randomBytes;
  const toMontgomery2 = opts.toMontgomery;
  const toMontgomerySecret2 = opts.toMontgomerySecret;
  const adjustScalarBytes2 = opts.adjustScalarBytes === void 0 ? (bytes) => bytes : opts.adjustScalarBytes;
  const domain = opts.domain === void 0 ? (data, ctx, phflag) => {
    abool2(phflag, "phflag");
    if (ctx.length || phflag)
      throw new Error("Contexts/pre-hash are not supported");
    return data;
  } : opts.domain;
  function modN_LE(hash2) {
    return Fn2.create(bytesToNumberLE(hash2));
  }
  function getPrivateScalar(key) {
    const len = lengths.secretKey;
    abytes2(key, lengths.secretKey, "secretKey");
    const hashed = abytes2(hash(key), 2 * len, "hashedSecretKey");
    const head = adjustScalarBytes2(hashed.slice(0, len));
    const prefix = hashed.slice(len, 2 * len);
    const scalar = modN_LE(head);
    return { head, prefix, scalar };
  }
  function getExtendedPublicKey(secretKey) {
    const { head, prefix, scalar } = getPrivateScalar(secretKey);
    const point = BASE.multiply(scalar);
    const pointBytes = point.toBytes();
    return { head, prefix, scalar, point, pointBytes };
  }
  function getPublicKey(secretKey) {
    return getExtendedPublicKey(secretKey).pointBytes;
  }
  function hashDomainToScalar(context = Uint8Array.of(), ...msgs) {
    const msg = concatBytes2(...msgs);
    return modN_LE(hash(domain(msg, abytes2(context, void 0, "context"), !!prehash)));
  }
  function sign(msg, secretKey, options = {}) {
    validateObject(options, {}, {}, "options");
    msg = copyBytes(abytes2(msg, void 0, "message"));
    if (prehash)
      msg = prehash(msg);
    const { prefix, scalar, pointBytes } = getExtendedPublicKey(secretKey);
    const r = hashDomainToScalar(options.context, prefix, msg);
    const R = BASE.multiply(r).toBytes();
    const k = hashDomainToScalar(options.context, R, pointBytes, msg);
    const s = Fn2.create(r + k * scalar);
    if (!Fn2.isValid(s))
      throw new Error("sign failed: invalid s");
    const rs = concatBytes2(R, Fn2.toBytes(s));
    return abytes2(rs, lengths.signature, "result");
  }
  const verifyOpts = {
    zip215: opts.zip215
  };
  function verify(sig, msg, publicKey, options = verifyOpts) {
    validateObject(options);
    const { context } = options;
    const zip215 = options.zip215 === void 0 ? !!verifyOpts.zip215 : options.zip215;
    const len = lengths.signature;
    sig = abytes2(sig, len, "signature");
    msg = abytes2(msg, void 0, "message");
    publicKey = abytes2(publicKey, lengths.publicKey, "publicKey");
    if (zip215 !== void 0)
      abool2(zip215, "zip215");
    if (prehash)
      msg = prehash(msg);
    const mid = len / 2;
    const r = sig.subarray(0, mid);
    const s = bytesToNumberLE(sig.subarray(mid, len));
    let A, R, SB;
    try {
      A = Point2.fromBytes(publicKey, zip215);
      R = Point2.fromBytes(r, zip215);
      SB = BASE.multiplyUnsafe(s);
    } catch (error) {
      return false;
    }
    if (!zip215 && A.isSmallOrder())
      return false;
    const k = hashDomainToScalar(context, r, publicKey, msg);
    const RkA = R.add(A.multiplyUnsafe(k));
    return RkA.subtract(SB).clearCofactor().is0();
  }
  const _size = Fp2.BYTES;
  const lengths = {
    secretKey: _size,
    publicKey: _size,
    signature: 2 * _size,
    seed: _size
  };
  function randomSecretKey(seed) {
    seed = seed === void 0 ? randomBytes3(lengths.seed) : seed;
    return abytes2(seed, lengths.seed, "seed");
  }
  function isValidSecretKey(key) {
    return isBytes2(key) && key.length === lengths.secretKey;
  }
  function isValidPublicKey(key, zip215) {
    try {
      return !!Point2.fromBytes(key, zip215 === void 0 ? verifyOpts.zip215 : zip215);
    } catch (error) {
      return false;
    }
  }
  const utils = {
    getExtendedPublicKey,
    randomSecretKey,
    isValidSecretKey,
    isValidPublicKey,
    /** Converts an Edwards public key to a companion Montgomery public key. */
    toMontgomery(publicKey) {
      if (toMontgomery2 === void 0)
        throw new Error("Montgomery conversion is not supported for this curve");
      return toMontgomery2(Point2.fromBytes(publicKey));
    },
    toMontgomerySecret(secretKey) {
      if (toMontgomerySecret2 === void 0)
        throw new Error("Montgomery conversion is not supported for this curve");
      return toMontgomerySecret2(secretKey);
    }
  };
  Object.freeze(lengths);
  Object.freeze(utils);
  return Object.freeze({
    keygen: createKeygen(randomSecretKey, getPublicKey),
    getPublicKey,
    sign,
    verify,
    utils,
    Point: Point2,
    lengths
  });
}

// ../../node_modules/@noble/curves/ed25519.js
/*! noble-curves - MIT License (c) 2022 Paul Miller (paulmillr.com) */
var _1n7 = /* @__PURE__ */ BigInt(1);
var _2n6 = /* @__PURE__ */ BigInt(2);
var _5n2 = /* @__PURE__ */ BigInt(5);
var _8n3 = /* @__PURE__ */ BigInt(8);
var ed25519_CURVE_p = /* @__PURE__ */ BigInt("0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffed");
var ed25519_CURVE = /* @__PURE__ */ (() => ({
  p: ed25519_CURVE_p,
  n: BigInt("0x1000000000000000000000000000000014def9dea2f79cd65812631a5cf5d3ed"),
  h: _8n3,
  a: BigInt("0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffec"),
  d: BigInt("0x52036cee2b6ffe738cc740797779e89800700a4d4141d8ab75eb4dca135978a3"),
  Gx: BigInt("0x216936d3cd6e53fec0a4e231fdd6dc5c692cc7609525a7b2c9562d608f25d51a"),
  Gy: BigInt("0x6666666666666666666666666666666666666666666666666666666666666658")
}))();
function ed25519_pow_2_252_3(x) {
  const _10n = BigInt(10), _20n = BigInt(20), _40n = BigInt(40), _80n = BigInt(80);
  const P = ed25519_CURVE_p;
  const x2 = x * x % P;
  const b2 = x2 * x % P;
  const b4 = pow2(b2, _2n6, P) * b2 % P;
  const b5 = pow2(b4, _1n7, P) * x % P;
  const b10 = pow2(b5, _5n2, P) * b5 % P;
  const b20 = pow2(b10, _10n, P) * b10 % P;
  const b40 = pow2(b20, _20n, P) * b20 % P;
  const b80 = pow2(b40, _40n, P) * b40 % P;
  const b160 = pow2(b80, _80n, P) * b80 % P;
  const b240 = pow2(b160, _80n, P) * b80 % P;
  const b250 = pow2(b240, _10n, P) * b10 % P;
  const pow_p_5_8 = pow2(b250, _2n6, P) * x % P;
  return { pow_p_5_8, b2 };
}
function adjustScalarBytes(bytes) {
  bytes[0] &= 248;
  bytes[31] &= 127;
  bytes[31] |= 64;
  return bytes;
}
var ED25519_SQRT_M1 = /* @__PURE__ */ BigInt("19681161376707505956807079304988542015446066515923890162744021073123829784752");
function uvRatio(u, v) {
  const P = ed25519_CURVE_p;
  const v3 = mod(v * v * v, P);
  const v7 = mod(v3 * v3 * v, P);
  const pow3 = ed25519_pow_2_252_3(u * v7).pow_p_5_8;
  let x = mod(u * v3 * pow3, P);
  const vx2 = mod(v * x * x, P);
  const root1 = x;
  const root2 = mod(x * ED25519_SQRT_M1, P);
  const useRoot1 = vx2 === u;
  const useRoot2 = vx2 === mod(-u, P);
  const noRoot = vx2 === mod(-u * ED25519_SQRT_M1, P);
  if (useRoot1)
    x = root1;
  if (useRoot2 || noRoot)
    x = root2;
  if (isNegativeLE(x, P))
    x = mod(-x, P);
  return { isValid: useRoot1 || useRoot2, value: x };
}
var ed25519_Point = /* @__PURE__ */ edwards(ed25519_CURVE, { uvRatio });
var Fp = /* @__PURE__ */ (() => ed25519_Point.Fp)();
function toMontgomery(point) {
  const { y } = point;
  return Fp.toBytes(Fp.div(_1n7 + y, _1n7 - y));
}
function toMontgomerySecret(secretKey) {
  const size = ed25519_Point.Fp.BYTES;
  abytes(secretKey, size);
  return adjustScalarBytes(sha512(secretKey.subarray(0, size))).subarray(0, size);
}
function ed(opts) {
  return eddsa(ed25519_Point, sha512, Object.assign({ adjustScalarBytes, toMontgomery, toMontgomerySecret, zip215: true }, opts));
}
var ed25519 = /* @__PURE__ */ ed({});

// src/canon.js
var Num = class {
  constructor(text3) {
    this.text = text3;
  }
  toString() {
    return this.text;
  }
  get value() {
    return Number(this.text);
  }
  get big() {
    if (!/^-?\d+$/.test(this.text)) throw new Error("not an integer: " + this.text);
    return BigInt(this.text);
  }
};
var MAX_DEPTH2 = 64;
function parse(text3) {
  let i = 0;
  const ws = () => {
    while (i < text3.length && " 	\n\r".includes(text3[i])) i++;
  };
  const fail = (what) => {
    throw new SyntaxError(`bad JSON at ${i}: ${what}`);
  };
  function value(depth) {
    if (depth > MAX_DEPTH2) fail("too deep");
    ws();
    const c = text3[i];
    if (c === "{") {
      i++;
      const out2 = /* @__PURE__ */ Object.create(null);
      ws();
      if (text3[i] === "}") {
        i++;
        return out2;
      }
      for (; ; ) {
        ws();
        if (text3[i] !== '"') fail("key");
        const k = str();
        ws();
        if (text3[i++] !== ":") fail(":");
        out2[k] = value(depth + 1);
        ws();
        if (text3[i] === ",") {
          i++;
          continue;
        }
        if (text3[i++] === "}") return out2;
        fail("object");
      }
    }
    if (c === "[") {
      i++;
      const out2 = [];
      ws();
      if (text3[i] === "]") {
        i++;
        return out2;
      }
      for (; ; ) {
        out2.push(value(depth + 1));
        ws();
        if (text3[i] === ",") {
          i++;
          continue;
        }
        if (text3[i++] === "]") return out2;
        fail("array");
      }
    }
    if (c === '"') return str();
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text3.slice(i, i + 400));
    if (m && m[0]) {
      i += m[0].length;
      return new Num(m[0]);
    }
    for (const [w, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text3.startsWith(w, i)) {
        i += w.length;
        return v;
      }
    }
    fail("value");
  }
  function str() {
    const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text3.slice(i));
    if (!m) fail("string");
    i += m[0].length;
    return JSON.parse(m[0]);
  }
  const out = value(0);
  ws();
  if (i !== text3.length) fail("trailing data");
  return out;
}
function int(v, what = "integer") {
  const t = v instanceof Num ? v.text : typeof v === "string" ? v : null;
  if (t === null || !/^(0|[1-9]\d*)$/.test(t)) throw new Error(`malformed ${what} in the request`);
  return BigInt(t);
}
function pyString(s, asciiOnly) {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "	") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (cp < 32 || asciiOnly && cp > 126) {
      if (cp > 65535) {
        const v = cp - 65536;
        out += "\\u" + (55296 + (v >> 10)).toString(16) + "\\u" + (56320 + (v & 1023)).toString(16);
      } else out += "\\u" + cp.toString(16).padStart(4, "0");
    } else out += ch;
  }
  return out + '"';
}
function pyNumber(n) {
  if (!Number.isFinite(n)) throw new Error("not a finite number");
  if (Number.isInteger(n)) {
    if (!Number.isSafeInteger(n)) throw new Error("integer too large for a JS number: use Num or BigInt");
    return String(n);
  }
  const s = String(n);
  return s.replace(/e([+-])(\d)$/, "e$10$2");
}
function byCodePoint(a, b) {
  const x = Array.from(a), y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d;
  }
  return x.length - y.length;
}
function dumps(v, asciiOnly = true) {
  if (v === null || v === void 0) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (v instanceof Num) return v.text;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return pyNumber(v);
  if (typeof v === "string") return pyString(v, asciiOnly);
  if (Array.isArray(v)) return "[" + v.map((x) => dumps(x, asciiOnly)).join(",") + "]";
  const keys = Object.keys(v).filter((k) => v[k] !== void 0).sort(byCodePoint);
  return "{" + keys.map((k) => pyString(k, asciiOnly) + ":" + dumps(v[k], asciiOnly)).join(",") + "}";
}
function nowTs() {
  let ts = Date.now() / 1e3;
  if (Number.isInteger(ts)) ts += 1e-3;
  return ts;
}

// src/protocol.js
var DOMAINS = {
  pair: "owliabot-pair-v1",
  approval: "owliabot-approval-v1",
  freeze: "owliabot-freeze-v1",
  topup: "owliabot-topup-v1",
  revoke: "owliabot-revoke-v1",
  auth: "owliabot-bridge-auth-v1",
  request: "owliabot-request-v1",
  nonce: "owliabot-nonce-v1"
};
function signedMessage(domain, body) {
  return utf8ToBytes(domain + "\n" + dumps(body, true));
}
function newDeviceSeed() {
  return randomBytes(32);
}
var devicePublic = (seed) => bytesToHex(ed25519.getPublicKey(seed));
var deviceSign = (seed, message) => bytesToHex(ed25519.sign(message, seed));
function signedBy(publicKeyHex, domain, body, signature) {
  if (typeof signature !== "string" || !/^[0-9a-f]{128}$/.test(signature) || !/^[0-9a-f]{64}$/.test(publicKeyHex || "")) return false;
  try {
    return ed25519.verify(hexToBytes(signature), signedMessage(domain, body), hexToBytes(publicKeyHex), { zip215: false });
  } catch {
    return false;
  }
}
function unsigned(request) {
  const out = {};
  for (const k of Object.keys(request)) if (k !== "signer_sig") out[k] = request[k];
  return out;
}
function requestHash(request) {
  return bytesToHex(sha256(utf8ToBytes(dumps(unsigned(request), false))));
}
function verifiedHash(request, signerKey) {
  if (!signerKey) throw new Error("no signer key from pairing: this companion can deny, never approve");
  const digest = requestHash(request);
  if (!signedBy(signerKey, DOMAINS.request, { request_hash: digest }, request.signer_sig)) {
    throw new Error("this request is not signed by your signer (the bridge may be compromised)");
  }
  return digest;
}
function normalizeCode(code) {
  return code.replace(/[- ]/g, "").toUpperCase();
}
function pairingMac(code, message) {
  const key = utf8ToBytes(bytesToHex(sha256(utf8ToBytes(normalizeCode(code)))));
  return bytesToHex(hmac(sha256, key, message));
}
function parsePairFragment(hash) {
  const q = new URLSearchParams(hash.replace(/^#/, ""));
  const id = q.get("id"), code = q.get("code"), signer = q.get("signer");
  if (q.get("v") !== "1" || !/^pair_[0-9a-f]{16}$/.test(id || "") || !code || !/^[0-9a-f]{64}$/.test(signer || "")) return null;
  return { id, code, signer };
}
async function post(path, body) {
  const resp = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    credentials: "omit",
    cache: "no-store"
  });
  const text3 = await resp.text();
  let data = null;
  try {
    data = parse(text3);
  } catch {
  }
  if (!resp.ok) {
    const detail = data && typeof data.detail === "string" ? data.detail : `HTTP ${resp.status}`;
    throw new Error(detail.slice(0, 200));
  }
  if (!data || typeof data !== "object") throw new Error("the bridge sent a malformed reply");
  return data;
}
async function pair({ id, code, signer }, seed, name, mainAddress) {
  const body = {
    pairing_id: id,
    device_pub: devicePublic(seed),
    name,
    main_address: mainAddress.toLowerCase(),
    ts: nowTs(),
    nonce: bytesToHex(randomBytes(32))
  };
  const message = signedMessage(DOMAINS.pair, body);
  const reply = await post("/v1/pair", {
    ...body,
    main_address: mainAddress,
    signature: deviceSign(seed, message),
    mac: pairingMac(code, message)
  });
  const deviceId = reply.device && reply.device.device_id;
  if (typeof deviceId !== "string" || !/^dev_[0-9a-f]{16}$/.test(deviceId)) throw new Error("the bridge sent a malformed pairing reply");
  return { device_id: deviceId, signer_key: signer };
}
async function login(deviceId, seed) {
  const challenge = await post("/v1/auth/challenge", { device_id: deviceId });
  const ts = nowTs();
  const signature = deviceSign(seed, signedMessage(DOMAINS.auth, { device_id: deviceId, aud: challenge.aud, nonce: challenge.nonce, ts }));
  const reply = await post("/v1/auth/token", { device_id: deviceId, nonce: challenge.nonce, ts, signature });
  if (typeof reply.token !== "string") throw new Error("the bridge sent no token");
  return reply.token;
}
function verifiedQuote(state, signerKey) {
  if (!state || typeof state !== "object" || !signerKey) return null;
  const names = "main_nonce_mined" in state ? ["main_account", "main_nonce", "main_nonce_mined", "ts"] : ["main_account", "main_nonce", "ts"];
  const quote = {};
  for (const n of names) quote[n] = state[n] === void 0 ? null : state[n];
  if (!signedBy(signerKey, DOMAINS.nonce, quote, state.nonce_sig)) return null;
  const counts = (raw) => {
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
    const out = {};
    for (const [k, v] of Object.entries(raw)) {
      if (!/^\d+$/.test(k) || !(v instanceof Num) || !/^\d+$/.test(v.text)) return null;
      out[k] = Number(v.text);
    }
    return out;
  };
  const nonces = counts(quote.main_nonce), mined = "main_nonce_mined" in quote ? counts(quote.main_nonce_mined) : null;
  if (!(quote.ts instanceof Num) || nonces === null || typeof quote.main_account !== "string") return null;
  if ("main_nonce_mined" in quote && mined === null) return null;
  return { main_account: quote.main_account, main_nonce: nonces, main_nonce_mined: mined, ts: quote.ts.value };
}
var MAX_CLOCK_SKEW = 120;
var fresh = (quote) => Math.abs(Date.now() / 1e3 - quote.ts) <= MAX_CLOCK_SKEW;
function answerMessage(request, digest, action, deviceId, txHash) {
  return signedMessage(DOMAINS.approval, {
    request_id: request.request_id,
    request_hash: digest,
    action,
    expires_at: request.expires_at,
    device_id: deviceId,
    tx_hash: txHash
  });
}
async function fetchDevices(token) {
  const resp = await fetch("/v1/devices", { headers: { authorization: `Bearer ${token}` }, credentials: "omit", cache: "no-store" });
  if (!resp.ok) throw new Error(`the bridge refused the device list (HTTP ${resp.status})`);
  const body = await resp.json();
  const ts = (v) => typeof v === "number" && Number.isFinite(v) ? v : null;
  if (!body || typeof body.devices_rev !== "string" || !Array.isArray(body.devices)) throw new Error("the bridge sent a malformed device list");
  const devices = body.devices.filter((d) => d && typeof d.device_id === "string" && typeof d.name === "string").map((d) => ({
    device_id: d.device_id,
    name: d.name,
    key_fingerprint: String(d.key_fingerprint || ""),
    created_at: ts(d.created_at),
    last_seen: ts(d.last_seen),
    revoked_at: ts(d.revoked_at),
    this_device: d.this_device === true
  }));
  return { devices_rev: body.devices_rev, devices };
}
function transportError(message) {
  const e = new Error(message);
  e.transport = true;
  return e;
}
var Session = class {
  constructor(token, handlers) {
    this.handlers = handlers;
    this.replies = /* @__PURE__ */ new Map();
    this.ids = 1;
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/v1/ws";
    this.ws = new WebSocket(url);
    this.ready = new Promise((resolve, reject) => {
      this.ws.onopen = () => this.ws.send(JSON.stringify({ type: "hello", token }));
      this.ws.onclose = (ev) => {
        reject(transportError(`the bridge closed the connection (${ev.code})`));
        for (const f of this.replies.values()) f.reject(transportError("the bridge connection closed"));
        this.replies.clear();
        handlers.closed(ev.code);
      };
      this.ws.onmessage = (ev) => {
        let data;
        try {
          data = parse(ev.data);
        } catch {
          return;
        }
        if (!data || typeof data !== "object" || Array.isArray(data)) return;
        if (data.type === "welcome") {
          resolve();
          handlers.state(data.state || {});
          if (handlers.devices) handlers.devices(typeof data.devices_rev === "string" ? data.devices_rev : "", true);
        } else if (data.type === "devices" && typeof data.devices_rev === "string") {
          if (handlers.devices) handlers.devices(data.devices_rev, false);
        } else if (data.type === "request") handlers.requests([data.request]);
        else if (data.type === "requests" && Array.isArray(data.requests)) handlers.requests(data.requests);
        else if (data.type === "state" && data.state && typeof data.state === "object") handlers.state(data.state);
        else if (data.type === "resolved" && typeof data.request_id === "string") handlers.resolved(data.request_id);
        else if (data.type === "reply" && data.id instanceof Num) {
          const f = this.replies.get(data.id.value);
          if (f) {
            this.replies.delete(data.id.value);
            f.resolve(data);
          }
        }
      };
    });
  }
  call(method, params, timeoutMs = 3e4) {
    const id = this.ids++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.replies.delete(id);
        reject(transportError("no reply from the bridge"));
      }, timeoutMs);
      this.replies.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          if (reply.ok !== true && reply.ok !== false) return reject(new Error("the bridge sent a malformed reply"));
          if (!reply.ok) {
            const e = reply.error && typeof reply.error === "object" ? reply.error : {};
            return reject(new Error(String(e.message || "(no message)").slice(0, 200)));
          }
          if (!reply.result || typeof reply.result !== "object") return reject(new Error("the bridge sent a malformed reply"));
          resolve(reply.result);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        }
      });
      if (this.ws.readyState !== WebSocket.OPEN) {
        clearTimeout(timer);
        this.replies.delete(id);
        reject(transportError("not connected to the bridge"));
        return;
      }
      this.ws.send(dumps({ type: "call", id, method, params: params === void 0 ? null : params }, false));
    });
  }
  close() {
    try {
      this.ws.close();
    } catch {
    }
  }
};

// src/journal.js
var MAX_ENTRIES = 200;
var MAX_UNSETTLED = 50;
var CONFIRM_QUOTES = 3;
var CONFIRM_SECONDS = 600;
var MAX_CLOCK_SKEW2 = 120;
var JournalFull = class extends Error {
};
var isSettled = (e) => e.settled_at !== null;
function isFinal(e) {
  if (e.settled_by === null || e.seen_ts === null) return false;
  return e.confirmed >= CONFIRM_QUOTES && e.seen_ts - e.settled_by.quote_ts >= CONFIRM_SECONDS;
}
function newEntry(fields) {
  return { reply: "", quoted_at: null, seen_ts: null, settled_at: null, settled_by: null, confirmed: 0, ...fields };
}
function refuseIfFull(unsettled, maxUnsettled = MAX_UNSETTLED) {
  if (unsettled >= maxUnsettled) {
    throw new JournalFull(`${unsettled} approvals you signed are still unsettled (their nonces are not used as far as your signer has said): nothing more is signed until they are. Void the ones you do not want (send any transaction from the main account at that nonce).`);
  }
}
function admit(entries, entry, maxEntries = MAX_ENTRIES, maxUnsettled = MAX_UNSETTLED) {
  if (entries.some((e) => e.tx_hash === entry.tx_hash)) return [...entries];
  refuseIfFull(entries.filter((e) => !isSettled(e)).length, maxUnsettled);
  const kept = [...entries, entry];
  const excess = kept.length - maxEntries;
  const droppable = [...kept.filter(isFinal), ...kept.filter((e) => isSettled(e) && !isFinal(e))];
  for (const old of droppable.slice(0, Math.max(excess, 0))) kept.splice(kept.indexOf(old), 1);
  return kept;
}
function applyQuote(entries, quote, mainAddress, now) {
  if (quote.main_nonce_mined === null || quote.main_account.toLowerCase() !== mainAddress.toLowerCase()) return false;
  const fresh2 = Math.abs(now - quote.ts) <= MAX_CLOCK_SKEW2;
  let changed = false;
  for (const e of entries) {
    const mined = quote.main_nonce_mined[String(e.chain_id)];
    if (mined === void 0 || e.seen_ts !== null && quote.ts <= e.seen_ts) continue;
    if (e.quoted_at !== null && quote.ts < e.quoted_at) continue;
    if (e.quoted_at === null && !fresh2) continue;
    e.seen_ts = quote.ts;
    changed = true;
    if (mined > e.nonce && !isSettled(e)) {
      e.settled_at = now;
      e.settled_by = { main_nonce_mined: mined, quote_ts: quote.ts };
      e.confirmed = 0;
    } else if (mined > e.nonce) {
      e.confirmed += 1;
    } else if (isSettled(e)) {
      e.settled_at = null;
      e.settled_by = null;
      e.confirmed = 0;
    }
  }
  return changed;
}

// src/tier3.js
var ADDRESS = /^0x[0-9a-fA-F]{40}$/;
var SELECTOR = (signature) => bytesToHex(keccak_256(utf8ToBytes(signature)).slice(0, 4));
var INCREMENT_NONCE = SELECTOR("incrementNonce(address)");
var CURRENT_NONCE = SELECTOR("currentNonce(address,address)");
var REVOKE_GAS = 100000n;
var word = (address) => "0".repeat(24) + strip0x(address).toLowerCase();
function incrementNonceCalldata(manager) {
  return "0x" + INCREMENT_NONCE + word(manager);
}
function currentNonceCalldata(manager, account) {
  return "0x" + CURRENT_NONCE + word(manager) + word(account);
}
function checkSettings(s) {
  const url = String(s.rpc_url || "").trim();
  if (!/^https?:\/\/[^\s]+$/.test(url)) throw new Error("the node URL must start with https:// (or http:// for a local node)");
  if (!/^[0-9]{1,12}$/.test(String(s.chain_id || "").trim())) throw new Error("the chain id must be a whole number");
  for (const [name, what] of [["manager", "the DelegationManager"], ["nonce_enforcer", "the NonceEnforcer"]]) {
    if (!ADDRESS.test(String(s[name] || "").trim())) throw new Error(`${what} must be an address (0x and 40 hex digits)`);
  }
  return {
    rpc_url: url,
    chain_id: BigInt(String(s.chain_id).trim()),
    manager: s.manager.trim().toLowerCase(),
    nonce_enforcer: s.nonce_enforcer.trim().toLowerCase()
  };
}
var rpcId = 0;
async function rpc(url, method, params) {
  let reply;
  try {
    const resp = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, params }),
      credentials: "omit",
      referrerPolicy: "no-referrer"
    });
    reply = await resp.json();
  } catch (e) {
    throw new Error(`cannot reach the node at ${url} (${e.message || e}); check the URL and that this phone is online`, { cause: e });
  }
  if (reply.error) throw new Error(`the node refused ${method}: ${String(reply.error.message || "").slice(0, 200)}`);
  return reply.result;
}
var quantity = (hex, what) => {
  if (typeof hex !== "string" || !/^0x[0-9a-fA-F]+$/.test(hex)) throw new Error(`the node gave a malformed ${what}`);
  return BigInt(hex);
};
async function currentNonce(settings, account) {
  const raw = await rpc(settings.rpc_url, "eth_call", [{ to: settings.nonce_enforcer, data: currentNonceCalldata(settings.manager, account) }, "latest"]);
  return quantity(raw === "0x" ? "0x0" : raw, "revocation nonce");
}
async function checkChain(settings) {
  const chainId = quantity(await rpc(settings.rpc_url, "eth_chainId", []), "chain id");
  if (chainId !== settings.chain_id) throw new Error(`the node at ${settings.rpc_url} is chain ${chainId}, not ${settings.chain_id}: nothing was signed`);
}
async function sendFromMain(settings, account, sign, step = () => {
}) {
  const nonce = quantity(await rpc(settings.rpc_url, "eth_getTransactionCount", [account, "pending"]), "nonce");
  const block = await rpc(settings.rpc_url, "eth_getBlockByNumber", ["latest", false]);
  const tip = quantity(await rpc(settings.rpc_url, "eth_maxPriorityFeePerGas", []), "priority fee");
  const base = quantity(block.baseFeePerGas || "0x0", "base fee");
  step("signing");
  const signed = await sign({ chain_id: settings.chain_id, nonce, max_priority_fee_per_gas: tip, max_fee_per_gas: 2n * base + tip });
  step("broadcasting");
  const txHash = await rpc(settings.rpc_url, "eth_sendRawTransaction", [hex0x(signed.raw)]);
  let receipt = null;
  for (let i = 0; i < 300 && !receipt; i++) {
    receipt = await rpc(settings.rpc_url, "eth_getTransactionReceipt", [txHash]);
    if (!receipt) await new Promise((ok) => setTimeout(ok, 400));
  }
  return { txHash, receipt };
}
async function revokeAll(settings, account, sign, step = () => {
}) {
  step("asking the node");
  await checkChain(settings);
  const before = await currentNonce(settings, account);
  const { txHash, receipt } = await sendFromMain(settings, account, (fees) => sign({
    ...fees,
    gas_limit: REVOKE_GAS,
    to: settings.nonce_enforcer,
    value: 0n,
    data: incrementNonceCalldata(settings.manager)
  }), step);
  if (!receipt) throw new Error(`no receipt for ${txHash} yet: check it later, or revoke again`);
  const after = await currentNonce(settings, account);
  if (receipt.status !== "0x1" || after <= before) throw new Error(`the revocation did not take effect on chain (tx ${txHash}): revoke again`);
  return { before, after, tx_hash: txHash };
}

// src/present.js
var text = (v) => v instanceof Num ? v.text : v === null || v === void 0 ? "" : String(v);
function bigOf(v) {
  const t = text(v);
  return /^-?\d+$/.test(t) ? BigInt(t) : null;
}
function formatUnits(amount, decimals) {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals), frac = decimals ? digits.slice(-decimals).replace(/0+$/, "") : "";
  return (negative ? "-" : "") + whole + (frac ? "." + frac : "");
}
var MAX_DIGITS = 100;
function parseUnits(typed, decimals = 18) {
  const t = typed.trim();
  if (t.length > MAX_DIGITS || !/^[0-9]+(\.[0-9]+)?$/.test(t)) throw new Error("type the amount in ETH, like 0.01");
  const [whole, rawFrac = ""] = t.split(".");
  const frac = rawFrac.replace(/0+$/, "");
  if (frac.length > decimals) throw new Error(`at most ${decimals} digits after the point`);
  return BigInt(whole + frac.padEnd(decimals, "0"));
}
function dollars(amount, decimals, priceUsd) {
  const p = text(priceUsd);
  if (!/^\d+(\.\d+)?$/.test(p) || amount === null) return null;
  const [pw, pf = ""] = p.split(".");
  const cents = (amount < 0n ? -amount : amount) * BigInt(pw + pf) * 100n / 10n ** BigInt(decimals + pf.length);
  if (cents === 0n && amount !== 0n) return "< $0.01";
  const whole = cents / 100n, rest = cents % 100n;
  const grouped = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return "$" + (whole >= 100n || rest === 0n ? grouped : `${grouped}.${rest.toString().padStart(2, "0")}`);
}
function checksum2(address) {
  try {
    return toChecksum(text(address));
  } catch {
    return text(address);
  }
}
var shortAddress = (address) => {
  const a = checksum2(address);
  return /^0x[0-9a-fA-F]{40}$/.test(a) ? `${a.slice(0, 6)}\u2026${a.slice(-4)}` : a;
};
function groupedAddress(address) {
  const a = checksum2(address);
  return /^0x[0-9a-fA-F]{40}$/.test(a) ? "0x" + a.slice(2).match(/.{4}/g).join(" ") : a;
}
var checksumIn = (s) => text(s).replace(/0x[0-9a-fA-F]{40}(?![0-9a-fA-F])/g, (m) => checksum2(m));
var shortIn = (s) => text(s).replace(/0x[0-9a-fA-F]{40}(?![0-9a-fA-F])/g, (m) => shortAddress(m));
function chainName(request) {
  const c = text(request.chain);
  const m = /^(.*) \(\d+\)$/.exec(c);
  return m ? m[1] : c || `chain ${text(request.chain_id)}`;
}
var EXPLORERS = {
  1: "https://etherscan.io",
  10: "https://optimistic.etherscan.io",
  8453: "https://basescan.org",
  42161: "https://arbiscan.io",
  137: "https://polygonscan.com",
  11155111: "https://sepolia.etherscan.io",
  84532: "https://sepolia.basescan.org"
};
function explorerTx(chainId, txHash) {
  const base = EXPLORERS[Number(text(chainId))];
  return base && /^0x[0-9a-f]{64}$/i.test(text(txHash)) ? `${base}/tx/${text(txHash)}` : null;
}
function feeWei(tx2) {
  if (!tx2) return null;
  const gas = bigOf(tx2.gas_limit), price = bigOf(tx2.max_fee_per_gas);
  return gas === null || price === null ? null : gas * price;
}
function nativePrice(request) {
  for (const a of Array.isArray(request.actions) ? request.actions : []) {
    if (a && a.token === "native" && a.price_usd !== void 0 && a.price_usd !== null) return a.price_usd;
  }
  return null;
}
var nativeSymbol = (request) => {
  for (const a of Array.isArray(request.actions) ? request.actions : []) if (a && a.token === "native" && a.symbol) return text(a.symbol);
  return "ETH";
};
function feeText(wei, symbol) {
  const unit = 10n ** 12n;
  const rounded = (wei + unit - 1n) / unit * unit;
  return `${rounded === 0n ? "0" : formatUnits(rounded, 18)} ${symbol}`;
}
function escalatedRules(escalation) {
  const esc = escalation && typeof escalation === "object" ? escalation : {};
  const findings = Array.isArray(esc.findings) ? esc.findings : [];
  const words = [], seen = /* @__PURE__ */ new Set(), details = [];
  const add2 = (reason) => {
    const s = shortIn(reason).trim();
    if (s && !seen.has(s)) {
      seen.add(s);
      words.push(s);
    }
  };
  const escalating = findings.filter((f) => f && f.outcome === "escalate");
  if (escalating.length) escalating.forEach((f) => add2(f.reason));
  else add2(esc.reason);
  details.push({ rule_id: text(esc.rule_id), reason: checksumIn(esc.reason), outcome: "decided" });
  for (const f of findings) if (f) details.push({ rule_id: text(f.rule_id), reason: checksumIn(f.reason), outcome: text(f.outcome) });
  return { words, details };
}
function balanceChanges(simulation, mainAddress) {
  if (!simulation || typeof simulation !== "object" || !Array.isArray(simulation.changes)) return null;
  const main = text(mainAddress).toLowerCase();
  const rows = [];
  for (const c of simulation.changes) {
    if (!c || typeof c !== "object") continue;
    if (main && text(c.account).toLowerCase() !== main) continue;
    const delta = bigOf(c.delta), decimals = Number(text(c.decimals));
    if (delta === null || !Number.isInteger(decimals) || decimals < 0 || decimals > 36) continue;
    const symbol = text(c.symbol) || (c.asset === "native" ? "ETH" : shortAddress(c.asset));
    const sign = delta < 0n ? "\u2212" : "+";
    rows.push({ delta, text: `${sign}${formatUnits(delta < 0n ? -delta : delta, decimals)} ${symbol}` });
  }
  return { source: text(simulation.source), rows };
}
var shortId = (requestId) => "#" + text(requestId).slice(-6);

// src/dom.js
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== void 0 && v !== false) node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== void 0 && c !== false) node.append(c instanceof Node ? c : String(c));
  return node;
}
var text2 = (v) => v instanceof Num ? v.text : v === null || v === void 0 ? "" : String(v);
function visible(s) {
  return text2(s).replace(
    /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g,
    (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")
  );
}
var fieldSeq = 0;
function labelled(labelText, input, hint) {
  if (!input.id) input.id = `field-${++fieldSeq}`;
  const hintNode = hint ? el("span", { class: "hint", id: `${input.id}-hint` }, hint) : null;
  if (hintNode) input.setAttribute("aria-describedby", hintNode.id);
  return el("div", { class: "field" }, el("label", { for: input.id }, labelText), input, hintNode);
}

// src/home.js
var HOME_DOMAIN = "owliabot-home-view-v1";
var UNSIGNED_READING = "A new reading of your balances is not signed by your signer (the bridge may be compromised): it is not shown. What you see is the last signed reading.";
function roundUnits(base, decimals, direction = "down") {
  const exact = formatUnits(base, decimals);
  const frac = exact.split(".")[1] || "";
  if (frac.length <= 6) return exact;
  const magnitude = base < 0n ? -base : base;
  const one = 10n ** BigInt(decimals);
  const leadingZeros = magnitude >= one ? 0 : frac.length - frac.replace(/^0+/, "").length;
  const places = Math.min(decimals, magnitude >= one ? 4 : leadingZeros + 4);
  const step = 10n ** BigInt(decimals - places);
  let kept = magnitude / step * step;
  if (direction === "up" && kept !== magnitude) kept += step;
  return formatUnits(base < 0n ? -kept : kept, decimals);
}
function amountText(a, direction = "down") {
  if (!a || typeof a !== "object") return "an unknown amount";
  const base = bigOf(a.amount_base_units), decimals = Number(text2(a.decimals));
  const listed = a.amount && a.symbol && base !== null && Number.isInteger(decimals) && decimals >= 0 && decimals <= 77;
  const units = listed ? `${roundUnits(base, decimals, direction)} ${visible(a.symbol)}` : a.amount ? visible(a.amount) : `${text2(a.amount_base_units)} base units of an unlisted token`;
  const usd = base !== null && Number.isInteger(decimals) ? dollars(base, decimals, a.price_usd) : null;
  return usd ? `${units} \u2248 ${usd}` : units;
}
function windowWords(seconds, label) {
  const s = Number(text2(seconds));
  if (s === 86400) return "today (the last 24 hours)";
  if (s === 7 * 86400) return "this week (the last 7 days)";
  if (s === 3600) return "this hour (the last 60 minutes)";
  if (s % 86400 === 0) return `in the last ${s / 86400} days`;
  if (s % 3600 === 0) return `in the last ${s / 3600} hours`;
  return `in the window ${visible(label)}`;
}
var who = (line) => line.name ? visible(line.name) : shortAddress(line.address);
var tokenLine = (line) => line.asset && line.asset.token !== "native";
function balanceRows(home) {
  const rows = [];
  for (const b of Array.isArray(home.balances) ? home.balances : []) {
    if (!b || typeof b !== "object") continue;
    const on = ` on ${visible(b.chain)}`;
    if (b.error) {
      rows.push(el("li", { class: "balance error" }, `${b.holder === "main" ? "Main account" : `Session key ${who(b)}`}${on}: ${visible(b.error)}`));
      continue;
    }
    if (b.holder === "main" && tokenLine(b) && bigOf(b.asset.amount_base_units) === 0n) continue;
    if (b.holder === "main") {
      rows.push(el(
        "li",
        { class: "balance main", "data-chain": text2(b.chain_id) },
        el("span", { class: "label" }, `Main account${b.name ? ` (${visible(b.name)})` : ""}${on}`),
        " ",
        el("strong", {}, amountText(b.asset))
      ));
    } else {
      rows.push(el(
        "li",
        { class: "balance session-key", "data-key": visible(b.key_id) },
        el("span", { class: "label" }, `Session key ${who(b)}${on}`),
        " ",
        el("strong", {}, amountText(b.asset)),
        ` of its ${amountText(b.cap)} cap `,
        el("button", { class: "topup-this", "aria-label": `Top up session key ${shortAddress(b.address)}`, onclick: () => {
          const key = document.getElementById("topup-key"), amount = document.getElementById("topup-amount");
          if (key) key.value = text2(b.key_id);
          if (amount) {
            amount.focus();
            amount.scrollIntoView({ block: "center" });
          }
        } }, "Top up")
      ));
    }
  }
  return rows;
}
function tier3Rows(home) {
  const rows = [];
  for (const g of Array.isArray(home.tier3) ? home.tier3 : []) {
    if (!g || typeof g !== "object") continue;
    if (g.error) {
      rows.push(el("li", { class: "tier3-left error" }, `Tier 3: ${visible(g.error)}`));
      continue;
    }
    if (g.ended_on_chain) {
      rows.push(el("li", { class: "tier3-left ended" }, `Tier 3 on ${visible(g.chain)}: ended on chain (${visible(g.ended_on_chain)})`));
      continue;
    }
    for (const lane of Array.isArray(g.lanes) ? g.lanes : []) {
      if (!lane || typeof lane !== "object") continue;
      const until = bigOf(lane.period_ends_at);
      const left = lane.error ? `could not read what is left: ${visible(lane.error)}` : lane.disabled ? "disabled on chain" : lane.left_in_period ? `still allows ${amountText(lane.left_in_period)} this period` + (until !== null ? ` (until ${new Date(Number(until) * 1e3).toLocaleString()})` : "") : lane.calls_left !== null && lane.calls_left !== void 0 ? `${text2(lane.calls_left)} calls left` : "nothing left to read";
      rows.push(el(
        "li",
        { class: "tier3-left" },
        el("span", { class: "label" }, `Tier 3 on ${visible(g.chain)}: `),
        left,
        lane.words ? el("span", { class: "note" }, ` (${visible(lane.words)})`) : null
      ));
    }
  }
  return rows;
}
function spentRows(home) {
  const rows = [];
  for (const s of Array.isArray(home.spent) ? home.spent : []) {
    if (!s || typeof s !== "object") continue;
    rows.push(el(
      "li",
      { class: "spent", "data-window": visible(s.window) },
      el("span", { class: "label" }, `Spent ${windowWords(s.seconds, s.window)}${s.chain ? ` on ${visible(s.chain)}` : ""}:`),
      " ",
      el("strong", {}, amountText(s.spent)),
      ` of ${amountText(s.limit)}`
    ));
  }
  for (const s of Array.isArray(home.spent_usd) ? home.spent_usd : []) {
    if (!s || typeof s !== "object") continue;
    rows.push(el(
      "li",
      { class: "spent usd", "data-window": visible(s.window) },
      el("span", { class: "label" }, `Spent in dollars ${windowWords(s.seconds, s.window)}:`),
      " ",
      el("strong", {}, `$${visible(s.spent_usd)}`),
      ` of $${visible(s.limit_usd)}`
    ));
  }
  return rows;
}
function section(home, live, onRefresh, problem = null) {
  const alarm = problem ? el("p", { class: "warn", id: "home-problem", role: "alert" }, problem) : null;
  if (!home) {
    return el(
      "section",
      { id: "home-money", "aria-labelledby": "home-money-title" },
      el("h2", { id: "home-money-title" }, "Balances"),
      alarm,
      el("p", { class: "note", id: "balances-note" }, "Balances show once this phone reaches your signer.")
    );
  }
  const at = Number(text2(home.ts));
  const balances = [...balanceRows(home), ...tier3Rows(home)];
  const spent = spentRows(home);
  return el(
    "section",
    { id: "home-money", "aria-labelledby": "home-money-title" },
    el("h2", { id: "home-money-title" }, "Balances"),
    alarm,
    el("ul", { class: "balances" }, balances.length ? balances : [el("li", {}, "No account to show yet.")]),
    el("h3", {}, "What the agent spent"),
    spent.length ? el("ul", { class: "spent-list" }, spent) : el("p", { class: "note" }, "Your policy sets no spending window."),
    el("p", { class: "note", id: "balances-note" }, `${live ? "Read by your signer" : "Last read by your signer"} at ${Number.isFinite(at) ? new Date(at * 1e3).toLocaleString() : "an unknown time"}; balances from the chain, spending from its ledger.`),
    onRefresh ? el("button", { id: "refresh-home", onclick: onRefresh }, "Read the balances again") : null
  );
}
async function refresh(app2, store) {
  if (!app2.session || app2.status !== "connected") return false;
  const home = await app2.session.call("approvals.home");
  if (!home || typeof home !== "object") return false;
  if (!signedBy(app2.device && app2.device.signer_key, HOME_DOMAIN, unsigned(home), home.signer_sig)) {
    app2.homeProblem = UNSIGNED_READING;
    app2.homeLive = false;
    return true;
  }
  app2.home = home;
  app2.homeLive = true;
  app2.homeProblem = null;
  await store.put("kv", "home", dumps(home, false));
  return true;
}
async function load2(app2, store) {
  const saved = await store.get("kv", "home");
  try {
    app2.home = typeof saved === "string" ? parse(saved) : null;
  } catch {
    app2.home = null;
  }
  app2.homeLive = false;
}
function ownAccounts(home) {
  const out = /* @__PURE__ */ new Map();
  for (const b of home && Array.isArray(home.balances) ? home.balances : []) {
    if (b && b.holder === "session_key" && b.address) out.set(text2(b.address).toLowerCase(), "your session key");
  }
  return out;
}
async function markTier3Ended(app2, store, chainId, words) {
  if (!app2.home || !Array.isArray(app2.home.tier3)) return;
  for (const g of app2.home.tier3) if (g && text2(g.chain_id) === String(chainId)) g.ended_on_chain = words;
  await store.put("kv", "home", dumps(app2.home, false));
}
function topupKeys(home) {
  return (home && Array.isArray(home.balances) ? home.balances : []).filter((b) => b && b.key_id && b.cap).map((b) => ({ id: text2(b.key_id), words: `${shortAddress(b.address)}: ${amountText(b.asset)} of its ${amountText(b.cap)} cap` }));
}
function sessionKeyWords(home, keyId) {
  const line = (home && Array.isArray(home.balances) ? home.balances : []).find((b) => b && b.key_id && text2(b.key_id) === keyId);
  return line ? `session key ${shortAddress(line.address)}` : "a session key";
}

// src/swapcard.js
var DEFI = /* @__PURE__ */ new Set(["swap", "wrap", "unwrap", "claim", "payout"]);
var lower = (a) => text2(a).toLowerCase();
function venueName(name) {
  const t = visible(name).trim();
  if (!/^[a-z0-9][a-z0-9-]*$/.test(t)) return t;
  const words = t.split("-");
  return [words[0].charAt(0).toUpperCase() + words[0].slice(1), ...words.slice(1)].join(" ");
}
function ownerLabel(address, ctx) {
  const a = lower(address);
  if (a && a === lower(ctx.mainAddress)) return "your main account";
  const known = ctx.ownAccounts && ctx.ownAccounts.get(a);
  return known || null;
}
function party(p, ctx) {
  const who2 = p && typeof p === "object" ? p : {};
  const mine = ownerLabel(who2.address, ctx);
  return el(
    "span",
    { class: "party" },
    mine ? el("span", { class: "name" }, mine) : who2.name ? el("span", { class: "name" }, visible(who2.name)) : el("span", { class: "new-address" }, "NEW ADDRESS"),
    " ",
    el("span", { class: "short-address" }, shortAddress(who2.address))
  );
}
function explained(actions) {
  const places = /* @__PURE__ */ new Set();
  for (const a of actions) {
    if (!a || typeof a !== "object") continue;
    if (a.type === "swap" || a.type === "payout") places.add(lower(a.router && a.router.address));
    if (a.type === "wrap" || a.type === "unwrap") places.add(lower(a.contract && a.contract.address));
    if (a.type === "claim") places.add(lower(a.distributor && a.distributor.address));
  }
  places.delete("");
  const hidden = /* @__PURE__ */ new Set();
  if (!places.size) return hidden;
  const swaps = actions.some((a) => a && a.type === "swap");
  for (const a of actions) {
    if (!a || typeof a !== "object") continue;
    if (a.type === "call" && a.decoded && places.has(lower(a.target && a.target.address))) hidden.add(a);
    if (a.type === "transfer" && a.token === "native" && places.has(lower(a.recipient && a.recipient.address))) hidden.add(a);
    if (a.type === "payout" && swaps) hidden.add(a);
  }
  return hidden;
}
function slippageLine(a) {
  const bps = Number(text2(a.max_slippage_bps));
  const bound = Number.isFinite(bps) && text2(a.max_slippage_bps) !== "" ? ` (your policy allows at most ${bps / 100}% slippage)` : "";
  return el("p", { class: "slippage" }, `If the price moves, the swap fails rather than pay out less${bound}.`);
}
function sentence(a, r, ctx) {
  const on = ` on ${visible(chainName(r))}`;
  if (a.type === "swap") {
    const venue = a.venue ? venueName(a.venue) : null;
    const recipient = a.recipient && lower(a.recipient.address) !== lower(a.router && a.router.address) ? a.recipient : null;
    const where = venue ? ` on ${venue} (${visible(chainName(r))})` : null;
    return [
      el(
        "p",
        { class: "sentence swap" },
        `Swap ${amountText(a.pays || a.token_in, "up")} for at least ${amountText(a.gets_at_least || a.token_out_min)}`,
        where || [" through an unlisted router ", party(a.router, ctx), on],
        recipient ? [", paid to ", party(recipient, ctx)] : ""
      ),
      slippageLine(a)
    ];
  }
  if (a.type === "wrap" || a.type === "unwrap") {
    const verb = a.type === "wrap" ? "Wrap" : "Unwrap";
    const into = a.becomes && a.becomes.amount ? ` into ${visible(a.becomes.amount)}` : "";
    const symbol = a.type === "wrap" ? a.becomes && a.becomes.symbol : a.symbol;
    const contract = { ...a.contract || {}, name: a.contract && a.contract.name || (symbol ? `the ${visible(symbol)} contract` : null) };
    return [el("p", { class: `sentence ${a.type}` }, `${verb} ${amountText(a, "up")}${into} at `, party(contract, ctx), on)];
  }
  if (a.type === "claim") {
    return [el(
      "p",
      { class: "sentence claim" },
      `Claim ${a.amount ? amountText(a) : `${visible(a.amount_base_units)} base units of a token this signer does not know`} from `,
      party(a.distributor, ctx),
      " for ",
      party(a.account, ctx),
      on
    )];
  }
  if (a.type === "payout") {
    return [el("p", { class: "sentence payout" }, "The router pays out what it holds to ", a.recipient ? party(a.recipient, ctx) : "the caller", on)];
  }
  return null;
}
function summary(a) {
  if (a.type === "swap") return { what: `Swap ${amountText(a.pays || a.token_in, "up")} for ${amountText(a.gets_at_least || a.token_out_min)}`, to: a.venue ? venueName(a.venue) : shortAddress(a.router && a.router.address) };
  if (a.type === "wrap" || a.type === "unwrap") return { what: `${a.type === "wrap" ? "Wrap" : "Unwrap"} ${visible(a.amount || "a token")}`, to: "" };
  if (a.type === "claim") return { what: `Claim ${visible(a.amount || "a token")}`, to: "" };
  return null;
}
function otherChanges(r, ctx) {
  const simulation = r.simulation;
  if (!simulation || !Array.isArray(simulation.changes)) return [];
  const paid = /* @__PURE__ */ new Set();
  for (const a of Array.isArray(r.actions) ? r.actions : []) {
    if (a && a.type === "swap" && a.recipient) paid.add(lower(a.recipient.address));
    if (a && a.type === "claim" && a.account) paid.add(lower(a.account.address));
  }
  const rows = [];
  for (const c of simulation.changes) {
    if (!c || typeof c !== "object" || lower(c.account) === lower(ctx.mainAddress)) continue;
    if (!ownerLabel(c.account, ctx) && !paid.has(lower(c.account))) continue;
    const delta = bigOf(c.delta), decimals = Number(text2(c.decimals));
    if (delta === null || !Number.isInteger(decimals) || decimals < 0 || decimals > 36) continue;
    const symbol = text2(c.symbol) || (c.asset === "native" ? "ETH" : shortAddress(c.asset));
    const who2 = ownerLabel(c.account, ctx) || shortAddress(c.account);
    const shown = roundUnits(delta < 0n ? -delta : delta, decimals, delta < 0n ? "up" : "down");
    rows.push({ delta, text: `${delta < 0n ? "\u2212" : "+"}${shown} ${symbol} (${who2})` });
  }
  return rows;
}

// src/card.js
function party2(p) {
  const who2 = p && typeof p === "object" ? p : {};
  return el(
    "span",
    { class: "party" },
    who2.name ? el("span", { class: "name" }, visible(who2.name)) : el("span", { class: "new-address" }, "NEW ADDRESS"),
    " ",
    el("span", { class: "short-address" }, shortAddress(who2.address))
  );
}
function amountOf(a) {
  if (a.amount !== null && a.amount !== void 0) return visible(a.amount);
  return `an amount of a token this signer does not know (${shortAddress(a.token)}; see Details)`;
}
function priced(a) {
  const base = bigOf(a.amount_base_units);
  const decimals = Number(text2(a.decimals !== void 0 ? a.decimals : a.token === "native" ? 18 : NaN));
  if (base === null || !Number.isInteger(decimals)) return "";
  const usd = dollars(base, decimals, a.price_usd);
  return usd ? ` \u2248 ${usd}` : "";
}
function sentences(r, ctx = {}) {
  const on = ` on ${visible(chainName(r))}`;
  const out = [];
  const actions = Array.isArray(r.actions) ? r.actions : [];
  const said = explained(actions);
  for (const a of actions) {
    if (!a || typeof a !== "object" || said.has(a)) continue;
    if (DEFI.has(a.type)) {
      out.push(...sentence(a, r, ctx) || []);
    } else if (a.type === "transfer") {
      out.push(el("p", { class: "sentence" }, `Send ${amountOf(a)}${priced(a)} to `, party2(a.recipient), on));
    } else if (a.type === "approval") {
      out.push(el(
        "p",
        { class: "sentence" },
        a.unlimited ? "Allow " : "Allow ",
        party2(a.spender),
        a.unlimited ? el("span", {}, " to spend ", el("strong", { class: "warn" }, "ALL"), ` your ${visible(a.symbol || "tokens")}`) : ` to spend up to ${amountOf(a)}${priced(a)}`,
        on
      ));
    } else if (a.type === "call") {
      const value = bigOf(a.value);
      out.push(el(
        "p",
        { class: "sentence" },
        "Call a contract at ",
        party2(a.target),
        value ? ` sending ${formatUnits(value, 18)} ${nativeSymbol(r)}` : "",
        on
      ));
    } else if (a.type === "forbidden") {
      out.push(el("p", { class: "sentence warn" }, `Forbidden: ${visible(checksumIn(a.reason))}`));
    }
  }
  return out;
}
function summary2(r) {
  const actions = Array.isArray(r.actions) ? r.actions : [];
  for (const a of actions) {
    const said = a && typeof a === "object" && DEFI.has(a.type) ? summary(a) : null;
    if (said) return said;
  }
  const hidden = explained(actions);
  for (const a of actions) {
    if (!a || typeof a !== "object" || hidden.has(a)) continue;
    const who2 = (p) => p && p.name ? visible(p.name) : shortAddress(p && p.address);
    if (a.type === "transfer") return { what: `Send ${a.amount ? visible(a.amount) : "a token"}`, to: who2(a.recipient) };
    if (a.type === "approval") return { what: a.unlimited ? "Unlimited approval" : `Approve ${a.amount ? visible(a.amount) : "a token"}`, to: who2(a.spender) };
    if (a.type === "call") return { what: "Contract call", to: who2(a.target) };
  }
  if (r.kind === "policy") return { what: "Policy change", to: "" };
  return { what: visible(r.summary).slice(0, 60) || "Request", to: "" };
}
function changesSection(r, ctx) {
  const changes = balanceChanges(r.simulation, ctx.mainAddress);
  if (!changes) return null;
  const rows = [...changes.rows, ...otherChanges(r, ctx)];
  return el(
    "section",
    { class: "changes", "aria-label": "Balance changes, what the node says" },
    el("h3", {}, "Your balances change ", el("span", { class: "source" }, "(what the node says)")),
    rows.length ? el("ul", { class: "change-rows" }, rows.map((c) => el("li", { class: c.delta < 0n ? "out" : "in" }, c.text))) : el("p", { class: "note" }, "No change to your balances.")
  );
}
function feeLine(r) {
  const wei = feeWei(r.tx);
  if (wei === null) return null;
  const usd = dollars(wei, 18, nativePrice(r));
  return el(
    "p",
    { class: "fee" },
    el("span", { class: "label" }, "Network fee"),
    " up to ",
    el("strong", {}, feeText(wei, nativeSymbol(r))),
    usd ? ` \u2248 ${usd}` : ""
  );
}
function policyHead(r) {
  return [
    el("p", { class: "sentence" }, "Loosen your signer's policy"),
    el("p", { class: "note" }, "What widens (the signer would sign more on its own):"),
    el("ul", { class: "diff" }, (Array.isArray(r.policy.widens) ? r.policy.widens : []).map((w) => el("li", {}, "+ " + visible(w))))
  ];
}
function row(label, value) {
  return el("div", { class: "row" }, el("span", { class: "label" }, label), el("span", { class: "value" }, value));
}
function detailsFold(r, rules) {
  const tx2 = r.tx;
  const txRows = tx2 ? [
    row("chain", `${visible(chainName(r))} (id ${text2(r.chain_id)})`),
    row("from", groupedAddress(tx2.from)),
    row("to", groupedAddress(tx2.to)),
    row("value", `${formatUnits(bigOf(tx2.value) || 0n, 18)} ${nativeSymbol(r)} (${text2(tx2.value)} wei)`),
    row("data", `${visible(tx2.data)} (${Math.max(0, (text2(tx2.data).length - 2) / 2)} bytes)`),
    row("nonce", text2(tx2.nonce)),
    row("gas limit", text2(tx2.gas_limit)),
    row("max fee", `${text2(tx2.max_fee_per_gas)} wei per gas`),
    row("priority fee", `${text2(tx2.max_priority_fee_per_gas)} wei per gas`)
  ] : r.kind === "policy" && r.policy ? [
    row("from policy", visible(r.policy.from_hash)),
    row("to policy", visible(r.policy.to_hash))
  ] : [el("p", { class: "note" }, "No transaction: this request can only be denied.")];
  const actionRows = (Array.isArray(r.actions) ? r.actions : []).filter((a) => a && a.amount_base_units !== void 0).map((a) => row("token", `${a.token === "native" ? "native" : checksum2(a.token)}: ${visible(a.amount_base_units)} base units`));
  return el(
    "details",
    { class: "more" },
    el("summary", {}, "Details"),
    el("h4", {}, "Checks"),
    el("ul", { class: "checks" }, rules.details.map((d) => el("li", {}, `${visible(d.rule_id)} (${visible(d.outcome)}): ${visible(d.reason)}`))),
    el("h4", {}, "Exact transaction"),
    ...txRows,
    ...actionRows,
    el("p", { class: "note" }, `request ${visible(r.request_id)}`)
  );
}
function renderCard(r, ctx) {
  const rules = escalatedRules(r.escalation);
  const pass = el("input", { type: "password", class: "approve-pass", id: `pass-${visible(r.request_id)}`, autocomplete: "current-password" });
  const passField = ctx.needsPassphrase ? el("div", { class: "field" }, el("label", { for: pass.id }, "Key passphrase (to approve)"), pass) : null;
  const countdown = el("span", { class: "countdown", "data-expires": r.expires_at.value });
  const answer2 = (action) => ctx.onAnswer(action, pass.value);
  const j = ctx.journaled;
  return el(
    "article",
    { class: "card", "data-request": r.request_id, "aria-label": "Approval request" },
    j ? el("p", { class: "journaled" }, `You signed this already (tx ${visible(j.tx_hash).slice(0, 10)}\u2026, nonce ${j.nonce}); approving again sends that same signed transaction, never a second payment.`) : null,
    ...r.kind === "policy" && r.policy ? policyHead(r) : sentences(r, ctx),
    changesSection(r, ctx),
    feeLine(r),
    el("h3", {}, "Why it needs you"),
    el("ul", { class: "reasons" }, (r.kind === "policy" ? [shortIn(r.escalation && r.escalation.reason)] : rules.words).map((w) => el("li", {}, visible(w)))),
    r.agent_reason_unverified ? el(
      "p",
      { class: "agent-reason" },
      el("strong", {}, "The agent says (unverified): "),
      visible(r.agent_reason_unverified).slice(0, 500)
    ) : null,
    el("p", { class: "expires" }, "Expires in ", countdown),
    detailsFold(r, rules),
    el(
      "div",
      { class: "actionbar" },
      passField,
      el("p", { class: "card-error", role: "alert", hidden: true }),
      el(
        "div",
        { class: "buttons" },
        el("button", { class: "approve primary", disabled: !ctx.canApprove, onclick: () => answer2("approve") }, "Approve"),
        el("button", { class: "deny", onclick: () => answer2("deny") }, "Deny"),
        el("button", { class: "deny-freeze danger", onclick: () => answer2("freeze") }, "Deny and freeze")
      )
    )
  );
}
function showCardError(card2, message) {
  const box = card2 && card2.querySelector(".card-error");
  if (!box) return false;
  box.textContent = message;
  box.hidden = !message;
  return true;
}

// src/grants.js
var DOMAINS2 = { ask: "owliabot-grant-ask-v1", offer: "owliabot-grant-offer-v1", answer: "owliabot-grant-answer-v1" };
var ADDRESS2 = /^0x[0-9a-fA-F]{40}$/;
var HEX = /^0x([0-9a-fA-F]{2})*$/;
var lexeme = (v) => v instanceof Num ? v.text : typeof v === "bigint" ? v.toString() : String(v);
function uint256(v, what) {
  const t = lexeme(v);
  if (!/^(0|[1-9]\d*)$/.test(t)) throw new Error(`${what} is not a whole number`);
  const n = BigInt(t);
  if (n >= 1n << 256n) throw new Error(`${what} is out of range`);
  return hexToBytes(n.toString(16).padStart(64, "0"));
}
function dependencies(primary, types, found = /* @__PURE__ */ new Set()) {
  if (found.has(primary) || !types[primary]) return found;
  found.add(primary);
  for (const f of types[primary]) dependencies(f.type.replace(/\[\]$/, ""), types, found);
  return found;
}
function encodeType(primary, types) {
  const deps = [...dependencies(primary, types)].filter((t) => t !== primary).sort();
  return [primary, ...deps].map((t) => `${t}(${types[t].map((f) => `${f.type} ${f.name}`).join(",")})`).join("");
}
function encodeValue(type, value, types) {
  if (type.endsWith("[]")) {
    if (!Array.isArray(value)) throw new Error(`${type} must be a list`);
    return keccak_256(concatBytes(...value.map((v) => encodeValue(type.slice(0, -2), v, types))));
  }
  if (types[type]) return hashStruct(type, value, types);
  if (type === "string") return keccak_256(utf8ToBytes(String(value)));
  if (type === "bytes") {
    if (typeof value !== "string" || !HEX.test(value)) throw new Error("bytes must be 0x hex");
    return keccak_256(hexToBytes(strip0x(value)));
  }
  if (type === "bytes32") {
    if (typeof value !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(value)) throw new Error("bytes32 must be 32 bytes of hex");
    return hexToBytes(strip0x(value));
  }
  if (type === "address") {
    if (typeof value !== "string" || !ADDRESS2.test(value)) throw new Error("not an address");
    return hexToBytes("0".repeat(24) + strip0x(value).toLowerCase());
  }
  if (type === "uint256") return uint256(value, "a uint256");
  throw new Error(`EIP-712 type ${type} is not used by a grant`);
}
function hashStruct(type, value, types) {
  if (!value || typeof value !== "object") throw new Error(`${type} must be an object`);
  const typeHash = keccak_256(utf8ToBytes(encodeType(type, types)));
  return keccak_256(concatBytes(typeHash, ...types[type].map((f) => encodeValue(f.type, value[f.name], types))));
}
function typedDataDigest(doc) {
  const types = doc.types;
  return keccak_256(concatBytes(
    Uint8Array.of(25, 1),
    hashStruct("EIP712Domain", doc.domain, types),
    hashStruct(doc.primaryType, doc.message, types)
  ));
}
function signDigest(digest, secret) {
  const raw = secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: "recovered", extraEntropy: false });
  const sig = secp256k1.Signature.fromBytes(raw, "recovered");
  const word2 = (n) => n.toString(16).padStart(64, "0");
  return "0x" + word2(sig.r) + word2(sig.s) + (27 + sig.recovery).toString(16);
}
function quantityBytes(n) {
  if (typeof n !== "bigint" || n < 0n) throw new Error("a transaction field must be a non-negative BigInt");
  if (n === 0n) return new Uint8Array(0);
  const h = n.toString(16);
  return hexToBytes(h.length % 2 ? "0" + h : h);
}
function signEip7702(tx2, secret) {
  const authNonce = tx2.nonce + 1n;
  const authFields = [quantityBytes(tx2.chain_id), hexToBytes(strip0x(tx2.implementation).toLowerCase()), quantityBytes(authNonce)];
  const authDigest = keccak_256(concatBytes(Uint8Array.of(5), rlp(authFields)));
  const a = secp256k1.Signature.fromBytes(secp256k1.sign(authDigest, secret, { prehash: false, lowS: true, format: "recovered", extraEntropy: false }), "recovered");
  const authorization = [...authFields, quantityBytes(BigInt(a.recovery)), quantityBytes(a.r), quantityBytes(a.s)];
  const fields = [
    quantityBytes(tx2.chain_id),
    quantityBytes(tx2.nonce),
    quantityBytes(tx2.max_priority_fee_per_gas),
    quantityBytes(tx2.max_fee_per_gas),
    quantityBytes(tx2.gas_limit),
    hexToBytes(strip0x(tx2.to).toLowerCase()),
    quantityBytes(tx2.value),
    hexToBytes(strip0x(tx2.data)),
    [],
    [authorization]
  ];
  const digest = keccak_256(concatBytes(Uint8Array.of(4), rlp(fields)));
  const s = secp256k1.Signature.fromBytes(secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: "recovered", extraEntropy: false }), "recovered");
  const raw = concatBytes(Uint8Array.of(4), rlp([...fields, quantityBytes(BigInt(s.recovery)), quantityBytes(s.r), quantityBytes(s.s)]));
  return { raw, hash: hex0x(keccak_256(raw)) };
}
var AUTHORIZE_GAS = 100000n;
function offerHash(offer) {
  const body = {};
  for (const k of Object.keys(offer)) if (k !== "signer_sig") body[k] = offer[k];
  return bytesToHex(sha256(utf8ToBytes(dumps(body, false))));
}
var GRANT_TYPES = dumps({
  EIP712Domain: [
    { name: "name", type: "string" },
    { name: "version", type: "string" },
    { name: "chainId", type: "uint256" },
    { name: "verifyingContract", type: "address" }
  ],
  Delegation: [
    { name: "delegate", type: "address" },
    { name: "delegator", type: "address" },
    { name: "authority", type: "bytes32" },
    { name: "caveats", type: "Caveat[]" },
    { name: "salt", type: "uint256" }
  ],
  Caveat: [{ name: "enforcer", type: "address" }, { name: "terms", type: "bytes" }]
}, false);
var same = (a, b) => typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();
var hexWord = (n) => n.toString(16).padStart(64, "0");
var SWAP_PIN_PREFIX = "0x" + [4, 32, 2, 64, 384, 260].map(hexWord).join("") + "414bf389";
var SWAP_PIN_LENGTH = 2 + 2 * (32 + 292);
function swapLanePayees(delegation) {
  return (delegation.caveats || []).filter((c) => typeof c.terms === "string" && c.terms.length === SWAP_PIN_LENGTH && c.terms.toLowerCase().startsWith(SWAP_PIN_PREFIX)).map((c) => "0x" + c.terms.slice(-40).toLowerCase());
}
function checkOffer(offer, signerKey, account) {
  if (!offer || typeof offer !== "object" || offer.kind !== "tier3.grant_offer") throw new Error("the bridge sent something that is not a grant offer");
  const hash = offerHash(offer);
  if (!signerKey || !signedBy(signerKey, DOMAINS2.offer, { offer_hash: hash }, offer.signer_sig)) {
    throw new Error("this grant offer is not signed by your signer (the bridge may be compromised): nothing was signed");
  }
  const { delegations, typed_data: docs, words } = offer;
  if (!Array.isArray(delegations) || !Array.isArray(docs) || !Array.isArray(words) || !delegations.length || delegations.length !== docs.length) {
    throw new Error("the grant offer is malformed: nothing was signed");
  }
  if (!same(offer.account, account)) throw new Error(`the offer is for account ${offer.account}, not this phone's ${account}`);
  const digests = delegations.map((d, i) => {
    const doc = docs[i], m = doc && doc.message;
    const ok = doc && doc.primaryType === "Delegation" && doc.types && dumps(doc.types, false) === GRANT_TYPES && doc.domain && doc.domain.name === "DelegationManager" && doc.domain.version === "1" && lexeme(doc.domain.chainId) === lexeme(offer.chain_id) && same(doc.domain.verifyingContract, offer.manager) && m && same(m.delegator, account) && same(d.delegator, account) && same(m.delegate, d.delegate) && same(m.delegate, offer.delegate) && m.authority === d.authority && lexeme(m.salt) === lexeme(d.salt) && Array.isArray(m.caveats) && Array.isArray(d.caveats) && m.caveats.length === d.caveats.length && m.caveats.every((c, j) => same(c.enforcer, d.caveats[j].enforcer) && c.terms === d.caveats[j].terms);
    if (!ok) throw new Error("a document in the offer is not the delegation it names: nothing was signed");
    for (const payee of swapLanePayees(d)) {
      if (!same(payee, account)) throw new Error(`the grant's swap lane would pay its tokens to ${payee}, not your account ${account}: nothing was signed`);
    }
    return typedDataDigest(doc);
  });
  const swapLanes = delegations.filter((d) => swapLanePayees(d).length).length;
  return { digests, hash, swapLanes };
}
function askParams(deviceId, seed, chainId, days, rotate) {
  const body = { device_id: deviceId, chain_id: chainId, days, rotate, ts: nowTs() };
  return { ...body, signature: deviceSign(seed, signedMessage(DOMAINS2.ask, body)) };
}
function answerParams(deviceId, seed, offer, hash, signatures, ts) {
  const body = { device_id: deviceId, offer_id: offer.offer_id, offer_hash: hash, signatures, ts };
  return { ...body, signature: deviceSign(seed, signedMessage(DOMAINS2.answer, body)) };
}
function recordEntry(offer, signatures) {
  return {
    chain_id: lexeme(offer.chain_id),
    manager: String(offer.manager).toLowerCase(),
    account: String(offer.account).toLowerCase(),
    delegate: String(offer.delegate).toLowerCase(),
    nonce: lexeme(offer.nonce),
    offer_id: offer.offer_id,
    signed_at: Date.now(),
    words: offer.words.map(String),
    delegations: offer.delegations.map((d, i) => ({ ...plainDelegation(d), signature: signatures[i] })),
    ended: null
  };
}
function plainDelegation(d) {
  return {
    delegate: d.delegate,
    delegator: d.delegator,
    authority: d.authority,
    salt: lexeme(d.salt),
    caveats: d.caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms, args: c.args }))
  };
}
async function authorize(settings, implementation, account, signWith) {
  if (!ADDRESS2.test(implementation || "")) throw new Error("the EIP7702StatelessDeleGator must be an address (0x and 40 hex digits)");
  await checkChain(settings);
  const { txHash, receipt } = await sendFromMain(settings, account, (fees) => signWith((secret) => signEip7702({
    ...fees,
    gas_limit: AUTHORIZE_GAS,
    to: account,
    value: 0n,
    data: "0x",
    implementation
  }, secret)));
  const code = String(await rpc(settings.rpc_url, "eth_getCode", [account, "latest"])).toLowerCase();
  if (!receipt || receipt.status !== "0x1" || code !== "0xef0100" + strip0x(implementation).toLowerCase()) {
    throw new Error(`the authorization did not take effect on chain (tx ${txHash}): nothing is delegated`);
  }
  return txHash;
}
async function requestOffer(session, deviceId, seedHex, chainId, days, rotate) {
  const seed = hexToBytes(seedHex);
  try {
    const reply = await session.call("tier3.offer", askParams(deviceId, seed, chainId, days, rotate));
    if (!reply.offer || typeof reply.offer !== "object") throw new Error("the bridge sent a malformed offer");
    return reply.offer;
  } finally {
    seed.fill(0);
  }
}
async function signOffer(session, device, account, offer, signWith, record) {
  const { digests, hash } = checkOffer(offer, device.signer_key, account);
  const signatures = await signWith((secret) => digests.map((d) => signDigest(d, secret)));
  await record(recordEntry(offer, signatures));
  const seed = hexToBytes(device.seed);
  try {
    return await session.call("tier3.grant_answer", answerParams(device.device_id, seed, offer, hash, signatures, nowTs()));
  } finally {
    seed.fill(0);
  }
}
function section2(ui) {
  const { el: el2, app: app2, v, visible: visible2 } = ui;
  const saved = app2.tier3 || {};
  const records = app2.tier3Grants || [];
  const days = el2("input", { id: "g3-days", value: "7", inputmode: "numeric", "aria-label": "days the grant lasts" });
  const delegator = el2("input", {
    id: "g3-delegator",
    value: saved.stateless_delegator || "",
    placeholder: "EIP7702StatelessDeleGator address",
    autocomplete: "off",
    spellcheck: "false",
    "aria-label": "EIP7702StatelessDeleGator address"
  });
  const pass = el2("input", { type: "password", id: "g3-pass", placeholder: "key passphrase", autocomplete: "current-password", hidden: v.kind !== "passphrase" });
  const result = el2("p", { id: "g3-result", class: "note" }, saved.grant_last ? visible2(saved.grant_last) : "");
  const offerBox = el2("div", { id: "g3-offer" });
  const signWith = (fn) => ui.vault.withSecret(pass.value, async (secret) => fn(secret));
  const settings = () => {
    const q = (id) => (document.getElementById(id) || {}).value;
    const s = checkSettings({ rpc_url: q("t3-rpc"), chain_id: q("t3-chain"), manager: q("t3-manager"), nonce_enforcer: q("t3-nonce-enforcer") });
    app2.tier3 = {
      ...app2.tier3 || {},
      rpc_url: s.rpc_url,
      chain_id: s.chain_id.toString(),
      manager: s.manager,
      nonce_enforcer: s.nonce_enforcer,
      stateless_delegator: delegator.value.trim().toLowerCase()
    };
    return s;
  };
  const say = async (message, isError) => {
    app2.tier3 = { ...app2.tier3 || {}, grant_last: message };
    await ui.store.put("kv", "tier3", app2.tier3);
    result.textContent = message;
    if (isError) ui.showError(message);
    await ui.render();
  };
  const whole = () => {
    if (!/^\d{1,3}$/.test(days.value.trim()) || Number(days.value) < 1 || Number(days.value) > 365) throw new Error("the grant lasts a whole number of days (1 to 365)");
    return Number(days.value.trim());
  };
  const showOffer = (offer) => {
    let checked;
    try {
      checked = checkOffer(offer, app2.device.signer_key, v.address);
    } catch (e) {
      app2.grantOffer = null;
      say(`Not signed: ${e.message}`, true);
      return;
    }
    app2.grantOffer = offer;
    offerBox.replaceChildren(
      el2("h3", {}, `Grant to session key ${visible2(offer.delegate)} (${visible2(offer.key_id)}) from ${v.address} on chain ${visible2(String(offer.chain_id))}`),
      el2("ul", { class: "grant-words" }, offer.words.map((w) => el2("li", {}, visible2(w)))),
      ...checked.swapLanes ? [el2("p", { class: "note" }, `Checked on this phone: the swap lane pays the tokens it buys only to this account (${v.address}).`)] : [],
      el2("p", { class: "note" }, "Only that key may use it. Periods are fixed on chain: around a period's end up to twice the period amount can go out. Revoke every grant below ends it on chain, even without the signer."),
      el2("button", { id: "g3-sign", class: "primary", onclick: async () => {
        ui.showError("");
        try {
          const reply = await signOffer(app2.session, app2.device, v.address, offer, signWith, async (entry) => {
            app2.tier3Grants = [...app2.tier3Grants || [], entry].slice(-50);
            await ui.store.put("kv", "tier3_grants", app2.tier3Grants);
          });
          app2.grantOffer = null;
          await say(`Granted: the signer took grant ${visible2(reply.grant && reply.grant.grant_id)} (${checked.digests.length} lane(s)) for session key ${visible2(offer.delegate)}.`);
        } catch (e) {
          app2.grantOffer = null;
          await say(`Grant refused: ${e.message || e}`, true);
        }
        pass.value = "";
        await ui.render();
      } }, "Sign this grant with the main key")
    );
  };
  const ask = (rotate) => async () => {
    ui.showError("");
    try {
      const s = settings();
      if (rotate) {
        result.textContent = "revoking every grant on chain\u2026";
        const done = await revokeAll(s, v.address, (tx2) => signWith((secret) => signEip1559(tx2, secret)));
        for (const r of app2.tier3Grants || []) if (r.ended === null && r.chain_id === s.chain_id.toString()) r.ended = `revoked on chain (nonce ${done.before} -> ${done.after})`;
        await ui.store.put("kv", "tier3_grants", app2.tier3Grants || []);
      }
      const offer = await requestOffer(app2.session, app2.device.device_id, app2.device.seed, Number(s.chain_id), whole(), rotate);
      app2.tier3 = { ...app2.tier3 || {}, grant_last: rotate ? "Old grants revoked; the signer rotated its session key. Check the new grant:" : "Check the grant:" };
      await ui.store.put("kv", "tier3", app2.tier3);
      showOffer(offer);
      await ui.render();
    } catch (e) {
      await say(`Not granted: ${e.message || e}`, true);
    }
  };
  if (app2.grantOffer) showOffer(app2.grantOffer);
  return el2(
    "section",
    { id: "tier3-grant" },
    el2("h2", {}, "Tier 3: grant from this phone"),
    el2("p", { class: "note" }, "Your main key, on this phone, lets the signer's session key spend within on-chain limits taken from your policy. Uses the node and addresses of the revoke section below."),
    el2("label", { for: "g3-delegator" }, "EIP7702StatelessDeleGator (once, to make the main account a smart account)"),
    delegator,
    el2("button", { id: "g3-authorize", onclick: async () => {
      ui.showError("");
      try {
        const s = settings();
        app2.tier3 = { ...app2.tier3 || {}, stateless_delegator: delegator.value.trim().toLowerCase() };
        await ui.store.put("kv", "tier3", app2.tier3);
        const tx2 = await authorize(s, delegator.value.trim(), v.address, signWith);
        await say(`Authorized: ${v.address} is now a smart account on chain ${s.chain_id} (tx ${tx2}). No funds moved.`);
      } catch (e) {
        await say(`Not authorized: ${e.message || e}`, true);
      }
      pass.value = "";
    } }, "Authorize (EIP-7702)"),
    el2("label", { for: "g3-days" }, "Days the grant lasts"),
    days,
    el2("label", { for: "g3-pass", hidden: v.kind !== "passphrase" }, "Key passphrase"),
    pass,
    el2("button", { id: "g3-offer-ask", onclick: ask(false) }, "Prepare a grant"),
    el2("button", { id: "g3-rotate", onclick: ask(true) }, "Rotate (revoke, new session key, grant)"),
    offerBox,
    result,
    el2("h3", {}, `Grants signed on this phone (${records.length})`),
    ...records.slice(-10).reverse().map((r) => el2(
      "div",
      { class: "grant-record" },
      `${r.ended ? "ENDED" : "signed"} ${new Date(r.signed_at).toLocaleString()}: to ${visible2(r.delegate)} on chain ${visible2(r.chain_id)} \u2014 ${r.words.map(visible2).join("; ")}`
    ))
  );
}
async function markEnded(app2, store, settings, account, done) {
  const named = [];
  for (const r of app2.tier3Grants || []) {
    if (r.ended === null && r.chain_id === settings.chain_id.toString() && same(r.account, account)) {
      r.ended = `revoked on chain (revocation nonce ${done.before} -> ${done.after}, tx ${done.tx_hash})`;
      named.push(`the grant to session key ${r.delegate}: ${r.words.join("; ")}`);
    }
  }
  await store.put("kv", "tier3_grants", app2.tier3Grants || []);
  return named.length ? ` Now dead: ${named.join(" | ")}.` : "";
}

// src/policy_edit.js
var DOMAINS3 = { view: "owliabot-policy-view-v1", edit: "owliabot-policy-edit-v1" };
var WINDOW_WORDS = { "1h": "Hourly", "24h": "Daily", "1d": "Daily", "7d": "Weekly", "30d": "30-day" };
var PER_WINDOW = { "1h": "an hour", "24h": "a day", "1d": "a day", "7d": "a week", "30d": "in 30 days" };
var ADDRESS3 = /^0x[0-9a-fA-F]{40}$/;
var st = { open: false, view: null, loading: false, draft: {}, added: [], removed: /* @__PURE__ */ new Set(), review: null, outcome: null };
var isOpen = () => st.open;
function checkView(view, signerKey) {
  if (!signerKey) throw new Error("this phone has no signer key from pairing: it cannot check the policy it is shown");
  if (!view || typeof view.policy_hash !== "string" || !/^[0-9a-f]{64}$/.test(view.policy_hash) || !view.policy || typeof view.policy !== "object") {
    throw new Error("the bridge sent a malformed policy");
  }
  if (!signedBy(signerKey, DOMAINS3.view, { policy_hash: view.policy_hash, policy: view.policy }, view.signer_sig)) {
    throw new Error("this policy is not signed by your signer (the bridge may be compromised): nothing is shown");
  }
  return { hash: view.policy_hash, policy: view.policy };
}
var limitName = (label) => label === "per_tx" ? "Per-transaction limit" : `${WINDOW_WORDS[label] || `${label} window`} limit`;
var chainWords = (policy, chain2) => {
  const c = (policy.chains || []).find((x) => text2(x.id) === text2(chain2));
  return c ? visible(c.name) : `chain ${text2(chain2)}`;
};
function amountWords(asset, amount) {
  if (amount === null || amount === void 0) return "no limit";
  const decimals = Number(text2(asset.decimals));
  const base = parseUnits(text2(amount), decimals);
  const usd = asset.price_usd === void 0 ? null : dollars(base, decimals, asset.price_usd);
  return `${formatUnits(base, decimals)} ${visible(asset.symbol)}${usd ? ` \u2248 ${usd}` : ""}`;
}
var hasLimits = (asset) => asset.per_tx !== null && asset.per_tx !== void 0 || Object.keys(asset.windows || {}).length > 0;
function limitLoosens(asset, was, now) {
  const decimals = Number(text2(asset.decimals));
  if (was === null || was === void 0) return !hasLimits(asset);
  if (now === null) return true;
  return parseUnits(text2(now), decimals) > parseUnits(text2(was), decimals);
}
function assetLines(asset) {
  const parts = [`${amountWords(asset, asset.per_tx)} a transaction`];
  for (const [label, amount] of Object.entries(asset.windows || {})) parts.push(`${amountWords(asset, amount)} ${PER_WINDOW[label] || `in any ${label}`}`);
  return hasLimits(asset) ? parts : ["no limits: every spend of it asks you"];
}
var fieldId = (i, label) => `pe-${i}-${label.replace(/[^a-z0-9]/gi, "")}`;
function diff(policy, draft, added, removed) {
  const edits = [], lines = [];
  (policy.assets || []).forEach((asset, i) => {
    const labels = ["per_tx", ...Object.keys(asset.windows || {})];
    for (const label of labels) {
      const id = fieldId(i, label);
      if (!(id in draft)) continue;
      const was = label === "per_tx" ? asset.per_tx : asset.windows[label];
      const typed = draft[id].trim();
      let now = null;
      if (typed !== "") {
        try {
          now = formatUnits(parseUnits(typed, Number(text2(asset.decimals))), Number(text2(asset.decimals)));
        } catch (e) {
          throw new Error(`${limitName(label)} for ${visible(asset.symbol)}: type an amount in ${visible(asset.symbol)}, like 0.01 (${e.message})`, { cause: e });
        }
      }
      const wasText = was === null || was === void 0 ? null : formatUnits(parseUnits(text2(was), Number(text2(asset.decimals))), Number(text2(asset.decimals)));
      if (now === wasText) continue;
      const looser = limitLoosens(asset, was, now);
      edits.push({ op: "limit", chain: asset.chain, asset: text2(asset.asset), limit: label, amount: now });
      lines.push({ looser, words: `${limitName(label)} for ${visible(asset.symbol)}: ${amountWords(asset, was)} \u2192 ${amountWords(asset, now)}` });
    }
  });
  const unknownAllowed = policy.recipients && policy.recipients.unknown === "allow";
  (policy.address_book || []).forEach((entry, i) => {
    const where = `${groupedAddress(entry.address)} on ${chainWords(policy, entry.chain)}`;
    if (removed.has(i)) {
      edits.push({ op: "book_remove", chain: entry.chain, address: text2(entry.address).toLowerCase() });
      lines.push({ looser: unknownAllowed, words: `Remove ${visible(entry.name)} (${where}) from the address book` });
      return;
    }
    const id = `pe-name-${i}`;
    if (!(id in draft) || draft[id].trim() === text2(entry.name)) return;
    const name = draft[id].trim();
    if (!name) throw new Error(`type a name for ${groupedAddress(entry.address)}, or remove it`);
    edits.push({ op: "book_rename", chain: entry.chain, address: text2(entry.address).toLowerCase(), name });
    lines.push({ looser: true, words: `Rename ${visible(entry.name)} \u2192 ${visible(name)} (${where})` });
  });
  for (const a of added) {
    edits.push({ op: "book_add", chain: a.chain, address: a.address.toLowerCase(), name: a.name });
    lines.push({ looser: true, words: `Add ${visible(a.name)} (${groupedAddress(a.address)} on ${chainWords(policy, a.chain)}) to the address book: the agent may pay it within your limits` });
  }
  return { edits, lines, loosens: lines.some((l) => l.looser) };
}
function editMessage(deviceId, baseHash, edits, ts) {
  return signedMessage(DOMAINS3.edit, { device_id: deviceId, base_hash: baseHash, edits, ts });
}
function personalSign(message, secret) {
  const prefix = utf8ToBytes(`Ethereum Signed Message:
${message.length}`);
  const digest = keccak_256(concatBytes(prefix, message));
  const sig = secp256k1.Signature.fromBytes(secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: "recovered", extraEntropy: false }), "recovered");
  const word2 = (n) => n.toString(16).padStart(64, "0");
  return "0x" + word2(sig.r) + word2(sig.s) + (27 + sig.recovery).toString(16);
}
async function send(session, device, baseHash, edits, loosens, withMainKey) {
  const ts = nowTs();
  const message = editMessage(device.device_id, baseHash, edits, ts);
  const seed = hexToBytes(device.seed);
  let signature;
  try {
    signature = deviceSign(seed, message);
  } finally {
    seed.fill(0);
  }
  const params = { device_id: device.device_id, base_hash: baseHash, edits, ts, signature };
  if (loosens) params.main_signature = await withMainKey((secret) => personalSign(message, secret));
  return session.call("policy.edit", params);
}
async function load3(ui) {
  const { app: app2 } = ui;
  st.loading = true;
  try {
    if (!app2.session || app2.status !== "connected") throw new Error("could not reach the bridge: try again when the phone is connected, or edit the policy file on the signer's machine and run owlia signer reload");
    st.view = checkView(await app2.session.call("policy.view"), app2.device.signer_key);
  } catch (e) {
    st.outcome = { ok: false, words: `Could not show your limits: ${e.message || e}` };
  } finally {
    st.loading = false;
  }
}
function reset() {
  st.draft = {};
  st.added = [];
  st.removed = /* @__PURE__ */ new Set();
  st.review = null;
}
function section3(ui) {
  return el(
    "section",
    { id: "policy" },
    el("h2", {}, "Limits & address book"),
    el("p", { class: "note" }, "What the agent may spend on its own, and the people it may pay. Tightening applies at once; loosening asks for your passkey."),
    el(
      "button",
      { id: "policy-open", onclick: async () => {
        st.open = true;
        st.outcome = null;
        reset();
        await ui.render();
        await load3(ui);
        await ui.render();
        window.scrollTo(0, 0);
      } },
      "Review limits and address book"
    )
  );
}
function typedInput(id, value, attrs) {
  const input = el("input", { id, autocomplete: "off", spellcheck: "false", ...attrs });
  input.value = id in st.draft ? st.draft[id] : value;
  input.addEventListener("input", () => {
    st.draft[id] = input.value;
    st.review = null;
  });
  return input;
}
function field(labelText, input, hint) {
  const hintNode = hint ? el("span", { class: "hint", id: `${input.id}-hint` }, hint) : null;
  if (hintNode) input.setAttribute("aria-describedby", hintNode.id);
  return el("div", { class: "field" }, el("label", { for: input.id }, labelText), input, hintNode);
}
function assetBlock(policy, asset, i) {
  const symbol = visible(asset.symbol);
  const labels = ["per_tx", ...Object.keys(asset.windows || {})];
  return el(
    "div",
    { class: "policy-asset", "data-asset": `${text2(asset.chain)}:${text2(asset.asset)}` },
    el("h3", {}, `${symbol} on ${chainWords(policy, asset.chain)}`),
    el("p", { class: "policy-words" }, `Now: ${assetLines(asset).join("; ")}.`),
    ...labels.map((label) => {
      const was = label === "per_tx" ? asset.per_tx : asset.windows[label];
      return field(
        `${limitName(label)} (${symbol})`,
        typedInput(fieldId(i, label), was === null || was === void 0 ? "" : text2(was), { inputmode: "decimal" }),
        `now ${amountWords(asset, was)}; leave empty for no limit`
      );
    })
  );
}
function bookBlock(policy, ui) {
  const book = policy.address_book || [];
  const chains = policy.chains || [];
  const newName = typedInput("pe-new-name", "", {});
  const newAddress = typedInput("pe-new-address", "", { autocapitalize: "off", inputmode: "text" });
  const chainPick = el("select", { id: "pe-new-chain" }, chains.map((c) => el("option", { value: text2(c.id) }, `${visible(c.name)} (${text2(c.id)})`)));
  return el(
    "div",
    { id: "policy-book" },
    el("h2", {}, `Address book (${book.length})`),
    book.length ? null : el("p", { class: "note" }, "No one yet: every payment to a new address asks you."),
    el("ul", { class: "book" }, book.map((entry, i) => {
      const gone = st.removed.has(i);
      return el(
        "li",
        { class: "book-entry" + (gone ? " removed" : ""), "data-address": checksum2(entry.address) },
        el("strong", { class: "book-name" }, visible(entry.name)),
        gone ? el("span", { class: "removed-mark" }, "TO BE REMOVED") : null,
        el("br"),
        el("code", { class: "address" }, groupedAddress(entry.address)),
        el("span", { class: "note" }, ` on ${chainWords(policy, entry.chain)}`),
        gone ? null : field(`Name for ${shortAddress(entry.address)}`, typedInput(`pe-name-${i}`, text2(entry.name), {})),
        el("button", {
          class: gone ? "book-keep" : "book-remove danger",
          "aria-label": `${gone ? "Keep" : "Remove"} ${visible(entry.name)}`,
          onclick: async () => {
            if (gone) st.removed.delete(i);
            else st.removed.add(i);
            st.review = null;
            await ui.render();
          }
        }, gone ? "Keep" : "Remove")
      );
    })),
    st.added.length ? el("ul", { class: "book added" }, st.added.map((a, k) => el(
      "li",
      { class: "book-entry new" },
      el("strong", {}, visible(a.name)),
      el("span", { class: "new-mark" }, "NEW"),
      el("br"),
      el("code", { class: "address" }, groupedAddress(a.address)),
      el("button", { class: "book-undo", "aria-label": `Do not add ${visible(a.name)}`, onclick: async () => {
        st.added.splice(k, 1);
        st.review = null;
        await ui.render();
      } }, "Do not add")
    ))) : null,
    el("h3", {}, "Add someone"),
    field("Name", newName),
    field("Address (0x\u2026)", newAddress, "checksummed or all lowercase"),
    chains.length > 1 ? field("Chain", chainPick) : null,
    el("button", { id: "pe-add", onclick: async () => {
      ui.showError("");
      const name = newName.value.trim(), address = newAddress.value.trim();
      const chain2 = chains.length > 1 ? chains.find((c) => text2(c.id) === chainPick.value).id : chains[0].id;
      try {
        if (!name) throw new Error("type a name for the new address");
        if (!ADDRESS3.test(address)) throw new Error("the address is 0x followed by 40 hex digits");
        if (address !== address.toLowerCase() && checksum2(address) !== address) throw new Error("that address has a bad checksum (a typo?): check it, or type it all lowercase");
        const lower2 = address.toLowerCase();
        if (book.some((e) => text2(e.address).toLowerCase() === lower2 && text2(e.chain) === text2(chain2)) || st.added.some((a) => a.address.toLowerCase() === lower2 && text2(a.chain) === text2(chain2))) {
          throw new Error("that address is already in the address book");
        }
        st.added.push({ chain: chain2, address: checksum2(lower2), name });
        delete st.draft["pe-new-name"];
        delete st.draft["pe-new-address"];
        st.review = null;
      } catch (e) {
        ui.showError(e.message);
      }
      await ui.render();
    } }, "Add to the list")
  );
}
function reviewBlock(ui, v) {
  const r = st.review;
  const pass = el("input", { type: "password", id: "pe-pass", autocomplete: "current-password", hidden: v.kind !== "passphrase" });
  return el(
    "section",
    { id: "policy-review", "aria-labelledby": "policy-review-title", tabindex: "-1" },
    el("h2", { id: "policy-review-title" }, r.loosens ? "Your change, in words (it loosens your policy)" : "Your change, in words"),
    el("ul", { class: "policy-diff" }, r.lines.map((l) => el(
      "li",
      { class: l.looser ? "looser" : "tighter" },
      `${l.words} `,
      el("span", { class: "tone" }, l.looser ? "(looser)" : "(tighter)")
    ))),
    el("p", { class: "note" }, r.loosens ? "Loosening lets the agent do more without asking you: your signer takes it only with your passkey." : "Only tighter: your signer applies it at once."),
    v.kind === "passphrase" && r.loosens ? el("label", { for: "pe-pass" }, "Key passphrase") : null,
    r.loosens ? pass : null,
    el(
      "button",
      { id: "pe-apply", class: "primary", onclick: () => apply(ui, v, pass.value) },
      r.loosens ? "Approve with passkey and apply" : "Apply now"
    ),
    el("button", { id: "pe-keep-editing", onclick: async () => {
      st.review = null;
      await ui.render();
    } }, "Keep editing")
  );
}
async function apply(ui, v, passphrase) {
  const { app: app2 } = ui;
  const r = st.review;
  ui.showError("");
  try {
    if (!app2.session || app2.status !== "connected") throw new Error("could not reach the bridge: nothing was sent. Try again when the phone is connected");
    const reply = await send(
      app2.session,
      app2.device,
      st.view.hash,
      r.edits,
      r.loosens,
      (fn) => ui.vault.withSecret(passphrase, async (secret) => fn(secret))
    );
    const judged = reply.loosened === true ? "Your signer judged it a loosening and took it with your passkey." : "Your signer judged it tighter and applied it at once.";
    st.outcome = { ok: true, words: `Policy changed: ${r.lines.map((l) => l.words).join("; ")}. ${judged}` };
    await ui.recordOutcome({ action: "policy", what: `Policy changed (${r.lines.length} change${r.lines.length === 1 ? "" : "s"})`, to: "" });
    reset();
    await load3(ui);
  } catch (e) {
    st.outcome = { ok: false, words: `Not changed: ${e.message || e}` };
    await ui.recordOutcome({ action: "policy", status: "refused", detail: e.message || String(e) });
    if (/in force is now|not in force yet/.test(e.message || "")) {
      reset();
      await load3(ui);
    } else if (/loosens your policy/.test(e.message || "") && !r.loosens) st.review = { ...r, loosens: true };
  }
  await ui.render();
  const box = document.getElementById("policy-outcome");
  if (box) {
    box.focus({ preventScroll: true });
    box.scrollIntoView({ block: "start" });
  }
}
function screen(ui, v) {
  const back = el("button", { id: "policy-back", onclick: async () => {
    st.open = false;
    reset();
    st.outcome = null;
    await ui.render();
  } }, "Back to home");
  const out = [el("h1", {}, "Limits & address book"), back];
  if (st.outcome) {
    out.push(el(
      "div",
      { id: "policy-outcome", class: `result ${st.outcome.ok ? "" : "denied"}`, role: st.outcome.ok ? "status" : "alert", tabindex: "-1" },
      el("p", {}, st.outcome.words)
    ));
  }
  if (!st.view) {
    out.push(el("p", { class: "note" }, st.loading ? "Asking your signer for the policy in force\u2026" : "No policy shown yet."));
    return out;
  }
  const policy = st.view.policy;
  out.push(el("p", { class: "note", id: "policy-source" }, `The policy in force on your signer (version ${st.view.hash.slice(0, 12)}), checked with your signer's key.`));
  if (st.review) {
    out.push(reviewBlock(ui, v));
    return out;
  }
  out.push(el("h2", {}, "Limits"));
  (policy.assets || []).forEach((asset, i) => out.push(assetBlock(policy, asset, i)));
  out.push(bookBlock(policy, ui));
  out.push(el("button", { id: "pe-review", class: "primary", onclick: async () => {
    ui.showError("");
    try {
      const r = diff(policy, st.draft, st.added, st.removed);
      if (!r.edits.length) throw new Error("nothing changed yet: edit a limit or the address book first");
      st.review = r;
      st.outcome = null;
    } catch (e) {
      ui.showError(e.message);
    }
    await ui.render();
    window.scrollTo(0, 0);
  } }, "Review the change"));
  return out;
}

// src/tier3freeze.js
var ZERO_ADDRESS = "0x" + "00".repeat(20);
var FREEZE_GAS = 150000n;
async function freeze2(settings, account, signWith, step = () => {
}) {
  step("asking the node");
  await checkChain(settings);
  const before = await currentNonce(settings, account);
  const { txHash, receipt } = await sendFromMain(settings, account, (fees) => signWith((secret) => signEip7702({
    ...fees,
    gas_limit: FREEZE_GAS,
    to: settings.nonce_enforcer,
    value: 0n,
    data: incrementNonceCalldata(settings.manager),
    implementation: ZERO_ADDRESS
  }, secret)), step);
  if (!receipt) throw new Error(`no receipt for ${txHash} yet: check it later, or freeze again`);
  const after = await currentNonce(settings, account);
  const code = String(await rpc(settings.rpc_url, "eth_getCode", [account, "latest"])).toLowerCase();
  if (receipt.status !== "0x1" || after <= before || code !== "0x" && code !== "") {
    throw new Error(`the freeze did not take effect on chain (tx ${txHash}): freeze again (or, on a computer with your main key: owlia wallet freeze)`);
  }
  return { before, after, tx_hash: txHash };
}
function resultLines(account, chainName2, done) {
  return [
    `Your main account ${shortAddress(account)} on ${chainName2} is a plain account again: no session key can spend from it through Tier 3.`,
    `Every grant it gave is dead on chain for good (revocation nonce ${done.before} \u2192 ${done.after}); authorizing it again later revives none of them.`,
    "Your funds did not move: they stay with your main key.",
    "To use Tier 3 again: authorize the account, then grant again, in the Tier 3 section below."
  ];
}
function control(ui) {
  const { el: el2, app: app2, v } = ui;
  const field2 = (id) => (document.getElementById(id) || {}).value;
  return el2(
    "div",
    { class: "tier3-freeze" },
    el2("p", { class: "note" }, "Freeze Tier 3 makes your main account a plain account again and ends every grant on chain for good, in one transaction from this phone to the node above. No bridge and no signer are needed. Your funds stay put."),
    el2("button", { id: "t3-freeze", class: "danger", onclick: async () => {
      ui.showError("");
      let settings;
      try {
        settings = checkSettings({ rpc_url: field2("t3-rpc"), chain_id: field2("t3-chain"), manager: field2("t3-manager"), nonce_enforcer: field2("t3-nonce-enforcer") });
      } catch (e) {
        return ui.showError(e.message);
      }
      app2.tier3 = { ...app2.tier3 || {}, rpc_url: settings.rpc_url, chain_id: settings.chain_id.toString(), manager: settings.manager, nonce_enforcer: settings.nonce_enforcer };
      await ui.store.put("kv", "tier3", app2.tier3);
      const known = (app2.home && app2.home.balances || []).find((b) => b && text2(b.chain_id) === settings.chain_id.toString());
      const chainName2 = known && known.chain ? visible(known.chain) : `chain ${settings.chain_id}`;
      const pass = field2("t3-pass") || "";
      const progress = document.getElementById("t3-result");
      try {
        const done = await freeze2(
          settings,
          v.address,
          (fn) => ui.vault.withSecret(pass, async (secret) => fn(secret)),
          (what) => {
            if (progress) progress.textContent = `Freezing Tier 3: ${what}\u2026`;
          }
        );
        await ui.markEnded(app2, ui.store, settings, v.address, done);
        await markTier3Ended(app2, ui.store, settings.chain_id, `frozen from this phone, revocation nonce ${done.before} \u2192 ${done.after}`);
        app2.tier3.last = `Tier 3 frozen on ${chainName2} (tx ${done.tx_hash}).`;
        app2.result = { kind: "frozen", title: "Tier 3 frozen", lines: resultLines(v.address, chainName2, done), fresh: true };
        await ui.recordOutcome({ action: "tier3-freeze", what: "Froze Tier 3", to: chainName2, chain_id: settings.chain_id.toString(), tx_hash: done.tx_hash });
      } catch (e) {
        const message = e.message || String(e);
        app2.tier3.last = `Tier 3 not frozen: ${message}`;
        app2.result = { kind: "denied", title: "Tier 3 not frozen", lines: [message, "Nothing changed on chain unless a transaction is named above."], fresh: true };
        await ui.recordOutcome({ action: "tier3-freeze", status: "refused", detail: message });
      }
      const box = document.getElementById("t3-pass");
      if (box) box.value = "";
      await ui.store.put("kv", "tier3", app2.tier3);
      await ui.render();
    } }, "Freeze Tier 3")
  );
}

// src/main.js
var app = {
  device: null,
  session: null,
  token: null,
  state: {},
  requests: /* @__PURE__ */ new Map(),
  forged: [],
  devices: null,
  status: "offline",
  error: "",
  result: null,
  pendingFreeze: null,
  confirmRevoke: null
};
var $ = (sel) => document.querySelector(sel);
function formatWei(wei) {
  const s = wei.toString().padStart(19, "0");
  const whole = s.slice(0, -18).replace(/^0+(?=\d)/, ""), frac = s.slice(-18).replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : whole;
}
function showError(message) {
  app.error = message;
  const box = $("#error");
  box.textContent = message;
  box.hidden = !message;
}
async function loadDevice() {
  app.device = await get("kv", "device") || null;
}
async function saveDevice(changes) {
  app.device = { ...app.device || {}, ...changes };
  await put("kv", "device", app.device);
}
function screen2(...children) {
  const main = $("#main");
  const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.id : "";
  const typed = /* @__PURE__ */ new Map();
  for (const f of main.querySelectorAll("input[id]:not([data-volatile]), textarea[id]:not([data-volatile])")) typed.set(f.id, { value: f.value, type: f.type });
  const chosen = main.querySelector("input[type=radio]:checked");
  main.replaceChildren(...children);
  for (const [id, was] of typed) {
    const f = document.getElementById(id);
    if (f && main.contains(f) && f.type === was.type && was.value && !f.value) f.value = was.value;
  }
  if (chosen) {
    const again = main.querySelector(`input[type=radio][name="${CSS.escape(chosen.name)}"][value="${CSS.escape(chosen.value)}"]`);
    if (again) again.checked = true;
  }
  if (focused) {
    const again = document.getElementById(focused);
    if (again) again.focus({ preventScroll: true });
  }
}
async function render() {
  const v = await load();
  const pending = await get("kv", "pending_pair");
  $("#status").textContent = app.device && app.device.device_id ? `${app.status}${app.state.frozen ? " \xB7 FROZEN" : ""}` : "not paired";
  $("#status").className = app.state.frozen ? "frozen" : app.status;
  if (!v) return renderSetup(pending);
  if (!v.backed_up) return renderBackup(v);
  if (!app.device || !app.device.device_id) return renderPair(v, pending);
  if (isOpen()) return screen2(...screen(policyUi(), v));
  return renderHome(v);
}
function protectionChoice() {
  const pass = el("input", { id: "seal-pass", type: "password", autocomplete: "new-password" });
  return el(
    "fieldset",
    { class: "protect" },
    el("legend", {}, "Protect it with"),
    el("label", {}, el("input", { type: "radio", name: "protect", value: "passkey", checked: true }), " a passkey (Face ID, fingerprint or device PIN)"),
    el("label", {}, el("input", { type: "radio", name: "protect", value: "passphrase" }), " a passphrase (where passkeys cannot)"),
    labelled("Passphrase (only with a passphrase; 8 or more characters)", pass)
  );
}
async function sealWith(secret) {
  const mode = document.querySelector("input[name=protect]:checked").value;
  if (mode === "passkey") {
    const id = await createPasskey("OwliaBot main key");
    return seal(secret, { passkey: id });
  }
  return seal(secret, { passphrase: $("#seal-pass").value });
}
function renderSetup(pending) {
  const importBox = el("textarea", { id: "import-text", rows: 4, autocomplete: "off", autocapitalize: "off", spellcheck: "false", "data-volatile": true });
  const importPass = el("input", { id: "import-pass", type: "password", autocomplete: "off", "data-volatile": true });
  const busy = async (fn) => {
    showError("");
    try {
      await fn();
    } catch (e) {
      showError(e.message || String(e));
    }
    await render();
  };
  screen2(
    el("h1", {}, "Your main key"),
    pending ? el("p", { class: "note" }, "Pairing link received. Set up the main key first; it never leaves this device.") : null,
    protectionChoice(),
    el("button", { id: "create-key", class: "primary", onclick: () => busy(async () => {
      const secret = newSecret();
      try {
        await sealWith(secret);
      } finally {
        secret.fill(0);
      }
    }) }, "Create a new key"),
    el("h2", {}, "Or import one"),
    labelled("A V3 keystore (JSON), a 12 or 24-word phrase, or a private key", importBox),
    labelled("Keystore passphrase (a keystore only)", importPass),
    el("button", { id: "import-key", onclick: () => busy(async () => {
      const raw = importBox.value.trim();
      let secret;
      if (raw.startsWith("{")) secret = await decryptKeystore(raw, importPass.value);
      else if (/^(0x)?[0-9a-fA-F]{64}$/.test(raw)) secret = checkSecret(hexToBytes(strip0x(raw)));
      else secret = await secretFromPhrase(raw);
      importBox.value = "";
      importPass.value = "";
      try {
        await sealWith(secret);
      } finally {
        secret.fill(0);
      }
    }) }, "Import")
  );
}
function renderBackup(v) {
  const pass = el("input", { id: "backup-pass", type: "password", autocomplete: "new-password" });
  const again = el("input", { id: "backup-pass2", type: "password", autocomplete: "new-password" });
  const unlock = el("input", { id: "unlock-pass", type: "password", autocomplete: "current-password" });
  const progress = el("p", { id: "backup-progress", class: "note", "aria-live": "polite" });
  screen2(
    el("h1", {}, "Back up the key"),
    el("p", {}, "Main account ", el("code", { class: "address" }, groupedAddress(v.address)), ". Approvals are blocked until a backup exists: without one, a lost phone is a lost key."),
    el("p", { class: "note" }, `The backup is a standard V3 keystore file (scrypt). MetaMask, geth and this app's "Or import one" read it. Keep it off this phone.`),
    labelled("Backup passphrase (8 or more characters)", pass),
    labelled("The same passphrase again", again),
    v.kind === "passphrase" ? labelled("Your key passphrase (to unlock the key)", unlock) : null,
    progress,
    el("button", { id: "backup", class: "primary", onclick: async () => {
      showError("");
      if (pass.value.length < 8 || pass.value !== again.value) return showError("the backup passphrase must be 8+ characters and typed twice the same");
      try {
        const keystore = await withSecret(unlock.value, (secret) => encryptKeystore(
          secret,
          pass.value,
          KEYSTORE_N,
          (p) => {
            progress.textContent = `encrypting ${Math.round(p * 100)} %`;
          }
        ));
        const blob = new Blob([JSON.stringify(keystore)], { type: "application/json" });
        const a = el("a", { href: URL.createObjectURL(blob), download: `owliabot-main-${v.address.slice(2, 10)}.json` });
        document.body.append(a);
        a.click();
        a.remove();
        pass.value = again.value = unlock.value = "";
        await markBackedUp();
        if (navigator.storage && navigator.storage.persist) await navigator.storage.persist();
      } catch (e) {
        showError(e.message || String(e));
      }
      await render();
    } }, "Download the backup")
  );
}
function renderPair(v, pending) {
  if (!pending) {
    return screen2(
      el("h1", {}, "Pair with your signer"),
      el("p", {}, "On the signer's machine run ", el("code", {}, "owlia companion pair"), " and open its QR code with this phone's camera.")
    );
  }
  const name = el("input", { id: "device-name", value: "phone", maxlength: 40, autocomplete: "off" });
  screen2(
    el("h1", {}, "Pair with your signer"),
    el("p", {}, "Signer identity key (check it matches the one ", el("code", {}, "owlia companion pair"), " printed):"),
    el("code", { class: "fingerprint" }, pending.signer.slice(0, 16) + "\u2026" + pending.signer.slice(-8)),
    el("p", {}, "Main account ", el("code", { class: "address" }, groupedAddress(v.address))),
    labelled("This device's name", name),
    el("button", { id: "pair", class: "primary", onclick: async () => {
      showError("");
      try {
        const seed = newDeviceSeed();
        const result = await pair(pending, seed, name.value || "phone", v.address);
        await saveDevice({
          seed: bytesToHex(seed),
          device_id: result.device_id,
          signer_key: result.signer_key,
          name: name.value || "phone",
          paired_at: Date.now()
        });
        await del("kv", "pending_pair");
        connect();
      } catch (e) {
        showError(`pairing refused: ${e.message}`);
      }
      await render();
    } }, "Pair this device")
  );
}
function renderHome(v) {
  const now = Date.now() / 1e3;
  const open2 = [...app.requests.values()].filter((r) => r.expires_at.value > now);
  const children = [];
  if (app.result) children.push(resultPanel(app.result));
  if (app.state.frozen) {
    children.push(el(
      "div",
      { class: "banner frozen", id: "frozen-banner", role: "status" },
      el("strong", {}, "Frozen: "),
      "no session key signs anything. Only an unfreeze from a paired device lifts it. ",
      "Session keys stay revoked after Unfreeze: create new ones for the agent."
    ));
  }
  if (app.pendingFreeze) children.push(pendingFreezeBanner());
  children.push(el("h1", {}, open2.length ? `${open2.length} waiting for you` : "Nothing to approve"));
  for (const r of open2) children.push(card(r, v));
  if (app.forged.length) children.push(el("p", { class: "warn", id: "forged" }, `Dropped ${app.forged.length} request(s) your signer did not sign (the bridge may be compromised). Nothing was signed for them.`));
  children.push(section(app.home, app.homeLive, refreshHome, app.homeProblem));
  const outstanding = outstandingSection();
  if (outstanding) children.push(outstanding);
  children.push(controls());
  children.push(section3(policyUi()));
  children.push(section2({ el, app, v, visible, vault: vault_exports, store: store_exports, showError, render }));
  children.push(tier3Section(v));
  children.push(activitySection());
  children.push(el(
    "section",
    { id: "this-device" },
    el("h2", {}, "This device"),
    el("p", {}, `${app.device.name} (${app.device.device_id}); key protected by ${v.kind === "passkey" ? "a passkey" : "a passphrase"}`),
    el("p", {}, "Main account ", el("code", { class: "address" }, groupedAddress(v.address)))
  ));
  children.push(devicesSection());
  screen2(...children);
  tick();
  if (app.result && app.result.fresh) {
    app.result.fresh = false;
    const panel = $("#result");
    if (panel) {
      panel.focus({ preventScroll: true });
      panel.scrollIntoView({ block: "start" });
    }
  }
}
function resultPanel(result) {
  const link = result.explorer ? el("a", { href: result.explorer, target: "_blank", rel: "noopener noreferrer" }, "View on the explorer") : null;
  return el(
    "section",
    { id: "result", class: `result ${result.kind}`, role: "status", tabindex: "-1", "aria-labelledby": "result-title" },
    el("h2", { id: "result-title" }, result.title),
    ...result.lines.map((line) => el("p", {}, line)),
    link,
    el("button", { id: "result-done", class: "primary", onclick: () => {
      app.result = null;
      render();
    } }, "Done")
  );
}
function pendingFreezeBanner() {
  return el(
    "div",
    { class: "banner pending-freeze", id: "pending-freeze", role: "alert" },
    el("strong", {}, "Freeze not sent yet: "),
    "this phone could not reach the bridge. It is sent as soon as the phone reconnects. ",
    "Freeze now from the signer's machine: ",
    el("code", {}, "owlia signer freeze"),
    " ",
    el("button", { id: "cancel-freeze", onclick: cancelPendingFreeze }, "Cancel the freeze")
  );
}
function card(r, v) {
  const journaled = approvedEntry(r.request_id);
  const canApprove = !!(app.device.signer_key && v.backed_up && (r.tx || r.kind === "policy"));
  return renderCard(r, {
    mainAddress: v.address,
    ownAccounts: ownAccounts(app.home),
    journaled,
    canApprove,
    needsPassphrase: v.kind === "passphrase",
    onAnswer: (action, passphrase) => answer(r, action, passphrase)
  });
}
function outstandingSection() {
  const entries = (app.journal || []).filter((e) => !isSettled(e));
  if (!entries.length) return null;
  return el(
    "section",
    { id: "outstanding" },
    el("h2", {}, `Signed, not yet on chain (${entries.length})`),
    el("p", { class: "note" }, "You signed these, but the bridge did not confirm they were sent. Whoever holds one can send it until its nonce is used: nothing to do if you still want the payment; to void one, send any transaction from your main account with that nonce."),
    ...entries.map((e) => el(
      "div",
      { class: "outstanding-entry" },
      el("strong", {}, `${formatWei(BigInt(e.value))} ETH to ${shortAddress(e.to)}`),
      el("br"),
      `nonce ${e.nonce} on ${chainName({ chain_id: e.chain_id })}, transaction ${text2(e.tx_hash).slice(0, 10)}\u2026${text2(e.tx_hash).slice(-4)}`,
      el("br"),
      el("span", { class: "note" }, `The bridge said: ${visible(e.reply).slice(0, 200)}`)
    ))
  );
}
function controls() {
  const keys = topupKeys(app.home);
  const keyId = keys.length ? el("select", { id: "topup-key" }, ...keys.map((k) => el("option", { value: k.id }, k.words))) : el("input", { id: "topup-key", autocomplete: "off", autocapitalize: "off", spellcheck: "false" });
  const amount = el("input", { id: "topup-amount", inputmode: "decimal", autocomplete: "off" });
  const kill = app.state.frozen ? el("button", { id: "unfreeze", onclick: () => freeze3("unfreeze") }, "Unfreeze") : el("button", { id: "freeze", class: "danger", onclick: () => freeze3("freeze"), disabled: !!app.pendingFreeze }, "Freeze now");
  return el(
    "section",
    { id: "controls" },
    el("h2", {}, "Controls"),
    kill,
    el("p", { class: "note" }, "Freeze stops every session key at once. Without this phone, run ", el("code", {}, "owlia signer freeze"), " on the signer's machine."),
    el("button", { id: "notify", onclick: enablePush }, "Notify me of new requests"),
    el("h3", {}, "Top up a session key"),
    keys.length ? labelled("Session key", keyId) : labelled("Session key id", keyId, "Starts with sk_; shown by the agent or the signer. Read the balances again to choose from your keys."),
    labelled("Amount in ETH", amount, "Leave empty to fill it up to its cap."),
    el("button", { id: "topup", onclick: () => topup(keyId.value.trim(), amount.value.trim()) }, "Request top-up")
  );
}
function tier3Section(v) {
  const saved = app.tier3 || {};
  const input = (id, value, placeholder) => el("input", { id, value: value || "", placeholder, autocomplete: "off", spellcheck: "false" });
  const rpcUrl = input("t3-rpc", saved.rpc_url, "chain node URL (https://...)");
  const chainId = input("t3-chain", saved.chain_id, "chain id");
  const manager = input("t3-manager", saved.manager, "DelegationManager address");
  const enforcer = input("t3-nonce-enforcer", saved.nonce_enforcer, "NonceEnforcer address");
  const pass = el("input", { type: "password", id: "t3-pass", placeholder: "key passphrase", autocomplete: "current-password", hidden: v.kind !== "passphrase" });
  const result = el("p", { id: "t3-result", class: "note" }, saved.last ? visible(saved.last) : "");
  return el(
    "section",
    { id: "tier3" },
    el("h2", {}, "Tier 3: revoke every grant"),
    el("p", { class: "note" }, "Ends every delegation your main key gave a session key, on chain, in one transaction from this phone to the node below. Works with the signer and the bridge gone (a stolen host). The addresses are in config.yaml on the signer machine (chains[].delegation)."),
    el("label", { for: "t3-rpc" }, "Chain node URL"),
    rpcUrl,
    el("label", { for: "t3-chain" }, "Chain id"),
    chainId,
    el("label", { for: "t3-manager" }, "DelegationManager address"),
    manager,
    el("label", { for: "t3-nonce-enforcer" }, "NonceEnforcer address"),
    enforcer,
    el("label", { for: "t3-pass", hidden: v.kind !== "passphrase" }, "Key passphrase"),
    pass,
    el("button", { id: "t3-revoke", class: "danger", onclick: async () => {
      showError("");
      let settings;
      try {
        settings = checkSettings({ rpc_url: rpcUrl.value, chain_id: chainId.value, manager: manager.value, nonce_enforcer: enforcer.value });
      } catch (e) {
        return showError(e.message);
      }
      app.tier3 = { ...saved, rpc_url: settings.rpc_url, chain_id: settings.chain_id.toString(), manager: settings.manager, nonce_enforcer: settings.nonce_enforcer };
      await put("kv", "tier3", app.tier3);
      try {
        const done = await revokeAll(
          settings,
          v.address,
          (tx2) => withSecret(pass.value, async (secret) => signEip1559(tx2, secret)),
          (what) => {
            result.textContent = `${what}\u2026`;
          }
        );
        app.tier3.last = `Revoked: every Tier 3 grant of ${v.address} on chain ${settings.chain_id} is dead on chain (revocation nonce ${done.before} -> ${done.after}, tx ${done.tx_hash}). No session key can spend from it through an earlier grant.`;
        app.tier3.last += await markEnded(app, store_exports, settings, v.address, done);
        await markTier3Ended(app, store_exports, settings.chain_id, `revoked from this phone, revocation nonce ${done.before} \u2192 ${done.after}`);
      } catch (e) {
        app.tier3.last = `Not revoked: ${e.message || e}`;
        showError(app.tier3.last);
      }
      pass.value = "";
      await put("kv", "tier3", app.tier3);
      await render();
    } }, "Revoke every grant on chain"),
    result,
    control({ el, app, v, vault: vault_exports, store: store_exports, showError, render, recordOutcome, markEnded })
  );
}
var ACTION_WORDS = {
  approve: "Approved",
  deny: "Denied",
  freeze: "Denied and froze",
  topup: "Top-up requested",
  notifications: "Notifications",
  "freeze-all": "Froze signing",
  unfreeze: "Unfroze signing",
  "freeze-queued": "Freeze queued (offline)",
  "freeze-cancelled": "Queued freeze cancelled",
  revoke: "Done",
  policy: "Applied",
  "tier3-freeze": "Tier 3 frozen"
};
function activitySection() {
  const list = (app.outcomes || []).slice(-15).reverse();
  return el(
    "section",
    { id: "activity" },
    el("h2", {}, "Activity"),
    list.length ? null : el("p", { class: "note" }, "Nothing yet."),
    el("ul", { class: "activity" }, list.map((o) => {
      const failed = o.status === "refused";
      const verb = failed ? `${ACTION_WORDS[o.action] ? o.action : "answer"} refused` : ACTION_WORDS[o.action] || o.action;
      const link = o.tx_hash ? explorerTx(o.chain_id, o.tx_hash) : null;
      const tone = failed ? " refused" : /^(approve|unfreeze|topup|notifications|policy)$/.test(o.action) ? " done" : /freeze/.test(o.action) ? " frozen" : "";
      return el(
        "li",
        { class: "activity-row" + tone, "data-request": o.request_id || null },
        el("span", { class: "what" }, o.what ? `${o.what}${o.to ? " to " + o.to : ""}` : verb),
        el("span", { class: "status" }, o.what ? verb : ""),
        el("span", { class: "meta" }, [
          new Date(o.at).toLocaleString(),
          o.request_id ? shortId(o.request_id) : null,
          o.detail ? visible(o.detail).slice(0, 120) : null
        ].filter(Boolean).join(" \xB7 ")),
        link ? el("a", { href: link, target: "_blank", rel: "noopener noreferrer" }, "explorer") : null
      );
    }))
  );
}
var when = (ts) => ts === null ? "never" : new Date(ts * 1e3).toLocaleString();
function devicesSection() {
  const list = app.devices && app.devices.devices || [];
  const active = list.filter((d) => d.revoked_at === null).length;
  return el(
    "section",
    { id: "devices" },
    el("h2", {}, `Paired devices (${active} active)`),
    list.length ? null : el("p", { class: "note" }, "The list comes from the bridge once connected."),
    ...list.map((d) => el(
      "div",
      { class: "device" + (d.revoked_at === null ? "" : " revoked"), "data-device": visible(d.device_id) },
      el("strong", { class: "device-name" }, visible(d.name)),
      d.this_device ? el("span", { class: "this-device" }, "this device") : null,
      d.revoked_at === null ? null : el("span", { class: "revoked-mark" }, "REVOKED"),
      el("br"),
      el("span", { class: "note" }, `last seen ${when(d.last_seen)}; paired ${when(d.created_at)}` + (d.revoked_at === null ? "" : `; revoked ${when(d.revoked_at)}`) + `; key ${visible(d.key_fingerprint).slice(0, 16)}`),
      d.revoked_at === null ? revokeControl(d) : null
    ))
  );
}
function revokeControl(d) {
  const name = visible(d.name);
  if (app.confirmRevoke !== d.device_id) {
    return el("button", {
      class: "revoke danger",
      "aria-label": `Revoke ${name}`,
      onclick: () => {
        app.confirmRevoke = d.device_id;
        render();
      }
    }, "Revoke");
  }
  return el(
    "div",
    { class: "confirm-revoke", role: "group", "aria-label": `Revoke ${name}?` },
    el("p", {}, d.this_device ? "Revoke this phone? It can no longer approve, deny or freeze; pair it again from the signer's machine." : `Revoke ${name}? Its answers are refused from now on and its connections close; pair it again from the signer's machine.`),
    el("button", { class: "revoke-yes danger", onclick: () => revokeDevice(d) }, `Yes, revoke ${name}`),
    el("button", { class: "revoke-no", onclick: () => {
      app.confirmRevoke = null;
      render();
    } }, "Keep it")
  );
}
async function revokeDevice(d) {
  showError("");
  app.confirmRevoke = null;
  const device = app.device, seed = hexToBytes(device.seed);
  try {
    if (!app.session || app.status !== "connected") throw new Error("could not reach the bridge; on the signer's machine run owlia companion revoke");
    const ts = nowTs();
    const body = { device_id: device.device_id, target_device_id: d.device_id, ts };
    const signature = deviceSign(seed, signedMessage(DOMAINS.revoke, body));
    await app.session.call("approvals.revoke_device", { ...body, signature });
    await recordOutcome({ action: "revoke", what: `Revoked ${visible(d.name)}`, to: "" });
    refreshDevices("", true).catch(() => {
    });
  } catch (e) {
    showError(`revoke refused: ${e.message}`);
    await recordOutcome({ action: "revoke", status: "refused", detail: e.message });
  } finally {
    seed.fill(0);
  }
  await render();
}
async function refreshDevices(rev, always) {
  if (!always && app.devices && app.devices.devices_rev === rev) return;
  try {
    app.devices = await fetchDevices(app.token);
    await put("kv", "devices", app.devices);
  } catch (e) {
    console.error(`device list: ${e.message}`);
    return;
  }
  await render();
}
var policyUi = () => ({ app, vault: vault_exports, showError, render, recordOutcome });
function tick() {
  const now = Date.now() / 1e3;
  for (const c of document.querySelectorAll(".countdown")) {
    const left = Math.floor(Number(c.dataset.expires) - now);
    c.textContent = left > 0 ? `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}` : "expired";
    const cardNode = c.closest(".card");
    if (left <= 0 && cardNode && !cardNode.classList.contains("expired")) {
      cardNode.classList.add("expired");
      const approve = cardNode.querySelector("button.approve");
      if (approve) approve.disabled = true;
      showCardError(cardNode, "This request expired: nothing was signed. The agent has to ask again.");
    }
  }
}
async function loadJournal() {
  app.journal = await get("kv", "journal") || [];
  app.outcomes = await get("kv", "outcomes") || [];
  app.devices = await get("kv", "devices") || null;
  app.tier3 = await get("kv", "tier3") || null;
  app.pendingFreeze = await get("kv", "pending_freeze") || null;
  app.tier3Grants = await get("kv", "tier3_grants") || [];
  await load2(app, store_exports);
}
function refreshHome() {
  return refresh(app, store_exports).then((read) => read ? render() : null).catch((e) => console.error(`home: ${e.message || e}`));
}
var saveJournal = () => put("kv", "journal", app.journal);
var approvedEntry = (requestId) => (app.journal || []).find((e) => e.request_id === requestId) || null;
async function settle(state) {
  const quote = verifiedQuote(state, app.device && app.device.signer_key);
  if (!quote) return null;
  const v = await load();
  if (v && applyQuote(app.journal, quote, v.address, Date.now() / 1e3)) await saveJournal();
  return quote;
}
async function recordOutcome(entry) {
  app.outcomes.push({ at: Date.now(), status: "ok", ...entry });
  app.outcomes = app.outcomes.slice(-50);
  await put("kv", "outcomes", app.outcomes);
}
var describe = (request) => request && request.actions ? summary2(request) : { what: "", to: "" };
function resultFor(request, action, result) {
  const { what, to } = describe(request);
  const about = what ? `${what}${to ? " to " + to : ""} on ${visible(chainName(request))}` : "";
  const txHash = visible(result.tx_hash);
  if (action === "approve" && request.kind === "policy") {
    return { kind: "approved", title: "Policy change approved", lines: ["Your signer applies the new policy now."] };
  }
  if (action === "approve") {
    return {
      kind: "approved",
      title: "Approved and sent",
      lines: [about, txHash ? `Transaction ${txHash.slice(0, 10)}\u2026${txHash.slice(-6)}` : ""].filter(Boolean),
      explorer: explorerTx(request.chain_id, txHash)
    };
  }
  if (action === "freeze") {
    return { kind: "frozen", title: "Denied and frozen", lines: [about, "Nothing was signed. Every session key is revoked and stays revoked after Unfreeze."].filter(Boolean) };
  }
  return { kind: "denied", title: "Denied", lines: [about, "Nothing was signed."].filter(Boolean) };
}
async function answer(request, action, passphrase) {
  showError("");
  const cardOf = () => document.querySelector(`article.card[data-request="${CSS.escape(request.request_id)}"]`);
  showCardError(cardOf(), "");
  app.result = null;
  const device = app.device, v = await load();
  const seed = hexToBytes(device.seed);
  const { what, to } = describe(request);
  let refusal = null;
  try {
    let digest, rawTx = null, txHash = "";
    if (action === "approve") {
      if (!v.backed_up) throw new Error("back up the key before the first approval");
      digest = verifiedHash(request, device.signer_key);
      if (request.kind === "policy") await withSecret(passphrase, async () => null);
      if (request.kind !== "policy") {
        if (!request.tx) throw new Error("this request has no transaction to sign; deny it");
        const first = approvedEntry(request.request_id);
        let nonce = int(request.tx.nonce, "nonce"), quotedAt = null;
        if (first) {
          if (isSettled(first)) throw new Error(`already approved as tx ${first.tx_hash} at nonce ${first.nonce}, and your signer shows that nonce used: nothing was signed again`);
          nonce = BigInt(first.nonce);
          quotedAt = first.quoted_at;
        } else {
          refuseIfFull(app.journal.filter((e) => !isSettled(e)).length);
          const quote = await settle(await app.session.call("approvals.state"));
          if (quote && fresh(quote)) {
            const q = quote.main_nonce[String(int(request.tx.chain_id, "chain id"))];
            if (q !== void 0 && BigInt(q) >= nonce) nonce = BigInt(q);
            quotedAt = quote.ts;
          }
        }
        const t = request.tx;
        if (t.from.toLowerCase() !== v.address.toLowerCase()) throw new Error("the request asks another account to sign");
        const signed = await withSecret(passphrase, async (secret) => signEip1559({
          chain_id: int(t.chain_id, "chain id"),
          nonce,
          max_priority_fee_per_gas: int(t.max_priority_fee_per_gas, "priority fee"),
          max_fee_per_gas: int(t.max_fee_per_gas, "max fee"),
          gas_limit: int(t.gas_limit, "gas limit"),
          to: t.to,
          value: int(t.value, "value"),
          data: t.data
        }, secret));
        rawTx = hex0x(signed.raw);
        txHash = signed.hash;
        if (!first) {
          const entry = newEntry({
            request_id: request.request_id,
            chain_id: Number(int(t.chain_id)),
            nonce: Number(nonce),
            tx_hash: txHash,
            to: toChecksum(t.to),
            value: int(t.value).toString(),
            summary: text2(request.summary).slice(0, 200),
            signed_at: Date.now() / 1e3,
            quoted_at: quotedAt,
            reply: "(no reply yet)"
          });
          app.journal = admit(app.journal, entry);
          await saveJournal();
        }
      }
    } else {
      digest = requestHash(request);
    }
    const signature = deviceSign(seed, answerMessage(request, digest, action, device.device_id, txHash));
    const params = {
      request_id: request.request_id,
      request_hash: digest,
      device_id: device.device_id,
      action,
      expires_at: request.expires_at,
      signature
    };
    if (rawTx) params.raw_tx = rawTx;
    let result;
    try {
      if (!app.session || app.status !== "connected") throw new Error("could not reach the bridge (this phone is offline); try again when connected");
      result = await app.session.call("approvals.answer", params);
    } catch (e) {
      if (txHash) await noteReply(request, `error: ${e.message}`);
      throw e;
    }
    if (txHash) await noteReply(request, `${text2(result.status)} ${text2(result.tx_hash)}`);
    await recordOutcome({
      request_id: request.request_id,
      action,
      what,
      to,
      chain_id: text2(request.chain_id),
      tx_hash: text2(result.tx_hash) || txHash || null
    });
    app.result = { ...resultFor(request, action, result), fresh: true };
    app.requests.delete(request.request_id);
    saveRequests();
    if (txHash) settle(await app.session.call("approvals.state")).catch(() => {
    });
    refreshHome();
  } catch (e) {
    refusal = `${action === "approve" ? "Approve" : action === "deny" ? "Deny" : "Deny and freeze"} refused: ${e.message || e}`;
    console.error(e.stack || String(e));
    await recordOutcome({ request_id: request.request_id, action, what, to, status: "refused", detail: e.message || String(e) });
  } finally {
    seed.fill(0);
    await render();
  }
  if (refusal && !showCardError(cardOf(), refusal)) showError(refusal);
}
async function noteReply(request, reply) {
  const e = approvedEntry(request.request_id);
  if (!e) return;
  e.reply = reply;
  await saveJournal();
}
async function freeze3(action) {
  showError("");
  if (action === "freeze" && (!app.session || app.status !== "connected")) return queueFreeze();
  const device = app.device, seed = hexToBytes(device.seed);
  try {
    let freezeId = "";
    if (action === "unfreeze") {
      app.state = await app.session.call("approvals.state");
      freezeId = text2(app.state.freeze_id);
    }
    const ts = nowTs();
    const body = { device_id: device.device_id, action, freeze_id: freezeId, ts };
    const signature = deviceSign(seed, signedMessage(DOMAINS.freeze, body));
    app.state = await app.session.call("approvals.freeze", { ...body, signature });
    await recordOutcome({ action: action === "freeze" ? "freeze-all" : "unfreeze" });
    refreshHome();
    if (action === "freeze") {
      app.result = { kind: "frozen", title: "Frozen", lines: ["No session key signs anything now. Session keys stay revoked after Unfreeze."], fresh: true };
    }
  } catch (e) {
    if (action === "freeze" && e.transport) {
      seed.fill(0);
      return queueFreeze(e.message);
    }
    showError(`${action} refused: ${e.message}`);
    await recordOutcome({ action, status: "refused", detail: e.message });
  } finally {
    seed.fill(0);
  }
  await render();
}
async function queueFreeze(why) {
  app.pendingFreeze = { at: Date.now() };
  await put("kv", "pending_freeze", app.pendingFreeze);
  await recordOutcome({ action: "freeze-queued", detail: why ? `could not reach the bridge: ${why}` : "could not reach the bridge" });
  await render();
  const banner = $("#pending-freeze");
  if (banner) banner.scrollIntoView({ block: "center" });
}
async function cancelPendingFreeze() {
  app.pendingFreeze = null;
  await del("kv", "pending_freeze");
  await recordOutcome({ action: "freeze-cancelled" });
  await render();
}
async function sendPendingFreeze() {
  if (!app.pendingFreeze || app.status !== "connected") return;
  app.pendingFreeze = null;
  await del("kv", "pending_freeze");
  await freeze3("freeze");
}
async function topup(keyId, amount) {
  showError("");
  const device = app.device, seed = hexToBytes(device.seed);
  try {
    if (!/^sk_[A-Za-z0-9_-]+$/.test(keyId)) throw new Error("type the session key id (it starts with sk_)");
    const wei = amount ? parseUnits(amount, 18) : null;
    if (wei === 0n) throw new Error("the amount must be more than 0 ETH (or empty: up to its cap)");
    const ts = nowTs();
    const body = { device_id: device.device_id, key_id: keyId, amount: wei === null ? null : wei.toString(), ts };
    const params = {
      device_id: device.device_id,
      key_id: keyId,
      ts,
      signature: deviceSign(seed, signedMessage(DOMAINS.topup, body))
    };
    if (wei !== null) params.amount = wei.toString();
    const result = await app.session.call("approvals.topup", params);
    for (const id of ["topup-key", "topup-amount"]) {
      const f = document.getElementById(id);
      if (f) f.value = "";
    }
    refreshHome();
    await recordOutcome({ request_id: text2(result.request_id) || null, action: "topup", what: `Top up ${amount || "to its cap"}${amount ? " ETH" : ""}`, to: sessionKeyWords(app.home, keyId) });
  } catch (e) {
    showError(`top-up refused: ${e.message}`);
  } finally {
    seed.fill(0);
  }
  await render();
}
async function enablePush() {
  showError("");
  try {
    if (!("PushManager" in window)) throw new Error("this browser has no Web Push (on iOS: add the app to the home screen first)");
    if (await Notification.requestPermission() !== "granted") throw new Error("notifications are not allowed");
    const resp = await fetch("/v1/push/key", { credentials: "omit", cache: "no-store" });
    if (!resp.ok) throw new Error("push is not enabled on this bridge");
    const { public_key: key } = await resp.json();
    const raw = Uint8Array.from(atob(key.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    const reg = await navigator.serviceWorker.ready;
    const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: raw });
    const seed = hexToBytes(app.device.seed);
    let token;
    try {
      token = await login(app.device.device_id, seed);
    } finally {
      seed.fill(0);
    }
    const done = await fetch("/v1/push/subscribe", {
      method: "POST",
      headers: { "content-type": "application/json" },
      credentials: "omit",
      body: JSON.stringify({ token, subscription: sub.toJSON() })
    });
    if (!done.ok) throw new Error(`the bridge refused the subscription (HTTP ${done.status})`);
    await recordOutcome({ action: "notifications", detail: "enabled" });
  } catch (e) {
    showError(`notifications: ${e.message}`);
  }
  await render();
}
function receive(requests) {
  for (const r of requests) {
    try {
      if (!r || typeof r !== "object" || typeof r.request_id !== "string" || !(r.expires_at instanceof Num)) throw new Error("not a request");
      verifiedHash(r, app.device.signer_key);
    } catch {
      app.forged.push(String(r && r.request_id).replace(/[^A-Za-z0-9_-]/g, "?").slice(0, 40));
      continue;
    }
    app.requests.set(r.request_id, r);
  }
  saveRequests();
  render();
}
async function saveRequests() {
  const now = Date.now() / 1e3;
  const texts = [...app.requests.values()].filter((r) => r.expires_at.value > now).map((r) => dumps(r, false));
  await put("kv", "requests", texts);
}
async function loadRequests() {
  const texts = await get("kv", "requests") || [];
  const requests = [];
  for (const t of texts) {
    try {
      requests.push(parse(t));
    } catch {
    }
  }
  receive(requests);
}
async function recheck() {
  if (!app.session || app.status !== "connected" || !(app.journal || []).some((e) => !isFinal(e))) return;
  const open2 = () => app.journal.filter((e) => !isSettled(e)).length;
  const before = open2();
  try {
    await settle(await app.session.call("approvals.state"));
  } catch {
    return;
  }
  if (open2() !== before) await render();
}
var reconnectTimer = null;
async function connect() {
  if (!app.device || !app.device.device_id) return;
  clearTimeout(reconnectTimer);
  const seed = hexToBytes(app.device.seed);
  try {
    const token = await login(app.device.device_id, seed);
    if (app.session) app.session.close();
    app.token = token;
    const session = new Session(token, {
      devices: (rev, always) => {
        if (app.session === session) refreshDevices(rev, always);
      },
      state: (s) => {
        app.state = s;
        settle(s).catch(() => {
        });
        render();
      },
      requests: receive,
      resolved: (id) => {
        app.requests.delete(id);
        saveRequests();
        render();
      },
      closed: () => {
        if (app.session !== session) return;
        app.status = "offline";
        render();
        reconnectTimer = setTimeout(connect, 2e3);
      }
    });
    app.session = session;
    await session.ready;
    app.status = "connected";
    if (app.error.startsWith("cannot reach the bridge")) showError("");
    sendPendingFreeze().catch((e) => console.error(`queued freeze: ${e.message}`));
    settle(await session.call("approvals.state")).then(render).catch(() => {
    });
    refreshHome();
  } catch (e) {
    app.status = "offline";
    const why = /failed to fetch|networkerror|load failed/i.test(e.message || "") ? "no network" : e.message;
    showError(`cannot reach the bridge (${why}); retrying every few seconds`);
    reconnectTimer = setTimeout(connect, 5e3);
  } finally {
    seed.fill(0);
  }
  await render();
}
async function start() {
  const pairing = parsePairFragment(location.hash);
  if (location.hash) history.replaceState(null, "", location.pathname);
  if (pairing) await put("kv", "pending_pair", pairing);
  await loadDevice();
  await loadJournal();
  if (app.device && app.device.device_id) await loadRequests();
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" }).catch(() => {
  });
  setInterval(tick, 1e3);
  setInterval(recheck, 5e3);
  await render();
  connect();
}
window.owlia = { status: () => app.status, requestIds: () => [...app.requests.keys()], forged: () => [...app.forged] };
start();

// The companion's wire protocol, exactly as the CLI companion speaks it (companion_bridge/companion):
// pairing proof (device signature + HMAC of sha256(code)), login challenge, the WebSocket frames,
// request verification with the signer's identity key, answers, freeze/unfreeze, top-up, quotes.
import { ed25519 } from '@noble/curves/ed25519.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256, bytesToHex, hexToBytes, randomBytes, utf8ToBytes, keccak_256 } from './eth.js';
import { dumps, parse, Num, nowTs } from './canon.js';

export const DOMAINS = {
  pair: 'owliabot-pair-v1', approval: 'owliabot-approval-v1', freeze: 'owliabot-freeze-v1',
  topup: 'owliabot-topup-v1', revoke: 'owliabot-revoke-v1', auth: 'owliabot-bridge-auth-v1', request: 'owliabot-request-v1', nonce: 'owliabot-nonce-v1',
};

// signer.wire.messages.signed_message: domain, newline, canonical JSON (ASCII-escaped).
export function signedMessage(domain, body) {
  return utf8ToBytes(domain + '\n' + dumps(body, true));
}

export function newDeviceSeed() { return randomBytes(32); }
export const devicePublic = (seed) => bytesToHex(ed25519.getPublicKey(seed));
export const deviceSign = (seed, message) => bytesToHex(ed25519.sign(message, seed));

export function signedBy(publicKeyHex, domain, body, signature) {
  if (typeof signature !== 'string' || !/^[0-9a-f]{128}$/.test(signature) || !/^[0-9a-f]{64}$/.test(publicKeyHex || '')) return false;
  try {
    return ed25519.verify(hexToBytes(signature), signedMessage(domain, body), hexToBytes(publicKeyHex), { zip215: false });
  } catch { return false; }
}

export function unsigned(request) {
  const out = {};
  for (const k of Object.keys(request)) if (k !== 'signer_sig') out[k] = request[k];
  return out;
}

// sha256 of the canonical JSON (ensure_ascii=False), as signer.approval_request.request_hash.
export function requestHash(request) {
  return bytesToHex(sha256(utf8ToBytes(dumps(unsigned(request), false))));
}

// The hash, only if the signer's identity key (from the pairing link) signed it; else throws.
export function verifiedHash(request, signerKey) {
  if (!signerKey) throw new Error('no signer key from pairing: this companion can deny, never approve');
  const digest = requestHash(request);
  if (!signedBy(signerKey, DOMAINS.request, { request_hash: digest }, request.signer_sig)) {
    throw new Error('this request is not signed by your signer (the bridge may be compromised)');
  }
  return digest;
}

export function normalizeCode(code) { return code.replace(/[- ]/g, '').toUpperCase(); }

export function pairingMac(code, message) {
  const key = utf8ToBytes(bytesToHex(sha256(utf8ToBytes(normalizeCode(code)))));
  return bytesToHex(hmac(sha256, key, message));
}

// The pairing link's fragment: #v=1&id=pair_..&code=..&signer=<hex>[&fp=<sha256 cert>]
export function parsePairFragment(hash) {
  const q = new URLSearchParams(hash.replace(/^#/, ''));
  const id = q.get('id'), code = q.get('code'), signer = q.get('signer');
  if (q.get('v') !== '1' || !/^pair_[0-9a-f]{16}$/.test(id || '') || !code || !/^[0-9a-f]{64}$/.test(signer || '')) return null;
  return { id, code, signer };
}

async function post(path, body) {
  const resp = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  const text = await resp.text();
  let data = null;
  try { data = parse(text); } catch { /* worded below */ }
  if (!resp.ok) {
    const detail = data && typeof data.detail === 'string' ? data.detail : `HTTP ${resp.status}`;
    throw new Error(detail.slice(0, 200));
  }
  if (!data || typeof data !== 'object') throw new Error('the bridge sent a malformed reply');
  return data;
}

export async function pair({ id, code, signer }, seed, name, mainAddress) {
  const body = { pairing_id: id, device_pub: devicePublic(seed), name, main_address: mainAddress.toLowerCase(),
    ts: nowTs(), nonce: bytesToHex(randomBytes(32)) };
  const message = signedMessage(DOMAINS.pair, body);
  const reply = await post('/v1/pair', { ...body, main_address: mainAddress,
    signature: deviceSign(seed, message), mac: pairingMac(code, message) });
  const deviceId = reply.device && reply.device.device_id;
  if (typeof deviceId !== 'string' || !/^dev_[0-9a-f]{16}$/.test(deviceId)) throw new Error('the bridge sent a malformed pairing reply');
  return { device_id: deviceId, signer_key: signer };
}

export async function login(deviceId, seed) {
  const challenge = await post('/v1/auth/challenge', { device_id: deviceId });
  const ts = nowTs();
  const signature = deviceSign(seed, signedMessage(DOMAINS.auth, { device_id: deviceId, aud: challenge.aud, nonce: challenge.nonce, ts }));
  const reply = await post('/v1/auth/token', { device_id: deviceId, nonce: challenge.nonce, ts, signature });
  if (typeof reply.token !== 'string') throw new Error('the bridge sent no token');
  return reply.token;
}

// A signed nonce quote (companion.quotes.verified_quote), or null.
export function verifiedQuote(state, signerKey) {
  if (!state || typeof state !== 'object' || !signerKey) return null;
  const names = 'main_nonce_mined' in state ? ['main_account', 'main_nonce', 'main_nonce_mined', 'ts'] : ['main_account', 'main_nonce', 'ts'];
  const quote = {};
  for (const n of names) quote[n] = state[n] === undefined ? null : state[n];
  if (!signedBy(signerKey, DOMAINS.nonce, quote, state.nonce_sig)) return null;
  const counts = (raw) => {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
    const out = {};
    for (const [k, v] of Object.entries(raw)) {
      if (!/^\d+$/.test(k) || !(v instanceof Num) || !/^\d+$/.test(v.text)) return null;
      out[k] = Number(v.text);
    }
    return out;
  };
  const nonces = counts(quote.main_nonce), mined = 'main_nonce_mined' in quote ? counts(quote.main_nonce_mined) : null;
  if (!(quote.ts instanceof Num) || nonces === null || typeof quote.main_account !== 'string') return null;
  if ('main_nonce_mined' in quote && mined === null) return null;
  return { main_account: quote.main_account, main_nonce: nonces, main_nonce_mined: mined, ts: quote.ts.value };
}

export const MAX_CLOCK_SKEW = 120;
export const fresh = (quote) => Math.abs(Date.now() / 1000 - quote.ts) <= MAX_CLOCK_SKEW;

export function answerMessage(request, digest, action, deviceId, txHash) {
  return signedMessage(DOMAINS.approval, { request_id: request.request_id, request_hash: digest, action,
    expires_at: request.expires_at, device_id: deviceId, tx_hash: txHash });
}

export const txHashOf = (raw) => '0x' + bytesToHex(keccak_256(raw));

// The paired devices, as the bridge relays them from the signer (GET /v1/devices with the connection
// token). Not signed by the signer: shown for information, never used to decide anything.
export async function fetchDevices(token) {
  const resp = await fetch('/v1/devices', { headers: { authorization: `Bearer ${token}` }, credentials: 'omit', cache: 'no-store' });
  if (!resp.ok) throw new Error(`the bridge refused the device list (HTTP ${resp.status})`);
  const body = await resp.json();
  const ts = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  if (!body || typeof body.devices_rev !== 'string' || !Array.isArray(body.devices)) throw new Error('the bridge sent a malformed device list');
  const devices = body.devices.filter((d) => d && typeof d.device_id === 'string' && typeof d.name === 'string')
    .map((d) => ({ device_id: d.device_id, name: d.name, key_fingerprint: String(d.key_fingerprint || ''),
      created_at: ts(d.created_at), last_seen: ts(d.last_seen), revoked_at: ts(d.revoked_at), this_device: d.this_device === true }));
  return { devices_rev: body.devices_rev, devices };
}

// The bridge could not be reached (as opposed to a refusal it relayed): the caller may retry later.
export function transportError(message) {
  const e = new Error(message);
  e.transport = true;
  return e;
}

// One authenticated WebSocket session with the bridge.
export class Session {
  constructor(token, handlers) {
    this.handlers = handlers;
    this.replies = new Map();
    this.ids = 1;
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/ws';
    this.ws = new WebSocket(url);
    this.ready = new Promise((resolve, reject) => {
      this.ws.onopen = () => this.ws.send(JSON.stringify({ type: 'hello', token }));
      this.ws.onclose = (ev) => {
        reject(transportError(`the bridge closed the connection (${ev.code})`));
        for (const f of this.replies.values()) f.reject(transportError('the bridge connection closed'));
        this.replies.clear();
        handlers.closed(ev.code);
      };
      this.ws.onmessage = (ev) => {
        let data;
        try { data = parse(ev.data); } catch { return; }
        if (!data || typeof data !== 'object' || Array.isArray(data)) return;
        if (data.type === 'welcome') {
          resolve(); handlers.state(data.state || {});
          if (handlers.devices) handlers.devices(typeof data.devices_rev === 'string' ? data.devices_rev : '', true);
        }
        else if (data.type === 'devices' && typeof data.devices_rev === 'string') { if (handlers.devices) handlers.devices(data.devices_rev, false); }
        else if (data.type === 'request') handlers.requests([data.request]);
        else if (data.type === 'requests' && Array.isArray(data.requests)) handlers.requests(data.requests);
        else if (data.type === 'state' && data.state && typeof data.state === 'object') handlers.state(data.state);
        else if (data.type === 'resolved' && typeof data.request_id === 'string') handlers.resolved(data.request_id);
        else if (data.type === 'reply' && data.id instanceof Num) {
          const f = this.replies.get(data.id.value);
          if (f) { this.replies.delete(data.id.value); f.resolve(data); }
        }
      };
    });
  }

  call(method, params, timeoutMs = 30000) {
    const id = this.ids++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { this.replies.delete(id); reject(transportError('no reply from the bridge')); }, timeoutMs);
      this.replies.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          if (reply.ok !== true && reply.ok !== false) return reject(new Error('the bridge sent a malformed reply'));
          if (!reply.ok) {
            const e = reply.error && typeof reply.error === 'object' ? reply.error : {};
            return reject(new Error(String(e.message || '(no message)').slice(0, 200)));
          }
          if (!reply.result || typeof reply.result !== 'object') return reject(new Error('the bridge sent a malformed reply'));
          resolve(reply.result);
        },
        reject: (e) => { clearTimeout(timer); reject(e); },
      });
      if (this.ws.readyState !== WebSocket.OPEN) { clearTimeout(timer); this.replies.delete(id); reject(transportError('not connected to the bridge')); return; }
      this.ws.send(dumps({ type: 'call', id, method, params: params === undefined ? null : params }, false));
    });
  }

  close() { try { this.ws.close(); } catch { /* already closed */ } }
}

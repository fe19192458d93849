// The main key at rest: AES-GCM ciphertext in IndexedDB, under a key derived (HKDF-SHA256) from a
// passkey's PRF output, so every approval asks for Face ID, a fingerprint or the device PIN
// (userVerification "required", and the UV flag is checked in the authenticator data). Where the
// authenticator has no PRF, the wrapping key comes from a passphrase (PBKDF2-SHA256, 600 000
// rounds). The decrypted key exists only inside `withSecret`, for one signature, then is wiped.
import * as store from './store.js';
import { addressOf, checkSecret, randomBytes, utf8ToBytes } from './eth.js';

const INFO = utf8ToBytes('owliabot companion main key v1');
const PBKDF2_ROUNDS = 600000;
const b64 = (b) => btoa(String.fromCharCode(...b));
const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

export class VaultError extends Error {}

export async function load() {
  return (await store.get('kv', 'vault')) || null;
}

export function prfSupported() {
  return !!(window.PublicKeyCredential && navigator.credentials);
}

async function hkdfKey(material, salt) {
  const base = await crypto.subtle.importKey('raw', material, 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey({ name: 'HKDF', hash: 'SHA-256', salt, info: INFO }, base,
    { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

async function pbkdf2Key(passphrase, salt) {
  const base = await crypto.subtle.importKey('raw', utf8ToBytes(passphrase), 'PBKDF2', false, ['deriveKey']);
  return crypto.subtle.deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations: PBKDF2_ROUNDS }, base,
    { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

function uvChecked(assertion) {
  const flags = new Uint8Array(assertion.response.authenticatorData)[32];
  if (!(flags & 0x04)) throw new VaultError('the passkey did not verify you (no biometrics or PIN): nothing was signed');
}

// A new passkey for this page; returns its id. PRF must be available, else the caller falls back.
export async function createPasskey(label) {
  const cred = await navigator.credentials.create({ publicKey: {
    rp: { name: 'OwliaBot companion', id: location.hostname },
    user: { id: randomBytes(16), name: label, displayName: label },
    challenge: randomBytes(32),
    pubKeyCredParams: [{ type: 'public-key', alg: -7 }, { type: 'public-key', alg: -8 }, { type: 'public-key', alg: -257 }],
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    extensions: { prf: {} },
  } });
  const ext = cred.getClientExtensionResults();
  if (!ext.prf || ext.prf.enabled === false) throw new VaultError('this passkey has no PRF');
  return b64(new Uint8Array(cred.rawId));
}

async function prfOutput(credentialId, salt) {
  const assertion = await navigator.credentials.get({ publicKey: {
    challenge: randomBytes(32), rpId: location.hostname, userVerification: 'required',
    allowCredentials: [{ type: 'public-key', id: unb64(credentialId) }],
    extensions: { prf: { eval: { first: salt } } },
  } });
  uvChecked(assertion);
  const res = assertion.getClientExtensionResults();
  const first = res.prf && res.prf.results && res.prf.results.first;
  if (!first) throw new VaultError('the passkey gave no PRF output');
  return new Uint8Array(first);
}

// Seal a new main key. `how` = {passkey: credentialId} or {passphrase}.
export async function seal(secret, how) {
  checkSecret(secret);
  const salt = randomBytes(32), iv = randomBytes(12);
  let key, kind;
  if (how.passkey) {
    const out = await prfOutput(how.passkey, salt);
    key = await hkdfKey(out, salt);
    out.fill(0);
    kind = 'passkey';
  } else {
    if (!how.passphrase || how.passphrase.length < 8) throw new VaultError('the passphrase must be at least 8 characters');
    key = await pbkdf2Key(how.passphrase, salt);
    kind = 'passphrase';
  }
  const address = addressOf(secret);
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: utf8ToBytes(address) }, key, secret));
  const vault = { kind, credential_id: how.passkey || null, salt: b64(salt), iv: b64(iv), ciphertext: b64(ct),
    address, backed_up: false, created_at: Date.now() };
  await store.put('kv', 'vault', vault);
  return vault;
}

// Decrypt the main key for one use: passkey (with user verification) or passphrase.
export async function withSecret(passphrase, fn) {
  const vault = await load();
  if (!vault) throw new VaultError('no main key on this device');
  const salt = unb64(vault.salt);
  let key;
  if (vault.kind === 'passkey') {
    const out = await prfOutput(vault.credential_id, salt);
    key = await hkdfKey(out, salt);
    out.fill(0);
  } else {
    key = await pbkdf2Key(passphrase || '', salt);
  }
  let secret;
  try {
    secret = new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: unb64(vault.iv),
      additionalData: utf8ToBytes(vault.address) }, key, unb64(vault.ciphertext)));
  } catch {
    throw new VaultError(vault.kind === 'passkey' ? 'that passkey does not unlock this key: nothing was signed'
      : 'wrong passphrase: nothing was signed');
  }
  try {
    if (addressOf(secret) !== vault.address) throw new VaultError('the stored key does not match its address');
    return await fn(secret);
  } finally {
    secret.fill(0);
  }
}

export async function markBackedUp() {
  const vault = await load();
  vault.backed_up = true;
  await store.put('kv', 'vault', vault);
}

// Ethereum for the page: EIP-1559 encoding and signing, addresses, V3 keystores, BIP-39.
// Byte-identical to eth-account (tests/companion/test_webapp.py compares them on vectors).
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { scryptAsync } from '@noble/hashes/scrypt.js';
import { pbkdf2Async } from '@noble/hashes/pbkdf2.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, concatBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { mnemonicToSeed, validateMnemonic, generateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { HDKey } from '@scure/bip32';

export { bytesToHex, hexToBytes, concatBytes, randomBytes, utf8ToBytes, keccak_256, sha256 };

export const strip0x = (h) => (h.startsWith('0x') || h.startsWith('0X') ? h.slice(2) : h);
export const hex0x = (b) => '0x' + bytesToHex(b);

function bigBytes(n, what = 'integer') {
  if (typeof n !== 'bigint') throw new TypeError(`${what} must be a BigInt, got ${typeof n}`);
  if (n < 0n) throw new Error(`negative ${what}`);
  if (n === 0n) return new Uint8Array(0);
  let h = n.toString(16);
  if (h.length % 2) h = '0' + h;
  return hexToBytes(h);
}

export function rlp(item) {
  if (item instanceof Uint8Array) {
    if (item.length === 1 && item[0] < 0x80) return item;
    return concatBytes(rlpLength(item.length, 0x80), item);
  }
  const body = concatBytes(...item.map(rlp));
  return concatBytes(rlpLength(body.length, 0xc0), body);
}

function rlpLength(len, offset) {
  if (len < 56) return Uint8Array.of(offset + len);
  const lb = bigBytes(BigInt(len));
  return concatBytes(Uint8Array.of(offset + 55 + lb.length), lb);
}

export function addressOfPub(pubUncompressed) {
  return hex0x(keccak_256(pubUncompressed.slice(1)).slice(12));
}

export function addressOf(secret) {
  return toChecksum(addressOfPub(secp256k1.getPublicKey(secret, false)));
}

export function toChecksum(address) {
  const body = strip0x(address).toLowerCase();
  if (!/^[0-9a-f]{40}$/.test(body)) throw new Error('not an address');
  const digest = bytesToHex(keccak_256(utf8ToBytes(body)));
  let out = '0x';
  for (let i = 0; i < 40; i++) out += parseInt(digest[i], 16) >= 8 ? body[i].toUpperCase() : body[i];
  return out;
}

// tx: {chain_id, nonce, max_priority_fee_per_gas, max_fee_per_gas, gas_limit, to, value, data}
// as BigInt (integers) and hex strings; returns {raw: Uint8Array, hash: '0x..'}.
export function signEip1559(tx, secret) {
  const fields = [
    bigBytes(tx.chain_id, 'chain id'), bigBytes(tx.nonce, 'nonce'), bigBytes(tx.max_priority_fee_per_gas, 'priority fee'),
    bigBytes(tx.max_fee_per_gas, 'max fee'), bigBytes(tx.gas_limit, 'gas limit'), hexToBytes(strip0x(tx.to).toLowerCase()),
    bigBytes(tx.value, 'value'), hexToBytes(strip0x(tx.data)), [],
  ];
  const digest = keccak_256(concatBytes(Uint8Array.of(2), rlp(fields)));
  const sigBytes = secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: 'recovered', extraEntropy: false });
  const sig = secp256k1.Signature.fromBytes(sigBytes, 'recovered');
  const raw = concatBytes(Uint8Array.of(2), rlp([...fields, bigBytes(BigInt(sig.recovery)), bigBytes(sig.r), bigBytes(sig.s)]));
  return { raw, hash: hex0x(keccak_256(raw)) };
}

export function newSecret() {
  return secp256k1.utils.randomSecretKey();
}

export function checkSecret(secret) {
  if (!(secret instanceof Uint8Array) || secret.length !== 32 || !secp256k1.utils.isValidSecretKey(secret)) {
    throw new Error('not a valid private key');
  }
  return secret;
}

// ---- V3 keystore (what geth, eth-account and every wallet read) ------------------------------

async function aesCtr(key16, iv, data) {
  const key = await crypto.subtle.importKey('raw', key16, 'AES-CTR', false, ['encrypt']);
  return new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-CTR', counter: iv, length: 128 }, key, data));
}

export const KEYSTORE_N = 2 ** 18; // eth-account's default

export async function encryptKeystore(secret, passphrase, n = KEYSTORE_N, onProgress) {
  const salt = randomBytes(32), iv = randomBytes(16);
  const dk = await scryptAsync(utf8ToBytes(passphrase), salt, { N: n, r: 8, p: 1, dkLen: 32, maxmem: 2 ** 30, onProgress });
  const ciphertext = await aesCtr(dk.slice(0, 16), iv, secret);
  const mac = keccak_256(concatBytes(dk.slice(16, 32), ciphertext));
  dk.fill(0);
  const id = bytesToHex(randomBytes(16)).replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
  return {
    address: strip0x(addressOf(secret)).toLowerCase(), id, version: 3,
    crypto: { cipher: 'aes-128-ctr', cipherparams: { iv: bytesToHex(iv) }, ciphertext: bytesToHex(ciphertext),
      kdf: 'scrypt', kdfparams: { dklen: 32, n, r: 8, p: 1, salt: bytesToHex(salt) }, mac: bytesToHex(mac) },
  };
}

export async function decryptKeystore(json, passphrase) {
  const ks = typeof json === 'string' ? JSON.parse(json) : json;
  const c = ks && (ks.crypto || ks.Crypto);
  if (!c || ks.version !== 3 || c.cipher !== 'aes-128-ctr') throw new Error('not a V3 keystore (aes-128-ctr)');
  const p = c.kdfparams, salt = hexToBytes(p.salt), pass = utf8ToBytes(passphrase);
  let dk;
  if (c.kdf === 'scrypt') {
    if (p.n > 2 ** 20 || p.r > 16 || p.p > 4) throw new Error('keystore scrypt parameters too large for a phone');
    dk = await scryptAsync(pass, salt, { N: p.n, r: p.r, p: p.p, dkLen: p.dklen, maxmem: 2 ** 31 });
  } else if (c.kdf === 'pbkdf2') {
    if (p.prf !== 'hmac-sha256') throw new Error('unsupported keystore pbkdf2 prf');
    dk = await pbkdf2Async(sha256, pass, salt, { c: p.c, dkLen: p.dklen });
  } else throw new Error('unsupported keystore kdf ' + String(c.kdf));
  const ciphertext = hexToBytes(c.ciphertext);
  const mac = bytesToHex(keccak_256(concatBytes(dk.slice(16, 32), ciphertext)));
  if (!equalHex(mac, String(c.mac).toLowerCase())) { dk.fill(0); throw new Error('wrong passphrase'); }
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

// ---- BIP-39 phrase -> the first account of the standard path (MetaMask, Ledger, Trezor) ------

export const ETH_PATH = "m/44'/60'/0'/0/0";

export async function secretFromPhrase(phrase, path = ETH_PATH) {
  const words = phrase.trim().toLowerCase().split(/\s+/).join(' ');
  if (!validateMnemonic(words, wordlist)) throw new Error('not a valid BIP-39 phrase (check the words and their order)');
  const seed = await mnemonicToSeed(words);
  const key = HDKey.fromMasterSeed(seed).derive(path);
  seed.fill(0);
  return checkSecret(Uint8Array.from(key.privateKey));
}

export function newPhrase() {
  return generateMnemonic(wordlist, 128);
}

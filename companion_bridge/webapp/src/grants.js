// Tier 3 signed on the phone (docs/tier3.md, "The grant from the phone"): the main key never needs the
// signer's host. Three acts:
//  - authorize: the EIP-7702 type-4 transaction (main account -> EIP7702StatelessDeleGator), sent by
//    this page to the owner's chain node, as the revoke in tier3.js;
//  - grant: the signer builds the offer from its policy (words, unsigned delegations, EIP-712 documents)
//    and signs it with its identity key; the page checks that signature (key from the pairing link), checks
//    every document is the delegation it names, from this account, on the offer's chain and manager,
//    shows the words, signs each document with the passkey-unlocked key, keeps its own record
//    (IndexedDB `tier3_grants`, like the CLI companion's grants.json) and returns the signatures;
//  - rotate: the revoke of tier3.js, then a grant to the signer's next session key.
// Same bytes as signer/wire/delegation.py (tests/companion/test_webapp_grants.py compares them).
import { secp256k1 } from '@noble/curves/secp256k1.js';
import * as eth from './eth.js';
import * as proto from './protocol.js';
import { Num, dumps, nowTs } from './canon.js';
import * as tier3 from './tier3.js';

export const DOMAINS = { ask: 'owliabot-grant-ask-v1', offer: 'owliabot-grant-offer-v1', answer: 'owliabot-grant-answer-v1' };
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEX = /^0x([0-9a-fA-F]{2})*$/;

// ---- EIP-712 (eth_signTypedData_v4) ----------------------------------------------------------

const lexeme = (v) => (v instanceof Num ? v.text : typeof v === 'bigint' ? v.toString() : String(v));

function uint256(v, what) {
  const t = lexeme(v);
  if (!/^(0|[1-9]\d*)$/.test(t)) throw new Error(`${what} is not a whole number`);
  const n = BigInt(t);
  if (n >= 1n << 256n) throw new Error(`${what} is out of range`);
  return eth.hexToBytes(n.toString(16).padStart(64, '0'));
}

function dependencies(primary, types, found = new Set()) {
  if (found.has(primary) || !types[primary]) return found;
  found.add(primary);
  for (const f of types[primary]) dependencies(f.type.replace(/\[\]$/, ''), types, found);
  return found;
}

export function encodeType(primary, types) {
  const deps = [...dependencies(primary, types)].filter((t) => t !== primary).sort();
  return [primary, ...deps].map((t) => `${t}(${types[t].map((f) => `${f.type} ${f.name}`).join(',')})`).join('');
}

function encodeValue(type, value, types) {
  if (type.endsWith('[]')) {
    if (!Array.isArray(value)) throw new Error(`${type} must be a list`);
    return eth.keccak_256(eth.concatBytes(...value.map((v) => encodeValue(type.slice(0, -2), v, types))));
  }
  if (types[type]) return hashStruct(type, value, types);
  if (type === 'string') return eth.keccak_256(eth.utf8ToBytes(String(value)));
  if (type === 'bytes') {
    if (typeof value !== 'string' || !HEX.test(value)) throw new Error('bytes must be 0x hex');
    return eth.keccak_256(eth.hexToBytes(eth.strip0x(value)));
  }
  if (type === 'bytes32') {
    if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(value)) throw new Error('bytes32 must be 32 bytes of hex');
    return eth.hexToBytes(eth.strip0x(value));
  }
  if (type === 'address') {
    if (typeof value !== 'string' || !ADDRESS.test(value)) throw new Error('not an address');
    return eth.hexToBytes('0'.repeat(24) + eth.strip0x(value).toLowerCase());
  }
  if (type === 'uint256') return uint256(value, 'a uint256');
  throw new Error(`EIP-712 type ${type} is not used by a grant`);
}

export function hashStruct(type, value, types) {
  if (!value || typeof value !== 'object') throw new Error(`${type} must be an object`);
  const typeHash = eth.keccak_256(eth.utf8ToBytes(encodeType(type, types)));
  return eth.keccak_256(eth.concatBytes(typeHash, ...types[type].map((f) => encodeValue(f.type, value[f.name], types))));
}

export function typedDataDigest(doc) {
  const types = doc.types;
  return eth.keccak_256(eth.concatBytes(Uint8Array.of(0x19, 0x01), hashStruct('EIP712Domain', doc.domain, types),
    hashStruct(doc.primaryType, doc.message, types)));
}

// 65 bytes r || s || v (v = 27/28), what signer.wire.delegation.sign_digest makes.
export function signDigest(digest, secret) {
  const raw = secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: 'recovered', extraEntropy: false });
  const sig = secp256k1.Signature.fromBytes(raw, 'recovered');
  const word = (n) => n.toString(16).padStart(64, '0');
  return '0x' + word(sig.r) + word(sig.s) + (27 + sig.recovery).toString(16);
}

// ---- EIP-7702 (type 4) ----------------------------------------------------------------------

function quantityBytes(n) {
  if (typeof n !== 'bigint' || n < 0n) throw new Error('a transaction field must be a non-negative BigInt');
  if (n === 0n) return new Uint8Array(0);
  const h = n.toString(16);
  return eth.hexToBytes(h.length % 2 ? '0' + h : h);
}

// tx: {chain_id, nonce, max_priority_fee_per_gas, max_fee_per_gas, gas_limit, to, value, data,
// implementation}: one authorization (nonce + 1: the sender's own transaction uses `nonce`).
export function signEip7702(tx, secret) {
  const authNonce = tx.nonce + 1n;
  const authFields = [quantityBytes(tx.chain_id), eth.hexToBytes(eth.strip0x(tx.implementation).toLowerCase()), quantityBytes(authNonce)];
  const authDigest = eth.keccak_256(eth.concatBytes(Uint8Array.of(0x05), eth.rlp(authFields)));
  const a = secp256k1.Signature.fromBytes(secp256k1.sign(authDigest, secret, { prehash: false, lowS: true, format: 'recovered', extraEntropy: false }), 'recovered');
  const authorization = [...authFields, quantityBytes(BigInt(a.recovery)), quantityBytes(a.r), quantityBytes(a.s)];
  const fields = [quantityBytes(tx.chain_id), quantityBytes(tx.nonce), quantityBytes(tx.max_priority_fee_per_gas),
    quantityBytes(tx.max_fee_per_gas), quantityBytes(tx.gas_limit), eth.hexToBytes(eth.strip0x(tx.to).toLowerCase()),
    quantityBytes(tx.value), eth.hexToBytes(eth.strip0x(tx.data)), [], [authorization]];
  const digest = eth.keccak_256(eth.concatBytes(Uint8Array.of(0x04), eth.rlp(fields)));
  const s = secp256k1.Signature.fromBytes(secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: 'recovered', extraEntropy: false }), 'recovered');
  const raw = eth.concatBytes(Uint8Array.of(0x04), eth.rlp([...fields, quantityBytes(BigInt(s.recovery)), quantityBytes(s.r), quantityBytes(s.s)]));
  return { raw, hash: eth.hex0x(eth.keccak_256(raw)) };
}

export const AUTHORIZE_GAS = 100000n;

// ---- the offer ------------------------------------------------------------------------------

export function offerHash(offer) {
  const body = {};
  for (const k of Object.keys(offer)) if (k !== 'signer_sig') body[k] = offer[k];
  return eth.bytesToHex(eth.sha256(eth.utf8ToBytes(dumps(body, false))));
}

// The only EIP-712 types a grant uses (signer/wire/delegation.py typed_data): a document with any
// other types would hash to a digest that is not its delegation's.
const GRANT_TYPES = dumps({
  EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' }],
  Delegation: [{ name: 'delegate', type: 'address' }, { name: 'delegator', type: 'address' }, { name: 'authority', type: 'bytes32' },
    { name: 'caveats', type: 'Caveat[]' }, { name: 'salt', type: 'uint256' }],
  Caveat: [{ name: 'enforcer', type: 'address' }, { name: 'terms', type: 'bytes' }],
}, false);

const same = (a, b) => typeof a === 'string' && typeof b === 'string' && a.toLowerCase() === b.toLowerCase();

// A swap lane's first AllowedCalldata range (signer/wire/swap_template.py): from calldata byte 4 the
// layout of multicall([exactInputSingle, refundETH]), the function, then tokenIn, tokenOut, fee and,
// last, the recipient of the swap's output. The page reads that recipient itself: whatever the words say,
// a swap lane that would pay anyone but this phone's account is not signed.
const hexWord = (n) => n.toString(16).padStart(64, '0');
const SWAP_PIN_PREFIX = '0x' + [4, 0x20, 2, 0x40, 0x180, 0x104].map(hexWord).join('') + '414bf389';
const SWAP_PIN_LENGTH = 2 + 2 * (32 + 292);

export function swapLanePayees(delegation) {
  return (delegation.caveats || [])
    .filter((c) => typeof c.terms === 'string' && c.terms.length === SWAP_PIN_LENGTH && c.terms.toLowerCase().startsWith(SWAP_PIN_PREFIX))
    .map((c) => '0x' + c.terms.slice(-40).toLowerCase());
}

// Throws unless the signer signed this offer and every document is exactly the delegation it names,
// from `account`, for the offer's chain and manager. Returns {digests, hash}.
export function checkOffer(offer, signerKey, account) {
  if (!offer || typeof offer !== 'object' || offer.kind !== 'tier3.grant_offer') throw new Error('the bridge sent something that is not a grant offer');
  const hash = offerHash(offer);
  if (!signerKey || !proto.signedBy(signerKey, DOMAINS.offer, { offer_hash: hash }, offer.signer_sig)) {
    throw new Error('this grant offer is not signed by your signer (the bridge may be compromised): nothing was signed');
  }
  const { delegations, typed_data: docs, words } = offer;
  if (!Array.isArray(delegations) || !Array.isArray(docs) || !Array.isArray(words) || !delegations.length || delegations.length !== docs.length) {
    throw new Error('the grant offer is malformed: nothing was signed');
  }
  if (!same(offer.account, account)) throw new Error(`the offer is for account ${offer.account}, not this phone's ${account}`);
  const digests = delegations.map((d, i) => {
    const doc = docs[i], m = doc && doc.message;
    const ok = doc && doc.primaryType === 'Delegation' && doc.types && dumps(doc.types, false) === GRANT_TYPES && doc.domain && doc.domain.name === 'DelegationManager' && doc.domain.version === '1'
      && lexeme(doc.domain.chainId) === lexeme(offer.chain_id) && same(doc.domain.verifyingContract, offer.manager)
      && m && same(m.delegator, account) && same(d.delegator, account) && same(m.delegate, d.delegate) && same(m.delegate, offer.delegate)
      && m.authority === d.authority && lexeme(m.salt) === lexeme(d.salt)
      && Array.isArray(m.caveats) && Array.isArray(d.caveats) && m.caveats.length === d.caveats.length
      && m.caveats.every((c, j) => same(c.enforcer, d.caveats[j].enforcer) && c.terms === d.caveats[j].terms);
    if (!ok) throw new Error('a document in the offer is not the delegation it names: nothing was signed');
    for (const payee of swapLanePayees(d)) {
      if (!same(payee, account)) throw new Error(`the grant's swap lane would pay its tokens to ${payee}, not your account ${account}: nothing was signed`);
    }
    return typedDataDigest(doc);
  });
  const swapLanes = delegations.filter((d) => swapLanePayees(d).length).length;
  return { digests, hash, swapLanes };
}

// The device's request for an offer, and its answer (signer/wire/messages.py grant_ask_body / grant_answer_body).
export function askParams(deviceId, seed, chainId, days, rotate) {
  const body = { device_id: deviceId, chain_id: chainId, days, rotate, ts: nowTs() };
  return { ...body, signature: proto.deviceSign(seed, proto.signedMessage(DOMAINS.ask, body)) };
}

export function answerParams(deviceId, seed, offer, hash, signatures, ts) {
  const body = { device_id: deviceId, offer_id: offer.offer_id, offer_hash: hash, signatures, ts };
  return { ...body, signature: proto.deviceSign(seed, proto.signedMessage(DOMAINS.answer, body)) };
}

// The phone's record of what it signed: enough to name each grant when it revokes, and to prove what it signed.
export function recordEntry(offer, signatures) {
  return { chain_id: lexeme(offer.chain_id), manager: String(offer.manager).toLowerCase(), account: String(offer.account).toLowerCase(),
    delegate: String(offer.delegate).toLowerCase(), nonce: lexeme(offer.nonce), offer_id: offer.offer_id, signed_at: Date.now(),
    words: offer.words.map(String), delegations: offer.delegations.map((d, i) => ({ ...plainDelegation(d), signature: signatures[i] })),
    ended: null };
}

function plainDelegation(d) {
  return { delegate: d.delegate, delegator: d.delegator, authority: d.authority, salt: lexeme(d.salt),
    caveats: d.caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms, args: c.args })) };
}

// ---- acts -----------------------------------------------------------------------------------

// EIP-7702 from the phone to the owner's node: the account's code becomes the StatelessDeleGator.
export async function authorize(settings, implementation, account, signWith) {
  if (!ADDRESS.test(implementation || '')) throw new Error('the EIP7702StatelessDeleGator must be an address (0x and 40 hex digits)');
  await tier3.checkChain(settings);
  const { txHash, receipt } = await tier3.sendFromMain(settings, account, (fees) => signWith((secret) => signEip7702({ ...fees,
    gas_limit: AUTHORIZE_GAS, to: account, value: 0n, data: '0x', implementation }, secret)));
  const code = String(await tier3.rpc(settings.rpc_url, 'eth_getCode', [account, 'latest'])).toLowerCase();
  if (!receipt || receipt.status !== '0x1' || code !== '0xef0100' + eth.strip0x(implementation).toLowerCase()) {
    throw new Error(`the authorization did not take effect on chain (tx ${txHash}): nothing is delegated`);
  }
  return txHash;
}

// Ask the signer (through the bridge) for an offer; nothing is signed yet.
export async function requestOffer(session, deviceId, seedHex, chainId, days, rotate) {
  const seed = eth.hexToBytes(seedHex);
  try {
    const reply = await session.call('tier3.offer', askParams(deviceId, seed, chainId, days, rotate));
    if (!reply.offer || typeof reply.offer !== 'object') throw new Error('the bridge sent a malformed offer');
    return reply.offer;
  } finally { seed.fill(0); }
}

// Sign a checked offer with the main key, record it, send the signatures. Returns the signer's reply.
export async function signOffer(session, device, account, offer, signWith, record) {
  const { digests, hash } = checkOffer(offer, device.signer_key, account);
  const signatures = await signWith((secret) => digests.map((d) => signDigest(d, secret)));
  await record(recordEntry(offer, signatures));  // before the signatures leave the page
  const seed = eth.hexToBytes(device.seed);
  try {
    return await session.call('tier3.grant_answer', answerParams(device.device_id, seed, offer, hash, signatures, nowTs()));
  } finally { seed.fill(0); }
}

// ---- the screen section (its own module: main.js only mounts it) -----------------------------

export function section(ui) {
  const { el, app, v, visible } = ui;
  const saved = app.tier3 || {};
  const records = app.tier3Grants || [];
  const days = el('input', { id: 'g3-days', value: '7', inputmode: 'numeric', 'aria-label': 'days the grant lasts' });
  const delegator = el('input', { id: 'g3-delegator', value: saved.stateless_delegator || '', placeholder: 'EIP7702StatelessDeleGator address',
    autocomplete: 'off', spellcheck: 'false', 'aria-label': 'EIP7702StatelessDeleGator address' });
  const pass = el('input', { type: 'password', id: 'g3-pass', placeholder: 'key passphrase', autocomplete: 'current-password', hidden: v.kind !== 'passphrase' });
  const result = el('p', { id: 'g3-result', class: 'note' }, saved.grant_last ? visible(saved.grant_last) : '');
  const offerBox = el('div', { id: 'g3-offer' });
  const signWith = (fn) => ui.vault.withSecret(pass.value, async (secret) => fn(secret));
  const settings = () => {
    const q = (id) => (document.getElementById(id) || {}).value;
    const s = tier3.checkSettings({ rpc_url: q('t3-rpc'), chain_id: q('t3-chain'), manager: q('t3-manager'), nonce_enforcer: q('t3-nonce-enforcer') });
    // kept (like the revoke's fields) so a re-render does not lose what the owner typed
    app.tier3 = { ...(app.tier3 || {}), rpc_url: s.rpc_url, chain_id: s.chain_id.toString(), manager: s.manager, nonce_enforcer: s.nonce_enforcer,
      stateless_delegator: delegator.value.trim().toLowerCase() };
    return s;
  };
  const say = async (message, isError) => {
    app.tier3 = { ...(app.tier3 || {}), grant_last: message };
    await ui.store.put('kv', 'tier3', app.tier3);
    result.textContent = message;
    if (isError) ui.showError(message);
    await ui.render();  // a state push may have rebuilt the screen meanwhile: show it in the live one
  };
  const whole = () => {
    if (!/^\d{1,3}$/.test(days.value.trim()) || Number(days.value) < 1 || Number(days.value) > 365) throw new Error('the grant lasts a whole number of days (1 to 365)');
    return Number(days.value.trim());
  };
  const showOffer = (offer) => {
    let checked;
    try { checked = checkOffer(offer, app.device.signer_key, v.address); } catch (e) { app.grantOffer = null; say(`Not signed: ${e.message}`, true); return; }
    app.grantOffer = offer;  // kept in memory across re-renders until signed or replaced
    offerBox.replaceChildren(
      el('h3', {}, `Grant to session key ${visible(offer.delegate)} (${visible(offer.key_id)}) from ${v.address} on chain ${visible(String(offer.chain_id))}`),
      el('ul', { class: 'grant-words' }, offer.words.map((w) => el('li', {}, visible(w)))),
      ...(checked.swapLanes ? [el('p', { class: 'note' }, `Checked on this phone: the swap lane pays the tokens it buys only to this account (${v.address}).`)] : []),
      el('p', { class: 'note' }, 'Only that key may use it. Periods are fixed on chain: around a period\'s end up to twice the period amount can go out. '
        + 'Revoke every grant below ends it on chain, even without the signer.'),
      el('button', { id: 'g3-sign', class: 'primary', onclick: async () => {
        ui.showError('');
        try {
          const reply = await signOffer(app.session, app.device, v.address, offer, signWith, async (entry) => {
            app.tier3Grants = [...(app.tier3Grants || []), entry].slice(-50);
            await ui.store.put('kv', 'tier3_grants', app.tier3Grants);
          });
          app.grantOffer = null;
          await say(`Granted: the signer took grant ${visible(reply.grant && reply.grant.grant_id)} (${checked.digests.length} lane(s)) for session key ${visible(offer.delegate)}.`);
        } catch (e) { app.grantOffer = null; await say(`Grant refused: ${e.message || e}`, true); }
        pass.value = '';
        await ui.render();
      } }, 'Sign this grant with the main key'));
  };
  const ask = (rotate) => async () => {
    ui.showError('');
    try {
      const s = settings();
      if (rotate) {
        result.textContent = 'revoking every grant on chain…';
        const done = await tier3.revokeAll(s, v.address, (tx) => signWith((secret) => eth.signEip1559(tx, secret)));
        for (const r of app.tier3Grants || []) if (r.ended === null && r.chain_id === s.chain_id.toString()) r.ended = `revoked on chain (nonce ${done.before} -> ${done.after})`;
        await ui.store.put('kv', 'tier3_grants', app.tier3Grants || []);
      }
      const offer = await requestOffer(app.session, app.device.device_id, app.device.seed, Number(s.chain_id), whole(), rotate);
      app.tier3 = { ...(app.tier3 || {}), grant_last: rotate ? 'Old grants revoked; the signer rotated its session key. Check the new grant:' : 'Check the grant:' };
      await ui.store.put('kv', 'tier3', app.tier3);
      showOffer(offer);
      await ui.render();  // from app.grantOffer, in whatever screen is live now
    } catch (e) { await say(`Not granted: ${e.message || e}`, true); }
  };
  if (app.grantOffer) showOffer(app.grantOffer);
  return el('section', { id: 'tier3-grant' }, el('h2', {}, 'Tier 3: grant from this phone'),
    el('p', { class: 'note' }, 'Your main key, on this phone, lets the signer\'s session key spend within on-chain limits taken from your policy. '
      + 'Uses the node and addresses of the revoke section below.'),
    el('label', { for: 'g3-delegator' }, 'EIP7702StatelessDeleGator (once, to make the main account a smart account)'), delegator,
    el('button', { id: 'g3-authorize', onclick: async () => {
      ui.showError('');
      try {
        const s = settings();
        app.tier3 = { ...(app.tier3 || {}), stateless_delegator: delegator.value.trim().toLowerCase() };
        await ui.store.put('kv', 'tier3', app.tier3);
        const tx = await authorize(s, delegator.value.trim(), v.address, signWith);
        await say(`Authorized: ${v.address} is now a smart account on chain ${s.chain_id} (tx ${tx}). No funds moved.`);
      } catch (e) { await say(`Not authorized: ${e.message || e}`, true); }
      pass.value = '';
    } }, 'Authorize (EIP-7702)'),
    el('label', { for: 'g3-days' }, 'Days the grant lasts'), days,
    el('label', { for: 'g3-pass', hidden: v.kind !== 'passphrase' }, 'Key passphrase'), pass,
    el('button', { id: 'g3-offer-ask', onclick: ask(false) }, 'Prepare a grant'),
    el('button', { id: 'g3-rotate', onclick: ask(true) }, 'Rotate (revoke, new session key, grant)'),
    offerBox, result,
    el('h3', {}, `Grants signed on this phone (${records.length})`),
    ...records.slice(-10).reverse().map((r) => el('div', { class: 'grant-record' },
      `${r.ended ? 'ENDED' : 'signed'} ${new Date(r.signed_at).toLocaleString()}: to ${visible(r.delegate)} on chain ${visible(r.chain_id)} — ${r.words.map(visible).join('; ')}`)));
}

// After a revoke from this phone: the grants it signed on that chain, for that account, are ended;
// returns them in words so the revoke can name what is now dead.
export async function markEnded(app, store, settings, account, done) {
  const named = [];
  for (const r of app.tier3Grants || []) {
    if (r.ended === null && r.chain_id === settings.chain_id.toString() && same(r.account, account)) {
      r.ended = `revoked on chain (revocation nonce ${done.before} -> ${done.after}, tx ${done.tx_hash})`;
      named.push(`the grant to session key ${r.delegate}: ${r.words.join('; ')}`);
    }
  }
  await store.put('kv', 'tier3_grants', app.tier3Grants || []);
  return named.length ? ` Now dead: ${named.join(' | ')}.` : '';
}

// Limits and the address book, edited on the phone (signer/tier1/policy_edit.py, docs/policy.md):
//  - the page asks the signer for the policy in force (policy.view) and shows it only if the signer's
//    identity key (from the pairing link) signed it: the bridge cannot show other limits;
//  - the owner edits limits and address-book entries; the page shows the change in words, each line
//    marked tighter or looser by the page's own reading (only to know whether to ask for the passkey);
//  - the edits go out signed by the device key over the policy hash the page showed (policy.edit).
//    The signer applies them and judges tightening and loosening itself: a loosening also carries the
//    main key's EIP-191 signature over the same bytes, which only the passkey (or passphrase) unlocks.
// Its own screen: main.js only mounts `section` on the home screen and `screen` when it is open.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import * as eth from './eth.js';
import * as proto from './protocol.js';
import * as P from './present.js';
import { nowTs } from './canon.js';
import { el, text, visible } from './dom.js';

export const DOMAINS = { view: 'owliabot-policy-view-v1', edit: 'owliabot-policy-edit-v1' };
const WINDOW_WORDS = { '1h': 'Hourly', '24h': 'Daily', '1d': 'Daily', '7d': 'Weekly', '30d': '30-day' };
const PER_WINDOW = { '1h': 'an hour', '24h': 'a day', '1d': 'a day', '7d': 'a week', '30d': 'in 30 days' };
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

// The module's own state: kept across the re-renders a state push causes, never stored.
const st = { open: false, view: null, loading: false, draft: {}, added: [], removed: new Set(), review: null, outcome: null };

export const isOpen = () => st.open;

// ---- the policy the signer signed ---------------------------------------------------------------

export function checkView(view, signerKey) {
  if (!signerKey) throw new Error('this phone has no signer key from pairing: it cannot check the policy it is shown');
  if (!view || typeof view.policy_hash !== 'string' || !/^[0-9a-f]{64}$/.test(view.policy_hash) || !view.policy || typeof view.policy !== 'object') {
    throw new Error('the bridge sent a malformed policy');
  }
  if (!proto.signedBy(signerKey, DOMAINS.view, { policy_hash: view.policy_hash, policy: view.policy }, view.signer_sig)) {
    throw new Error('this policy is not signed by your signer (the bridge may be compromised): nothing is shown');
  }
  return { hash: view.policy_hash, policy: view.policy };
}

// ---- words ------------------------------------------------------------------------------------

const limitName = (label) => (label === 'per_tx' ? 'Per-transaction limit' : `${WINDOW_WORDS[label] || `${label} window`} limit`);
const chainWords = (policy, chain) => {
  const c = (policy.chains || []).find((x) => text(x.id) === text(chain));
  return c ? visible(c.name) : `chain ${text(chain)}`;
};

// "0.05 ETH ≈ $152.50", or "no limit".
export function amountWords(asset, amount) {
  if (amount === null || amount === undefined) return 'no limit';
  const decimals = Number(text(asset.decimals));
  const base = P.parseUnits(text(amount), decimals);
  const usd = asset.price_usd === undefined ? null : P.dollars(base, decimals, asset.price_usd);
  return `${P.formatUnits(base, decimals)} ${visible(asset.symbol)}${usd ? ` ≈ ${usd}` : ''}`;
}

const hasLimits = (asset) => (asset.per_tx !== null && asset.per_tx !== undefined) || Object.keys(asset.windows || {}).length > 0;

// The page's reading of one limit change: a higher or removed limit loosens; a new limit on an
// asset that had none loosens too (every spend of it needed the owner before).
export function limitLoosens(asset, was, now) {
  const decimals = Number(text(asset.decimals));
  if (was === null || was === undefined) return !hasLimits(asset);
  if (now === null) return true;
  return P.parseUnits(text(now), decimals) > P.parseUnits(text(was), decimals);
}

export function assetLines(asset) {
  const parts = [`${amountWords(asset, asset.per_tx)} a transaction`];
  for (const [label, amount] of Object.entries(asset.windows || {})) parts.push(`${amountWords(asset, amount)} ${PER_WINDOW[label] || `in any ${label}`}`);
  return hasLimits(asset) ? parts : ['no limits: every spend of it asks you'];
}

// ---- the edits and their diff --------------------------------------------------------------------

const fieldId = (i, label) => `pe-${i}-${label.replace(/[^a-z0-9]/gi, '')}`;

// Edits (as the signer's PolicyEditParams takes them) and their lines in words, from what was typed.
export function diff(policy, draft, added, removed) {
  const edits = [], lines = [];
  (policy.assets || []).forEach((asset, i) => {
    const labels = ['per_tx', ...Object.keys(asset.windows || {})];
    for (const label of labels) {
      const id = fieldId(i, label);
      if (!(id in draft)) continue;
      const was = label === 'per_tx' ? asset.per_tx : asset.windows[label];
      const typed = draft[id].trim();
      let now = null;
      if (typed !== '') {
        try { now = P.formatUnits(P.parseUnits(typed, Number(text(asset.decimals))), Number(text(asset.decimals))); } catch (e) {
          throw new Error(`${limitName(label)} for ${visible(asset.symbol)}: type an amount in ${visible(asset.symbol)}, like 0.01 (${e.message})`);
        }
      }
      const wasText = was === null || was === undefined ? null : P.formatUnits(P.parseUnits(text(was), Number(text(asset.decimals))), Number(text(asset.decimals)));
      if (now === wasText) continue;
      const looser = limitLoosens(asset, was, now);
      edits.push({ op: 'limit', chain: asset.chain, asset: text(asset.asset), limit: label, amount: now });
      lines.push({ looser, words: `${limitName(label)} for ${visible(asset.symbol)}: ${amountWords(asset, was)} → ${amountWords(asset, now)}` });
    }
  });
  const unknownAllowed = policy.recipients && policy.recipients.unknown === 'allow';
  (policy.address_book || []).forEach((entry, i) => {
    const where = `${P.groupedAddress(entry.address)} on ${chainWords(policy, entry.chain)}`;
    if (removed.has(i)) {
      edits.push({ op: 'book_remove', chain: entry.chain, address: text(entry.address).toLowerCase() });
      lines.push({ looser: unknownAllowed, words: `Remove ${visible(entry.name)} (${where}) from the address book` });
      return;
    }
    const id = `pe-name-${i}`;
    if (!(id in draft) || draft[id].trim() === text(entry.name)) return;
    const name = draft[id].trim();
    if (!name) throw new Error(`type a name for ${P.groupedAddress(entry.address)}, or remove it`);
    edits.push({ op: 'book_rename', chain: entry.chain, address: text(entry.address).toLowerCase(), name });
    lines.push({ looser: true, words: `Rename ${visible(entry.name)} → ${visible(name)} (${where})` });
  });
  for (const a of added) {
    edits.push({ op: 'book_add', chain: a.chain, address: a.address.toLowerCase(), name: a.name });
    lines.push({ looser: true, words: `Add ${visible(a.name)} (${P.groupedAddress(a.address)} on ${chainWords(policy, a.chain)}) to the address book: the agent may pay it within your limits` });
  }
  return { edits, lines, loosens: lines.some((l) => l.looser) };
}

// ---- signing ------------------------------------------------------------------------------------

export function editMessage(deviceId, baseHash, edits, ts) {
  return proto.signedMessage(DOMAINS.edit, { device_id: deviceId, base_hash: baseHash, edits, ts });
}

// EIP-191 (personal_sign) with the main key: 0x r || s || v (v = 27/28), as signer.tier1.policy_edit checks.
export function personalSign(message, secret) {
  const prefix = eth.utf8ToBytes(`\x19Ethereum Signed Message:\n${message.length}`);
  const digest = eth.keccak_256(eth.concatBytes(prefix, message));
  const sig = secp256k1.Signature.fromBytes(secp256k1.sign(digest, secret, { prehash: false, lowS: true, format: 'recovered', extraEntropy: false }), 'recovered');
  const word = (n) => n.toString(16).padStart(64, '0');
  return '0x' + word(sig.r) + word(sig.s) + (27 + sig.recovery).toString(16);
}

// Sends the edits; `withMainKey(fn)` unlocks the main key (passkey) for a loosening only.
export async function send(session, device, baseHash, edits, loosens, withMainKey) {
  const ts = nowTs();
  const message = editMessage(device.device_id, baseHash, edits, ts);
  const seed = eth.hexToBytes(device.seed);
  let signature;
  try { signature = proto.deviceSign(seed, message); } finally { seed.fill(0); }
  const params = { device_id: device.device_id, base_hash: baseHash, edits, ts, signature };
  if (loosens) params.main_signature = await withMainKey((secret) => personalSign(message, secret));
  return session.call('policy.edit', params);
}

// ---- the screens --------------------------------------------------------------------------------

async function load(ui) {
  const { app } = ui;
  st.loading = true;
  try {
    if (!app.session || app.status !== 'connected') throw new Error('could not reach the bridge: try again when the phone is connected, or edit the policy file on the signer\'s machine and run owlia signer reload');
    st.view = checkView(await app.session.call('policy.view'), app.device.signer_key);
  } catch (e) {
    st.outcome = { ok: false, words: `Could not show your limits: ${e.message || e}` };
  } finally { st.loading = false; }
}

function reset() { st.draft = {}; st.added = []; st.removed = new Set(); st.review = null; }

// On the home screen: a way in.
export function section(ui) {
  return el('section', { id: 'policy' }, el('h2', {}, 'Limits & address book'),
    el('p', { class: 'note' }, 'What the agent may spend on its own, and the people it may pay. Tightening applies at once; loosening asks for your passkey.'),
    el('button', { id: 'policy-open', onclick: async () => { st.open = true; st.outcome = null; reset(); await ui.render(); await load(ui); await ui.render(); window.scrollTo(0, 0); } },
      'Review limits and address book'));
}

function typedInput(id, value, attrs, ui) {
  const input = el('input', { id, autocomplete: 'off', spellcheck: 'false', ...attrs });
  input.value = id in st.draft ? st.draft[id] : value;
  input.addEventListener('input', () => { st.draft[id] = input.value; st.review = null; });
  return input;
}

function field(labelText, input, hint) {
  const hintNode = hint ? el('span', { class: 'hint', id: `${input.id}-hint` }, hint) : null;
  if (hintNode) input.setAttribute('aria-describedby', hintNode.id);
  return el('div', { class: 'field' }, el('label', { for: input.id }, labelText), input, hintNode);
}

function assetBlock(policy, asset, i, ui) {
  const symbol = visible(asset.symbol);
  const labels = ['per_tx', ...Object.keys(asset.windows || {})];
  return el('div', { class: 'policy-asset', 'data-asset': `${text(asset.chain)}:${text(asset.asset)}` },
    el('h3', {}, `${symbol} on ${chainWords(policy, asset.chain)}`),
    el('p', { class: 'policy-words' }, `Now: ${assetLines(asset).join('; ')}.`),
    ...labels.map((label) => {
      const was = label === 'per_tx' ? asset.per_tx : asset.windows[label];
      return field(`${limitName(label)} (${symbol})`,
        typedInput(fieldId(i, label), was === null || was === undefined ? '' : text(was), { inputmode: 'decimal' }, ui),
        `now ${amountWords(asset, was)}; leave empty for no limit`);
    }));
}

function bookBlock(policy, ui) {
  const book = policy.address_book || [];
  const chains = policy.chains || [];
  const newName = typedInput('pe-new-name', '', {}, ui);
  const newAddress = typedInput('pe-new-address', '', { autocapitalize: 'off', inputmode: 'text' }, ui);
  const chainPick = el('select', { id: 'pe-new-chain' }, chains.map((c) => el('option', { value: text(c.id) }, `${visible(c.name)} (${text(c.id)})`)));
  return el('div', { id: 'policy-book' },
    el('h2', {}, `Address book (${book.length})`),
    book.length ? null : el('p', { class: 'note' }, 'No one yet: every payment to a new address asks you.'),
    el('ul', { class: 'book' }, book.map((entry, i) => {
      const gone = st.removed.has(i);
      return el('li', { class: 'book-entry' + (gone ? ' removed' : ''), 'data-address': P.checksum(entry.address) },
        el('strong', { class: 'book-name' }, visible(entry.name)), gone ? el('span', { class: 'removed-mark' }, 'TO BE REMOVED') : null, el('br'),
        el('code', { class: 'address' }, P.groupedAddress(entry.address)), el('span', { class: 'note' }, ` on ${chainWords(policy, entry.chain)}`),
        gone ? null : field(`Name for ${P.shortAddress(entry.address)}`, typedInput(`pe-name-${i}`, text(entry.name), {}, ui)),
        el('button', { class: gone ? 'book-keep' : 'book-remove danger', 'aria-label': `${gone ? 'Keep' : 'Remove'} ${visible(entry.name)}`,
          onclick: async () => { if (gone) st.removed.delete(i); else st.removed.add(i); st.review = null; await ui.render(); } }, gone ? 'Keep' : 'Remove'));
    })),
    st.added.length ? el('ul', { class: 'book added' }, st.added.map((a, k) => el('li', { class: 'book-entry new' },
      el('strong', {}, visible(a.name)), el('span', { class: 'new-mark' }, 'NEW'), el('br'), el('code', { class: 'address' }, P.groupedAddress(a.address)),
      el('button', { class: 'book-undo', 'aria-label': `Do not add ${visible(a.name)}`, onclick: async () => { st.added.splice(k, 1); st.review = null; await ui.render(); } }, 'Do not add')))) : null,
    el('h3', {}, 'Add someone'),
    field('Name', newName), field('Address (0x…)', newAddress, 'checksummed or all lowercase'),
    chains.length > 1 ? field('Chain', chainPick) : null,
    el('button', { id: 'pe-add', onclick: async () => {
      ui.showError('');
      const name = newName.value.trim(), address = newAddress.value.trim();
      const chain = chains.length > 1 ? chains.find((c) => text(c.id) === chainPick.value).id : chains[0].id;
      try {
        if (!name) throw new Error('type a name for the new address');
        if (!ADDRESS.test(address)) throw new Error('the address is 0x followed by 40 hex digits');
        if (address !== address.toLowerCase() && P.checksum(address) !== address) throw new Error('that address has a bad checksum (a typo?): check it, or type it all lowercase');
        const lower = address.toLowerCase();
        if (book.some((e) => text(e.address).toLowerCase() === lower && text(e.chain) === text(chain)) || st.added.some((a) => a.address.toLowerCase() === lower && text(a.chain) === text(chain))) {
          throw new Error('that address is already in the address book');
        }
        st.added.push({ chain, address: P.checksum(lower), name });
        delete st.draft['pe-new-name']; delete st.draft['pe-new-address'];
        st.review = null;
      } catch (e) { ui.showError(e.message); }
      await ui.render();
    } }, 'Add to the list'));
}

function reviewBlock(ui, v) {
  const r = st.review;
  const pass = el('input', { type: 'password', id: 'pe-pass', autocomplete: 'current-password', hidden: v.kind !== 'passphrase' });
  return el('section', { id: 'policy-review', 'aria-labelledby': 'policy-review-title', tabindex: '-1' },
    el('h2', { id: 'policy-review-title' }, r.loosens ? 'Your change, in words (it loosens your policy)' : 'Your change, in words'),
    el('ul', { class: 'policy-diff' }, r.lines.map((l) => el('li', { class: l.looser ? 'looser' : 'tighter' },
      `${l.words} `, el('span', { class: 'tone' }, l.looser ? '(looser)' : '(tighter)')))),
    el('p', { class: 'note' }, r.loosens
      ? 'Loosening lets the agent do more without asking you: your signer takes it only with your passkey.'
      : 'Only tighter: your signer applies it at once.'),
    v.kind === 'passphrase' && r.loosens ? el('label', { for: 'pe-pass' }, 'Key passphrase') : null, r.loosens ? pass : null,
    el('button', { id: 'pe-apply', class: 'primary', onclick: () => apply(ui, v, pass.value) },
      r.loosens ? 'Approve with passkey and apply' : 'Apply now'),
    el('button', { id: 'pe-keep-editing', onclick: async () => { st.review = null; await ui.render(); } }, 'Keep editing'));
}

async function apply(ui, v, passphrase) {
  const { app } = ui;
  const r = st.review;
  ui.showError('');
  try {
    if (!app.session || app.status !== 'connected') throw new Error('could not reach the bridge: nothing was sent. Try again when the phone is connected');
    const reply = await send(app.session, app.device, st.view.hash, r.edits, r.loosens,
      (fn) => ui.vault.withSecret(passphrase, async (secret) => fn(secret)));
    const judged = reply.loosened === true ? 'Your signer judged it a loosening and took it with your passkey.' : 'Your signer judged it tighter and applied it at once.';
    st.outcome = { ok: true, words: `Policy changed: ${r.lines.map((l) => l.words).join('; ')}. ${judged}` };
    await ui.recordOutcome({ action: 'policy', what: `Policy changed (${r.lines.length} change${r.lines.length === 1 ? '' : 's'})`, to: '' });
    reset();
    await load(ui);
  } catch (e) {
    st.outcome = { ok: false, words: `Not changed: ${e.message || e}` };
    await ui.recordOutcome({ action: 'policy', status: 'refused', detail: e.message || String(e) });
    // another policy is in force: the edits were made over the old one, so they are dropped with it
    if (/in force is now|not in force yet/.test(e.message || '')) { reset(); await load(ui); }
    // the signer judged looser what this page read as tighter: its word counts, so offer the passkey
    else if (/loosens your policy/.test(e.message || '') && !r.loosens) st.review = { ...r, loosens: true };
  }
  await ui.render();
  const box = document.getElementById('policy-outcome');
  if (box) { box.focus({ preventScroll: true }); box.scrollIntoView({ block: 'start' }); }
}

// The screen itself, while open.
export function screen(ui, v) {
  const back = el('button', { id: 'policy-back', onclick: async () => { st.open = false; reset(); st.outcome = null; await ui.render(); } }, 'Back to home');
  const out = [el('h1', {}, 'Limits & address book'), back];
  if (st.outcome) {
    out.push(el('div', { id: 'policy-outcome', class: `result ${st.outcome.ok ? '' : 'denied'}`, role: st.outcome.ok ? 'status' : 'alert', tabindex: '-1' },
      el('p', {}, st.outcome.words)));
  }
  if (!st.view) {
    out.push(el('p', { class: 'note' }, st.loading ? 'Asking your signer for the policy in force…' : 'No policy shown yet.'));
    return out;
  }
  const policy = st.view.policy;
  out.push(el('p', { class: 'note', id: 'policy-source' }, `The policy in force on your signer (version ${st.view.hash.slice(0, 12)}), checked with your signer's key.`));
  if (st.review) {
    out.push(reviewBlock(ui, v));
    return out;
  }
  out.push(el('h2', {}, 'Limits'));
  (policy.assets || []).forEach((asset, i) => out.push(assetBlock(policy, asset, i, ui)));
  out.push(bookBlock(policy, ui));
  out.push(el('button', { id: 'pe-review', class: 'primary', onclick: async () => {
    ui.showError('');
    try {
      const r = diff(policy, st.draft, st.added, st.removed);
      if (!r.edits.length) throw new Error('nothing changed yet: edit a limit or the address book first');
      st.review = r;
      st.outcome = null;
    } catch (e) { ui.showError(e.message); }
    await ui.render();
    window.scrollTo(0, 0);
  } }, 'Review the change'));
  return out;
}

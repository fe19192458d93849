// The companion web app: pairing, the main key, approvals, and the rest of the companion.
// Every string the bridge or the agent wrote reaches the page through textContent, never as HTML.
import * as store from './store.js';
import * as vault from './vault.js';
import * as eth from './eth.js';
import * as proto from './protocol.js';
import * as journal from './journal.js';
import * as tier3 from './tier3.js';
import * as grants from './grants.js';
import { Num, int, nowTs, dumps, parse } from './canon.js';

const app = { device: null, session: null, token: null, state: {}, requests: new Map(), forged: [], devices: null,
  status: 'offline', error: '' };
const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  return node;
}

const text = (v) => (v instanceof Num ? v.text : v === null || v === undefined ? '' : String(v));

// Control, bidi and invisible characters written out, as the terminal companion does.
function visible(s) {
  return text(s).replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function formatWei(wei) {
  const s = wei.toString().padStart(19, '0');
  const whole = s.slice(0, -18).replace(/^0+(?=\d)/, ''), frac = s.slice(-18).replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

function showError(message) {
  app.error = message;
  const box = $('#error');
  box.textContent = message;
  box.hidden = !message;
}

// ---- the device record ---------------------------------------------------------------------

async function loadDevice() {
  app.device = (await store.get('kv', 'device')) || null;
}

async function saveDevice(changes) {
  app.device = { ...(app.device || {}), ...changes };
  await store.put('kv', 'device', app.device);
}

// ---- screens -------------------------------------------------------------------------------

function screen(...children) {
  const main = $('#main');
  main.replaceChildren(...children);
}

async function render() {
  const v = await vault.load();
  const pending = await store.get('kv', 'pending_pair');
  $('#status').textContent = app.device && app.device.device_id
    ? `${app.status}${app.state.frozen ? ' · FROZEN' : ''}` : 'not paired';
  $('#status').className = app.state.frozen ? 'frozen' : app.status;
  if (!v) return renderSetup(pending);
  if (!v.backed_up) return renderBackup(v);
  if (!app.device || !app.device.device_id) return renderPair(v, pending);
  return renderHome(v);
}

function protectionChoice() {
  return el('fieldset', { class: 'protect' },
    el('legend', {}, 'Protect it with'),
    el('label', {}, el('input', { type: 'radio', name: 'protect', value: 'passkey', checked: true }), ' a passkey (Face ID, fingerprint or device PIN)'),
    el('label', {}, el('input', { type: 'radio', name: 'protect', value: 'passphrase' }), ' a passphrase (where passkeys cannot)'),
    el('input', { id: 'seal-pass', type: 'password', placeholder: 'passphrase (8+ characters)', autocomplete: 'new-password' }));
}

async function sealWith(secret) {
  const mode = document.querySelector('input[name=protect]:checked').value;
  if (mode === 'passkey') {
    const id = await vault.createPasskey('OwliaBot main key');
    return vault.seal(secret, { passkey: id });
  }
  return vault.seal(secret, { passphrase: $('#seal-pass').value });
}

function renderSetup(pending) {
  const importBox = el('textarea', { id: 'import-text', rows: 4, placeholder: 'V3 keystore JSON, 12/24-word phrase, or 0x private key',
    autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false' });
  const importPass = el('input', { id: 'import-pass', type: 'password', placeholder: 'keystore passphrase (keystore only)', autocomplete: 'off' });
  const busy = async (fn) => {
    showError('');
    try { await fn(); } catch (e) { showError(e.message || String(e)); }
    await render();
  };
  screen(
    el('h1', {}, 'Your main key'),
    pending ? el('p', { class: 'note' }, 'Pairing link received. Set up the main key first; it never leaves this device.') : null,
    protectionChoice(),
    el('button', { id: 'create-key', class: 'primary', onclick: () => busy(async () => {
      const secret = eth.newSecret();
      try { await sealWith(secret); } finally { secret.fill(0); }
    }) }, 'Create a new key'),
    el('h2', {}, 'Or import one'), importBox, importPass,
    el('button', { id: 'import-key', onclick: () => busy(async () => {
      const raw = importBox.value.trim();
      let secret;
      if (raw.startsWith('{')) secret = await eth.decryptKeystore(raw, importPass.value);
      else if (/^(0x)?[0-9a-fA-F]{64}$/.test(raw)) secret = eth.checkSecret(eth.hexToBytes(eth.strip0x(raw)));
      else secret = await eth.secretFromPhrase(raw);
      importBox.value = ''; importPass.value = '';
      try { await sealWith(secret); } finally { secret.fill(0); }
    }) }, 'Import'));
}

function renderBackup(v) {
  const pass = el('input', { id: 'backup-pass', type: 'password', placeholder: 'backup passphrase (8+ characters)', autocomplete: 'new-password' });
  const again = el('input', { id: 'backup-pass2', type: 'password', placeholder: 'the same again', autocomplete: 'new-password' });
  const unlock = el('input', { id: 'unlock-pass', type: 'password', placeholder: 'your key passphrase', autocomplete: 'current-password',
    hidden: v.kind !== 'passphrase' });
  const progress = el('p', { id: 'backup-progress', class: 'note' });
  screen(
    el('h1', {}, 'Back up the key'),
    el('p', {}, `Main account ${v.address}. Approvals are blocked until a backup exists: without one, a lost phone is a lost key.`),
    el('p', { class: 'note' }, 'The backup is a standard V3 keystore (scrypt) that MetaMask, geth or `owlia companion init --import` reads. Keep it off this phone.'),
    pass, again, unlock, progress,
    el('button', { id: 'backup', class: 'primary', onclick: async () => {
      showError('');
      if (pass.value.length < 8 || pass.value !== again.value) return showError('the backup passphrase must be 8+ characters and typed twice the same');
      try {
        const keystore = await vault.withSecret(unlock.value, (secret) => eth.encryptKeystore(secret, pass.value, eth.KEYSTORE_N,
          (p) => { progress.textContent = `encrypting ${Math.round(p * 100)} %`; }));
        const blob = new Blob([JSON.stringify(keystore)], { type: 'application/json' });
        const a = el('a', { href: URL.createObjectURL(blob), download: `owliabot-main-${v.address.slice(2, 10)}.json` });
        document.body.append(a); a.click(); a.remove();
        pass.value = again.value = unlock.value = '';
        await vault.markBackedUp();
        if (navigator.storage && navigator.storage.persist) await navigator.storage.persist();
      } catch (e) { showError(e.message || String(e)); }
      await render();
    } }, 'Download the backup'));
}

function renderPair(v, pending) {
  if (!pending) {
    return screen(el('h1', {}, 'Pair with your signer'),
      el('p', {}, 'On the signer\'s machine run `owlia companion pair` and open its QR code with this phone\'s camera.'));
  }
  const name = el('input', { id: 'device-name', value: 'phone', maxlength: 40 });
  screen(
    el('h1', {}, 'Pair with your signer'),
    el('p', {}, 'Signer identity key (check it matches the one `owlia companion pair` printed):'),
    el('code', { class: 'fingerprint' }, pending.signer.slice(0, 16) + '…' + pending.signer.slice(-8)),
    el('p', {}, `Main account: ${v.address}`), name,
    el('button', { id: 'pair', class: 'primary', onclick: async () => {
      showError('');
      try {
        const seed = proto.newDeviceSeed();
        const result = await proto.pair(pending, seed, name.value || 'phone', v.address);
        await saveDevice({ seed: eth.bytesToHex(seed), device_id: result.device_id, signer_key: result.signer_key,
          name: name.value || 'phone', paired_at: Date.now() });
        await store.del('kv', 'pending_pair');
        connect();
      } catch (e) { showError(`pairing refused: ${e.message}`); }
      await render();
    } }, 'Pair this device'));
}

function renderHome(v) {
  const now = Date.now() / 1000;
  const open = [...app.requests.values()].filter((r) => r.expires_at.value > now);
  const children = [];
  if (app.state.frozen) children.push(el('div', { class: 'banner frozen', id: 'frozen-banner' }, 'FROZEN: no session key signs anything. Only an unfreeze from a paired device lifts it.'));
  children.push(el('h1', {}, open.length ? `${open.length} waiting for you` : 'Nothing to approve'));
  for (const r of open) children.push(card(r, v));
  if (app.forged.length) children.push(el('p', { class: 'warn', id: 'forged' }, `Dropped ${app.forged.length} request(s) your signer did not sign (the bridge may be compromised). Nothing was signed for them.`));
  children.push(outstandingSection());
  children.push(controls());
  children.push(grants.section({ el, app, v, visible, vault, store, showError, render }));
  children.push(tier3Section(v));
  children.push(outcomesSection());
  children.push(el('section', {}, el('h2', {}, 'This device'),
    el('p', {}, `device ${app.device.device_id} (${app.device.name}), main account ${v.address}, key protected by ${v.kind}`)));
  children.push(devicesSection());
  screen(...children);
  tick();  // the countdowns, now rather than at the next second
}

function field(label, value, cls) {
  return el('div', { class: 'row' + (cls ? ' ' + cls : '') }, el('span', { class: 'label' }, label), el('span', { class: 'value' }, value));
}

function card(r, v) {
  const actions = Array.isArray(r.actions) ? r.actions : [];
  const tx = r.tx;
  const head = [];
  if (r.kind === 'policy' && r.policy) {
    head.push(el('div', { class: 'amount' }, 'Policy change'));
    head.push(el('p', {}, `from ${visible(r.policy.from_hash).slice(0, 16)} to ${visible(r.policy.to_hash).slice(0, 16)}; what widens:`));
    head.push(el('ul', { class: 'diff' }, (Array.isArray(r.policy.widens) ? r.policy.widens : []).map((w) => el('li', {}, '+ ' + visible(w)))));
  }
  for (const a of actions) {
    if (a.type === 'transfer' || a.type === 'approval') {
      const amount = a.amount ? visible(a.amount) : `${visible(a.amount_base_units)} base units`;
      head.push(el('div', { class: 'amount' }, (a.type === 'approval' ? (a.unlimited ? 'UNLIMITED approval ' : 'Approve spending ') : 'Send ') + amount));
      const party = a.type === 'transfer' ? a.recipient : a.spender;
      head.push(el('div', { class: 'recipient' },
        party.name ? el('span', { class: 'name' }, visible(party.name)) : el('span', { class: 'new-address' }, 'NEW ADDRESS'),
        el('code', {}, visible(party.address))));
      head.push(field('token', `${visible(a.token)}  (${visible(a.amount_base_units)} base units)`));
    } else if (a.type === 'call') {
      head.push(el('div', { class: 'amount' }, `Call ${visible(a.selector)}`));
      head.push(el('div', { class: 'recipient' }, a.target.name ? el('span', { class: 'name' }, visible(a.target.name)) : el('span', { class: 'new-address' }, 'NEW ADDRESS'), el('code', {}, visible(a.target.address))));
    } else if (a.type === 'forbidden') head.push(el('p', { class: 'warn' }, `FORBIDDEN: ${visible(a.reason)}`));
  }
  const esc = r.escalation || {};
  const reasons = [el('li', {}, `${visible(esc.reason)} [${visible(esc.rule_id)}]`),
    ...(Array.isArray(esc.findings) ? esc.findings : []).map((f) => el('li', {}, `${visible(f.reason)} [${visible(f.rule_id)}: ${visible(f.outcome)}]`))];
  const txRows = tx ? [
    field('from', visible(tx.from)), field('to', visible(tx.to)),
    field('value', `${formatWei(int(tx.value, 'value'))} ETH (${text(tx.value)} wei)`),
    field('data', `${visible(tx.data)} (${(text(tx.data).length - 2) / 2} bytes)`),
    field('chain', `${visible(r.chain)}`), field('nonce', text(tx.nonce)), field('gas limit', text(tx.gas_limit)),
    field('max fee', `${text(tx.max_fee_per_gas)} wei/gas`), field('priority fee', `${text(tx.max_priority_fee_per_gas)} wei/gas`),
  ] : [el('p', { class: 'warn' }, r.kind === 'policy' ? '' : 'No transaction: this request can only be denied.')];
  const journaled = approvedEntry(r.request_id);
  const pass = el('input', { type: 'password', class: 'approve-pass', placeholder: 'key passphrase', autocomplete: 'current-password', hidden: v.kind !== 'passphrase' });
  const countdown = el('span', { class: 'countdown', 'data-expires': r.expires_at.value });
  const canApprove = !!(app.device.signer_key && v.backed_up && (tx || r.kind === 'policy'));
  return el('article', { class: 'card', 'data-request': r.request_id },
    journaled ? el('p', { class: 'warn' }, `ALREADY APPROVED as tx ${journaled.tx_hash} nonce ${journaled.nonce}`) : null,
    ...head,
    el('h3', {}, 'Why it needs you'), el('ul', { class: 'reasons' }, reasons),
    r.agent_reason_unverified ? el('div', { class: 'agent-reason' }, el('strong', {}, 'Agent\'s stated reason (UNVERIFIED, may be wrong or injected): '), visible(r.agent_reason_unverified).slice(0, 500)) : null,
    r.kind === 'policy' ? null : el('details', { open: true }, el('summary', {}, 'Exact transaction'), ...txRows),
    el('p', {}, 'Expires in ', countdown),
    pass,
    el('div', { class: 'buttons' },
      el('button', { class: 'approve primary', disabled: !canApprove, onclick: () => answer(r, 'approve', pass.value) }, 'Approve'),
      el('button', { class: 'deny', onclick: () => answer(r, 'deny') }, 'Deny'),
      el('button', { class: 'deny-freeze danger', onclick: () => answer(r, 'freeze') }, 'Deny and freeze')));
}

function outstandingSection() {
  const entries = (app.journal || []).filter((e) => !journal.isSettled(e));
  return el('section', { id: 'outstanding' }, el('h2', {}, entries.length ? `Outstanding approvals (${entries.length})` : 'No outstanding approvals'),
    entries.length ? el('p', { class: 'note' }, 'Whoever holds one of these signed transactions can send it until its nonce is used. Nothing to do if you still want the payment; to void one, send any transaction from the main account with that nonce.') : null,
    ...entries.map((e) => el('div', { class: 'outstanding-entry' },
      el('strong', {}, `${formatWei(BigInt(e.value))} ETH to ${e.to}`), el('br'),
      `nonce ${e.nonce} on chain ${e.chain_id}, tx ${e.tx_hash}`, el('br'),
      el('span', { class: 'note' }, `bridge said: ${visible(e.reply).slice(0, 200)}`))));
}

function controls() {
  const keyId = el('input', { id: 'topup-key', placeholder: 'session key id (sk_...)' });
  const amount = el('input', { id: 'topup-amount', placeholder: 'wei (empty: up to its cap)', inputmode: 'numeric' });
  return el('section', { id: 'controls' }, el('h2', {}, 'Controls'),
    app.state.frozen
      ? el('button', { id: 'unfreeze', onclick: () => freeze('unfreeze') }, 'Unfreeze')
      : el('button', { id: 'freeze', class: 'danger', onclick: () => freeze('freeze') }, 'Freeze now'),
    el('button', { id: 'notify', onclick: enablePush }, 'Notify me of new requests'),
    el('h3', {}, 'Top up a session key'), keyId, amount,
    el('button', { id: 'topup', onclick: () => topup(keyId.value.trim(), amount.value.trim()) }, 'Request top-up'));
}

// Tier 3 (docs/tier3.md): revoke every grant with the main key, straight to a chain node; no bridge, no signer.
function tier3Section(v) {
  const saved = app.tier3 || {};
  const input = (id, value, placeholder) => el('input', { id, value: value || '', placeholder, autocomplete: 'off', spellcheck: 'false' });
  const rpcUrl = input('t3-rpc', saved.rpc_url, 'chain node URL (https://...)');
  const chainId = input('t3-chain', saved.chain_id, 'chain id');
  const manager = input('t3-manager', saved.manager, 'DelegationManager address');
  const enforcer = input('t3-nonce-enforcer', saved.nonce_enforcer, 'NonceEnforcer address');
  const pass = el('input', { type: 'password', id: 't3-pass', placeholder: 'key passphrase', autocomplete: 'current-password', hidden: v.kind !== 'passphrase' });
  const result = el('p', { id: 't3-result', class: 'note' }, saved.last ? visible(saved.last) : '');
  return el('section', { id: 'tier3' }, el('h2', {}, 'Tier 3: revoke every grant'),
    el('p', { class: 'note' }, 'Ends every delegation your main key gave a session key, on chain, in one transaction from this phone to the node below. '
      + 'Works with the signer and the bridge gone (a stolen host). The addresses are in `owlia wallet status --json` or config.yaml (chains[].delegation).'),
    rpcUrl, chainId, manager, enforcer, pass,
    el('button', { id: 't3-revoke', class: 'danger', onclick: async () => {
      showError('');
      let settings;
      try {
        settings = tier3.checkSettings({ rpc_url: rpcUrl.value, chain_id: chainId.value, manager: manager.value, nonce_enforcer: enforcer.value });
      } catch (e) { return showError(e.message); }
      app.tier3 = { ...saved, rpc_url: settings.rpc_url, chain_id: settings.chain_id.toString(), manager: settings.manager, nonce_enforcer: settings.nonce_enforcer };
      await store.put('kv', 'tier3', app.tier3);
      try {
        const done = await tier3.revokeAll(settings, v.address, (tx) => vault.withSecret(pass.value, async (secret) => eth.signEip1559(tx, secret)),
          (what) => { result.textContent = `${what}…`; });
        app.tier3.last = `Revoked: every Tier 3 grant of ${v.address} on chain ${settings.chain_id} is dead on chain `
          + `(revocation nonce ${done.before} -> ${done.after}, tx ${done.tx_hash}). No session key can spend from it through an earlier grant.`;
        app.tier3.last += await grants.markEnded(app, store, settings, v.address, done);
      } catch (e) {
        app.tier3.last = `Not revoked: ${e.message || e}`;
        showError(app.tier3.last);
      }
      pass.value = '';
      await store.put('kv', 'tier3', app.tier3);
      await render();
    } }, 'Revoke every grant on chain'),
    result);
}

function outcomesSection() {
  const list = (app.outcomes || []).slice(-10).reverse();
  return el('section', { id: 'outcomes' }, el('h2', {}, 'Recent outcomes'),
    ...list.map((o) => el('div', { class: 'outcome' }, `${new Date(o.at).toLocaleTimeString()} ${o.action} ${o.request_id.slice(0, 12)}…: ${visible(o.result).slice(0, 200)}`)));
}

const when = (ts) => (ts === null ? 'never' : new Date(ts * 1000).toLocaleString());

function devicesSection() {
  const list = (app.devices && app.devices.devices) || [];
  const active = list.filter((d) => d.revoked_at === null).length;
  return el('section', { id: 'devices' }, el('h2', {}, `Paired devices (${active} active)`),
    list.length ? null : el('p', { class: 'note' }, 'The list comes from the bridge once connected.'),
    ...list.map((d) => el('div', { class: 'device' + (d.revoked_at === null ? '' : ' revoked'), 'data-device': visible(d.device_id) },
      el('strong', { class: 'device-name' }, visible(d.name)),
      d.this_device ? el('span', { class: 'this-device' }, 'this device') : null,
      d.revoked_at === null ? null : el('span', { class: 'revoked-mark' }, 'REVOKED'), el('br'),
      el('span', { class: 'note' }, `last seen ${when(d.last_seen)}; paired ${when(d.created_at)}`
        + (d.revoked_at === null ? '' : `; revoked ${when(d.revoked_at)}`)
        + `; key ${visible(d.key_fingerprint).slice(0, 16)}`))));
}

// Fetched on every (re)connection (so last-seen times stay current) and whenever a device is paired
// or revoked; kept so the app opens offline to its last state.
async function refreshDevices(rev, always) {
  if (!always && app.devices && app.devices.devices_rev === rev) return;
  try {
    app.devices = await proto.fetchDevices(app.token);
    await store.put('kv', 'devices', app.devices);
  } catch (e) {
    console.error(`device list: ${e.message}`);
    return;
  }
  await render();
}

function tick() {
  const now = Date.now() / 1000;
  for (const c of document.querySelectorAll('.countdown')) {
    const left = Math.floor(Number(c.dataset.expires) - now);
    c.textContent = left > 0 ? `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}` : 'expired';
  }
}

// ---- the journal (companion/journal.py's rules, in journal.js) -------------------------------

async function loadJournal() {
  app.journal = (await store.get('kv', 'journal')) || [];
  app.outcomes = (await store.get('kv', 'outcomes')) || [];
  app.devices = (await store.get('kv', 'devices')) || null;
  app.tier3 = (await store.get('kv', 'tier3')) || null;
  app.tier3Grants = (await store.get('kv', 'tier3_grants')) || [];
}

const saveJournal = () => store.put('kv', 'journal', app.journal);
const approvedEntry = (requestId) => (app.journal || []).find((e) => e.request_id === requestId) || null;

// A quote counts only if the signer signed it (key from pairing); it may settle, confirm or reopen entries.
async function settle(state) {
  const quote = proto.verifiedQuote(state, app.device && app.device.signer_key);
  if (!quote) return null;
  const v = await vault.load();
  if (v && journal.applyQuote(app.journal, quote, v.address, Date.now() / 1000)) await saveJournal();
  return quote;
}

async function recordOutcome(request, action, result) {
  app.outcomes.push({ at: Date.now(), request_id: request.request_id, action, result });
  app.outcomes = app.outcomes.slice(-50);
  await store.put('kv', 'outcomes', app.outcomes);
}

// ---- answers ---------------------------------------------------------------------------------

async function answer(request, action, passphrase) {
  showError('');
  const device = app.device, v = await vault.load();
  const seed = eth.hexToBytes(device.seed);
  try {
    let digest, rawTx = null, txHash = '';
    if (action === 'approve') {
      if (!v.backed_up) throw new Error('back up the key before the first approval');
      digest = proto.verifiedHash(request, device.signer_key);
      // A loosening widens what the signer signs alone: it asks for the passkey (or passphrase) too,
      // though only the device key signs it (nothing is decrypted for longer than this check).
      if (request.kind === 'policy') await vault.withSecret(passphrase, async () => null);
      if (request.kind !== 'policy') {
        if (!request.tx) throw new Error('this request has no transaction to sign; deny it');
        const first = approvedEntry(request.request_id);
        let nonce = int(request.tx.nonce, 'nonce'), quotedAt = null;
        if (first) {
          if (journal.isSettled(first)) throw new Error(`already approved as tx ${first.tx_hash} at nonce ${first.nonce}, and your signer shows that nonce used: nothing was signed again`);
          nonce = BigInt(first.nonce); quotedAt = first.quoted_at;
        } else {
          journal.refuseIfFull(app.journal.filter((e) => !journal.isSettled(e)).length);  // before any key is touched
          const quote = await settle(await app.session.call('approvals.state'));
          if (quote && proto.fresh(quote)) {
            const q = quote.main_nonce[String(int(request.tx.chain_id, 'chain id'))];
            if (q !== undefined && BigInt(q) >= nonce) nonce = BigInt(q);
            quotedAt = quote.ts;
          }
        }
        const t = request.tx;
        if (t.from.toLowerCase() !== v.address.toLowerCase()) throw new Error('the request asks another account to sign');
        const signed = await vault.withSecret(passphrase, async (secret) => eth.signEip1559({
          chain_id: int(t.chain_id, 'chain id'), nonce, max_priority_fee_per_gas: int(t.max_priority_fee_per_gas, 'priority fee'),
          max_fee_per_gas: int(t.max_fee_per_gas, 'max fee'), gas_limit: int(t.gas_limit, 'gas limit'), to: t.to,
          value: int(t.value, 'value'), data: t.data }, secret));
        rawTx = eth.hex0x(signed.raw); txHash = signed.hash;
        if (!first) {  // journaled before it can leave this page
          const entry = journal.newEntry({ request_id: request.request_id, chain_id: Number(int(t.chain_id)), nonce: Number(nonce),
            tx_hash: txHash, to: eth.toChecksum(t.to), value: int(t.value).toString(), summary: text(request.summary).slice(0, 200),
            signed_at: Date.now() / 1000, quoted_at: quotedAt, reply: '(no reply yet)' });
          app.journal = journal.admit(app.journal, entry);
          await saveJournal();
        }
      }
    } else {
      digest = proto.requestHash(request);
    }
    const signature = proto.deviceSign(seed, proto.answerMessage(request, digest, action, device.device_id, txHash));
    const params = { request_id: request.request_id, request_hash: digest, device_id: device.device_id, action,
      expires_at: request.expires_at, signature };
    if (rawTx) params.raw_tx = rawTx;
    let result;
    try {
      result = await app.session.call('approvals.answer', params);
    } catch (e) {
      if (txHash) await noteReply(request, `error: ${e.message}`);
      throw e;
    }
    if (txHash) await noteReply(request, `${text(result.status)} ${text(result.tx_hash)}`);
    await recordOutcome(request, action, `${text(result.status)} ${text(result.tx_hash || '')}`.trim());
    app.requests.delete(request.request_id);
    saveRequests();
    if (txHash) settle(await app.session.call('approvals.state')).catch(() => {});
  } catch (e) {
    showError(`${action} refused: ${e.message || e}`);
    console.error(e.stack || String(e));  // where, never what: errors carry no key material
    await recordOutcome(request, action, `refused: ${e.message || e}`);
  } finally {
    seed.fill(0);
    await render();
  }
}

async function noteReply(request, reply) {
  const e = approvedEntry(request.request_id);
  if (!e) return;
  e.reply = reply;
  await saveJournal();
}

async function freeze(action) {
  showError('');
  const device = app.device, seed = eth.hexToBytes(device.seed);
  try {
    let freezeId = '';
    if (action === 'unfreeze') {
      app.state = await app.session.call('approvals.state');
      freezeId = text(app.state.freeze_id);
    }
    const ts = nowTs();
    const body = { device_id: device.device_id, action, freeze_id: freezeId, ts };
    const signature = proto.deviceSign(seed, proto.signedMessage(proto.DOMAINS.freeze, body));
    app.state = await app.session.call('approvals.freeze', { ...body, signature });
  } catch (e) { showError(`${action} refused: ${e.message}`); } finally { seed.fill(0); }
  await render();
}

async function topup(keyId, amount) {
  showError('');
  const device = app.device, seed = eth.hexToBytes(device.seed);
  try {
    if (!/^\d*$/.test(amount)) throw new Error('the amount is a whole number of wei');
    const ts = nowTs();
    const body = { device_id: device.device_id, key_id: keyId, amount: amount ? BigInt(amount).toString() : null, ts };
    const params = { device_id: device.device_id, key_id: keyId, ts,
      signature: proto.deviceSign(seed, proto.signedMessage(proto.DOMAINS.topup, body)) };
    if (amount) params.amount = BigInt(amount).toString();
    const result = await app.session.call('approvals.topup', params);
    await recordOutcome({ request_id: text(result.request_id) || keyId }, 'topup', `requested ${text(result.status)}`);
  } catch (e) { showError(`top-up refused: ${e.message}`); } finally { seed.fill(0); }
  await render();
}

// Web Push: the bridge sends only a request id, encrypted to this browser; the page fetches the
// request itself over its authenticated connection.
async function enablePush() {
  showError('');
  try {
    if (!('PushManager' in window)) throw new Error('this browser has no Web Push (on iOS: add the app to the home screen first)');
    if (await Notification.requestPermission() !== 'granted') throw new Error('notifications are not allowed');
    const resp = await fetch('/v1/push/key', { credentials: 'omit', cache: 'no-store' });
    if (!resp.ok) throw new Error('push is not enabled on this bridge');
    const { public_key: key } = await resp.json();
    const raw = Uint8Array.from(atob(key.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
    const reg = await navigator.serviceWorker.ready;
    const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: raw });
    const seed = eth.hexToBytes(app.device.seed);
    let token;
    try { token = await proto.login(app.device.device_id, seed); } finally { seed.fill(0); }
    const done = await fetch('/v1/push/subscribe', { method: 'POST', headers: { 'content-type': 'application/json' },
      credentials: 'omit', body: JSON.stringify({ token, subscription: sub.toJSON() }) });
    if (!done.ok) throw new Error(`the bridge refused the subscription (HTTP ${done.status})`);
    await recordOutcome({ request_id: 'push' }, 'notifications', 'enabled');
  } catch (e) { showError(`notifications: ${e.message}`); }
  await render();
}

// ---- the connection --------------------------------------------------------------------------

function receive(requests) {
  for (const r of requests) {
    try {
      if (!r || typeof r !== 'object' || typeof r.request_id !== 'string' || !(r.expires_at instanceof Num)) throw new Error('not a request');
      proto.verifiedHash(r, app.device.signer_key);
    } catch (e) {
      app.forged.push(String(r && r.request_id).replace(/[^A-Za-z0-9_-]/g, '?').slice(0, 40));
      continue;
    }
    app.requests.set(r.request_id, r);
  }
  saveRequests();
  render();
}

// The open requests, kept so the app opens offline to its last state (checked again on load).
async function saveRequests() {
  const now = Date.now() / 1000;
  const texts = [...app.requests.values()].filter((r) => r.expires_at.value > now).map((r) => dumps(r, false));
  await store.put('kv', 'requests', texts);
}

async function loadRequests() {
  const texts = (await store.get('kv', 'requests')) || [];
  const requests = [];
  for (const t of texts) { try { requests.push(parse(t)); } catch { /* dropped */ } }
  receive(requests);
}

// While an approval is outstanding, ask for a signed quote every few seconds (the CLI checks on
// connect, after each answer and on state pushes; a page may stay open for hours).
async function recheck() {
  if (!app.session || app.status !== 'connected' || !(app.journal || []).some((e) => !journal.isFinal(e))) return;
  const open = () => app.journal.filter((e) => !journal.isSettled(e)).length;
  const before = open();
  try { await settle(await app.session.call('approvals.state')); } catch { return; }
  if (open() !== before) await render();  // not otherwise: a render would clear a passphrase being typed
}

let reconnectTimer = null;
async function connect() {
  if (!app.device || !app.device.device_id) return;
  clearTimeout(reconnectTimer);
  const seed = eth.hexToBytes(app.device.seed);
  try {
    const token = await proto.login(app.device.device_id, seed);
    if (app.session) app.session.close();
    app.token = token;  // in memory only: it opens this bridge's socket and device list for 5 minutes
    const session = new proto.Session(token, {
      devices: (rev, always) => { if (app.session === session) refreshDevices(rev, always); },
      state: (s) => { app.state = s; settle(s).catch(() => {}); render(); },
      requests: receive,
      resolved: (id) => { app.requests.delete(id); saveRequests(); render(); },
      closed: () => {
        if (app.session !== session) return;
        app.status = 'offline'; render();
        reconnectTimer = setTimeout(connect, 2000);  // the token expires every 5 minutes: log in again
      },
    });
    app.session = session;
    await session.ready;
    app.status = 'connected';
    settle(await session.call('approvals.state')).then(render).catch(() => {});
  } catch (e) {
    app.status = 'offline';
    showError(`cannot reach the bridge: ${e.message}`);
    reconnectTimer = setTimeout(connect, 5000);
  } finally { seed.fill(0); }
  await render();
}

async function start() {
  const pairing = proto.parsePairFragment(location.hash);
  if (location.hash) history.replaceState(null, '', location.pathname);  // the code leaves the address bar
  if (pairing) await store.put('kv', 'pending_pair', pairing);
  await loadDevice();
  await loadJournal();
  if (app.device && app.device.device_id) await loadRequests();
  if ('serviceWorker' in navigator) navigator.serviceWorker.register('/app/sw.js', { scope: '/app/' }).catch(() => {});
  setInterval(tick, 1000);
  setInterval(recheck, 5000);
  await render();
  connect();
}

// Read by tests and the bench: public state only (request ids, connection status), never a key.
window.owlia = { status: () => app.status, requestIds: () => [...app.requests.keys()], forged: () => [...app.forged] };
start();

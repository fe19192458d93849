// The companion web app: pairing, the main key, approvals, and the rest of the companion.
// Every string the bridge or the agent wrote reaches the page through textContent, never as HTML.
import * as store from './store.js';
import * as vault from './vault.js';
import * as eth from './eth.js';
import * as proto from './protocol.js';
import * as journal from './journal.js';
import * as tier3 from './tier3.js';
import * as P from './present.js';
import { renderCard, showCardError, summary } from './card.js';
import { el, text, visible, labelled } from './dom.js';
import * as grants from './grants.js';
import * as policyEdit from './policy_edit.js';
import * as home from './home.js';
import * as tier3freeze from './tier3freeze.js';
import { Num, int, nowTs, dumps, parse } from './canon.js';

const app = { device: null, session: null, token: null, state: {}, requests: new Map(), forged: [], devices: null,
  status: 'offline', error: '', result: null, pendingFreeze: null, confirmRevoke: null };
const $ = (sel) => document.querySelector(sel);

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

// A re-render (a state push, a countdown's end) keeps the owner's place: what they typed in each
// field, the radio they chose, and the element that had the focus. Only in the page, never stored.
function screen(...children) {
  const main = $('#main');
  const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.id : '';
  const typed = new Map();
  // a key or phrase being imported is never carried over: a failed import leaves no copy on screen
  for (const f of main.querySelectorAll('input[id]:not([data-volatile]), textarea[id]:not([data-volatile])')) typed.set(f.id, { value: f.value, type: f.type });
  const chosen = main.querySelector('input[type=radio]:checked');
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
  const v = await vault.load();
  const pending = await store.get('kv', 'pending_pair');
  $('#status').textContent = app.device && app.device.device_id
    ? `${app.status}${app.state.frozen ? ' · FROZEN' : ''}` : 'not paired';
  $('#status').className = app.state.frozen ? 'frozen' : app.status;
  if (!v) return renderSetup(pending);
  if (!v.backed_up) return renderBackup(v);
  if (!app.device || !app.device.device_id) return renderPair(v, pending);
  if (policyEdit.isOpen()) return screen(...policyEdit.screen(policyUi(), v));
  return renderHome(v);
}

function protectionChoice() {
  const pass = el('input', { id: 'seal-pass', type: 'password', autocomplete: 'new-password' });
  return el('fieldset', { class: 'protect' },
    el('legend', {}, 'Protect it with'),
    el('label', {}, el('input', { type: 'radio', name: 'protect', value: 'passkey', checked: true }), ' a passkey (Face ID, fingerprint or device PIN)'),
    el('label', {}, el('input', { type: 'radio', name: 'protect', value: 'passphrase' }), ' a passphrase (where passkeys cannot)'),
    labelled('Passphrase (only with a passphrase; 8 or more characters)', pass));
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
  const importBox = el('textarea', { id: 'import-text', rows: 4, autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false', 'data-volatile': true });
  const importPass = el('input', { id: 'import-pass', type: 'password', autocomplete: 'off', 'data-volatile': true });
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
    el('h2', {}, 'Or import one'),
    labelled('A V3 keystore (JSON), a 12 or 24-word phrase, or a private key', importBox),
    labelled('Keystore passphrase (a keystore only)', importPass),
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
  const pass = el('input', { id: 'backup-pass', type: 'password', autocomplete: 'new-password' });
  const again = el('input', { id: 'backup-pass2', type: 'password', autocomplete: 'new-password' });
  const unlock = el('input', { id: 'unlock-pass', type: 'password', autocomplete: 'current-password' });
  const progress = el('p', { id: 'backup-progress', class: 'note', 'aria-live': 'polite' });
  screen(
    el('h1', {}, 'Back up the key'),
    el('p', {}, 'Main account ', el('code', { class: 'address' }, P.groupedAddress(v.address)), '. Approvals are blocked until a backup exists: without one, a lost phone is a lost key.'),
    el('p', { class: 'note' }, 'The backup is a standard V3 keystore file (scrypt). MetaMask, geth and this app\'s "Or import one" read it. Keep it off this phone.'),
    labelled('Backup passphrase (8 or more characters)', pass),
    labelled('The same passphrase again', again),
    v.kind === 'passphrase' ? labelled('Your key passphrase (to unlock the key)', unlock) : null,
    progress,
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
      el('p', {}, 'On the signer\'s machine run ', el('code', {}, 'owlia companion pair'), ' and open its QR code with this phone\'s camera.'));
  }
  const name = el('input', { id: 'device-name', value: 'phone', maxlength: 40, autocomplete: 'off' });
  screen(
    el('h1', {}, 'Pair with your signer'),
    el('p', {}, 'Signer identity key (check it matches the one ', el('code', {}, 'owlia companion pair'), ' printed):'),
    el('code', { class: 'fingerprint' }, pending.signer.slice(0, 16) + '…' + pending.signer.slice(-8)),
    el('p', {}, 'Main account ', el('code', { class: 'address' }, P.groupedAddress(v.address))),
    labelled('This device\'s name', name),
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
  if (app.result) children.push(resultPanel(app.result));
  if (app.state.frozen) {
    children.push(el('div', { class: 'banner frozen', id: 'frozen-banner', role: 'status' },
      el('strong', {}, 'Frozen: '), 'no session key signs anything. Only an unfreeze from a paired device lifts it. ',
      'Session keys stay revoked after Unfreeze: create new ones for the agent.'));
  }
  if (app.pendingFreeze) children.push(pendingFreezeBanner());
  children.push(el('h1', {}, open.length ? `${open.length} waiting for you` : 'Nothing to approve'));
  for (const r of open) children.push(card(r, v));
  if (app.forged.length) children.push(el('p', { class: 'warn', id: 'forged' }, `Dropped ${app.forged.length} request(s) your signer did not sign (the bridge may be compromised). Nothing was signed for them.`));
  children.push(home.section(app.home, app.homeLive, refreshHome, app.homeProblem));
  const outstanding = outstandingSection();
  if (outstanding) children.push(outstanding);
  children.push(controls());
  children.push(policyEdit.section(policyUi()));
  children.push(grants.section({ el, app, v, visible, vault, store, showError, render }));
  children.push(tier3Section(v));
  children.push(activitySection());
  children.push(el('section', { id: 'this-device' }, el('h2', {}, 'This device'),
    el('p', {}, `${app.device.name} (${app.device.device_id}); key protected by ${v.kind === 'passkey' ? 'a passkey' : 'a passphrase'}`),
    el('p', {}, 'Main account ', el('code', { class: 'address' }, P.groupedAddress(v.address)))));
  children.push(devicesSection());
  screen(...children);
  tick();  // the countdowns, now rather than at the next second
  if (app.result && app.result.fresh) {
    app.result.fresh = false;
    const panel = $('#result');
    if (panel) { panel.focus({ preventScroll: true }); panel.scrollIntoView({ block: 'start' }); }
  }
}

// What happened after the owner's answer: where they are looking, until they dismiss it.
function resultPanel(result) {
  const link = result.explorer ? el('a', { href: result.explorer, target: '_blank', rel: 'noopener noreferrer' }, 'View on the explorer') : null;
  return el('section', { id: 'result', class: `result ${result.kind}`, role: 'status', tabindex: '-1', 'aria-labelledby': 'result-title' },
    el('h2', { id: 'result-title' }, result.title),
    ...result.lines.map((line) => el('p', {}, line)), link,
    el('button', { id: 'result-done', class: 'primary', onclick: () => { app.result = null; render(); } }, 'Done'));
}

function pendingFreezeBanner() {
  return el('div', { class: 'banner pending-freeze', id: 'pending-freeze', role: 'alert' },
    el('strong', {}, 'Freeze not sent yet: '),
    'this phone could not reach the bridge. It is sent as soon as the phone reconnects. ',
    'Freeze now from the signer\'s machine: ', el('code', {}, 'owlia signer freeze'), ' ',
    el('button', { id: 'cancel-freeze', onclick: cancelPendingFreeze }, 'Cancel the freeze'));
}

function card(r, v) {
  const journaled = approvedEntry(r.request_id);
  const canApprove = !!(app.device.signer_key && v.backed_up && (r.tx || r.kind === 'policy'));
  return renderCard(r, { mainAddress: v.address, ownAccounts: home.ownAccounts(app.home), journaled, canApprove, needsPassphrase: v.kind === 'passphrase',
    onAnswer: (action, passphrase) => answer(r, action, passphrase) });
}

// Approvals this phone signed that are not yet on chain (the bridge failed or went quiet after the
// signature): shown only when there is one, since an empty heading under "1 waiting for you" reads
// as a contradiction.
function outstandingSection() {
  const entries = (app.journal || []).filter((e) => !journal.isSettled(e));
  if (!entries.length) return null;
  return el('section', { id: 'outstanding' }, el('h2', {}, `Signed, not yet on chain (${entries.length})`),
    el('p', { class: 'note' }, 'You signed these, but the bridge did not confirm they were sent. Whoever holds one can send it until its nonce is used: nothing to do if you still want the payment; to void one, send any transaction from your main account with that nonce.'),
    ...entries.map((e) => el('div', { class: 'outstanding-entry' },
      el('strong', {}, `${formatWei(BigInt(e.value))} ETH to ${P.shortAddress(e.to)}`), el('br'),
      `nonce ${e.nonce} on ${P.chainName({ chain_id: e.chain_id })}, transaction ${text(e.tx_hash).slice(0, 10)}…${text(e.tx_hash).slice(-4)}`, el('br'),
      el('span', { class: 'note' }, `The bridge said: ${visible(e.reply).slice(0, 200)}`))));
}

function controls() {
  const keys = home.topupKeys(app.home);
  const keyId = keys.length
    ? el('select', { id: 'topup-key' }, ...keys.map((k) => el('option', { value: k.id }, k.words)))
    : el('input', { id: 'topup-key', autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false' });
  const amount = el('input', { id: 'topup-amount', inputmode: 'decimal', autocomplete: 'off' });
  const kill = app.state.frozen
    ? el('button', { id: 'unfreeze', onclick: () => freeze('unfreeze') }, 'Unfreeze')
    : el('button', { id: 'freeze', class: 'danger', onclick: () => freeze('freeze'), disabled: !!app.pendingFreeze }, 'Freeze now');
  return el('section', { id: 'controls' }, el('h2', {}, 'Controls'),
    kill,
    el('p', { class: 'note' }, 'Freeze stops every session key at once. Without this phone, run ', el('code', {}, 'owlia signer freeze'), ' on the signer\'s machine.'),
    el('button', { id: 'notify', onclick: enablePush }, 'Notify me of new requests'),
    el('h3', {}, 'Top up a session key'),
    keys.length
      ? labelled('Session key', keyId)
      : labelled('Session key id', keyId, 'Starts with sk_; shown by the agent or the signer. Read the balances again to choose from your keys.'),
    labelled('Amount in ETH', amount, 'Leave empty to fill it up to its cap.'),
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
      + 'Works with the signer and the bridge gone (a stolen host). The addresses are in config.yaml on the signer machine (chains[].delegation).'),
    el('label', { for: 't3-rpc' }, 'Chain node URL'), rpcUrl,
    el('label', { for: 't3-chain' }, 'Chain id'), chainId,
    el('label', { for: 't3-manager' }, 'DelegationManager address'), manager,
    el('label', { for: 't3-nonce-enforcer' }, 'NonceEnforcer address'), enforcer,
    el('label', { for: 't3-pass', hidden: v.kind !== 'passphrase' }, 'Key passphrase'), pass,
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
        await home.markTier3Ended(app, store, settings.chain_id, `revoked from this phone, revocation nonce ${done.before} → ${done.after}`);
      } catch (e) {
        app.tier3.last = `Not revoked: ${e.message || e}`;
        showError(app.tier3.last);
      }
      pass.value = '';
      await store.put('kv', 'tier3', app.tier3);
      await render();
    } }, 'Revoke every grant on chain'),
    result,
    tier3freeze.control({ el, app, v, vault, store, showError, render, recordOutcome, markEnded: grants.markEnded }));
}

const ACTION_WORDS = { approve: 'Approved', deny: 'Denied', freeze: 'Denied and froze', topup: 'Top-up requested',
  notifications: 'Notifications', 'freeze-all': 'Froze signing', unfreeze: 'Unfroze signing', 'freeze-queued': 'Freeze queued (offline)',
  'freeze-cancelled': 'Queued freeze cancelled', revoke: 'Done', policy: 'Applied', 'tier3-freeze': 'Tier 3 frozen' };

function activitySection() {
  const list = (app.outcomes || []).slice(-15).reverse();
  return el('section', { id: 'activity' }, el('h2', {}, 'Activity'),
    list.length ? null : el('p', { class: 'note' }, 'Nothing yet.'),
    el('ul', { class: 'activity' }, list.map((o) => {
      const failed = o.status === 'refused';
      const verb = failed ? `${ACTION_WORDS[o.action] ? o.action : 'answer'} refused` : (ACTION_WORDS[o.action] || o.action);
      const link = o.tx_hash ? P.explorerTx(o.chain_id, o.tx_hash) : null;
      const tone = failed ? ' refused' : /^(approve|unfreeze|topup|notifications|policy)$/.test(o.action) ? ' done' : /freeze/.test(o.action) ? ' frozen' : '';
      return el('li', { class: 'activity-row' + tone, 'data-request': o.request_id || null },
        el('span', { class: 'what' }, o.what ? `${o.what}${o.to ? ' to ' + o.to : ''}` : verb),
        el('span', { class: 'status' }, o.what ? verb : ''),
        el('span', { class: 'meta' }, [new Date(o.at).toLocaleString(), o.request_id ? P.shortId(o.request_id) : null,
          o.detail ? visible(o.detail).slice(0, 120) : null].filter(Boolean).join(' · ')),
        link ? el('a', { href: link, target: '_blank', rel: 'noopener noreferrer' }, 'explorer') : null);
    })));
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
        + `; key ${visible(d.key_fingerprint).slice(0, 16)}`),
      d.revoked_at === null ? revokeControl(d) : null)));
}

// Revoke asks once more, in words: it cannot be undone from the phone (pair again from the host).
function revokeControl(d) {
  const name = visible(d.name);
  if (app.confirmRevoke !== d.device_id) {
    return el('button', { class: 'revoke danger', 'aria-label': `Revoke ${name}`,
      onclick: () => { app.confirmRevoke = d.device_id; render(); } }, 'Revoke');
  }
  return el('div', { class: 'confirm-revoke', role: 'group', 'aria-label': `Revoke ${name}?` },
    el('p', {}, d.this_device
      ? 'Revoke this phone? It can no longer approve, deny or freeze; pair it again from the signer\'s machine.'
      : `Revoke ${name}? Its answers are refused from now on and its connections close; pair it again from the signer's machine.`),
    el('button', { class: 'revoke-yes danger', onclick: () => revokeDevice(d) }, `Yes, revoke ${name}`),
    el('button', { class: 'revoke-no', onclick: () => { app.confirmRevoke = null; render(); } }, 'Keep it'));
}

async function revokeDevice(d) {
  showError('');
  app.confirmRevoke = null;
  const device = app.device, seed = eth.hexToBytes(device.seed);
  try {
    if (!app.session || app.status !== 'connected') throw new Error('could not reach the bridge; on the signer\'s machine run owlia companion revoke');
    const ts = nowTs();
    const body = { device_id: device.device_id, target_device_id: d.device_id, ts };
    const signature = proto.deviceSign(seed, proto.signedMessage(proto.DOMAINS.revoke, body));
    await app.session.call('approvals.revoke_device', { ...body, signature });
    await recordOutcome({ action: 'revoke', what: `Revoked ${visible(d.name)}`, to: '' });
    refreshDevices('', true).catch(() => {});
  } catch (e) {
    showError(`revoke refused: ${e.message}`);
    await recordOutcome({ action: 'revoke', status: 'refused', detail: e.message });
  } finally { seed.fill(0); }
  await render();
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

// What the limits and address-book screen (policy_edit.js) may use of the app.
const policyUi = () => ({ app, vault, showError, render, recordOutcome });

// The countdowns; a card whose request expired says so in its own action bar and cannot be approved.
function tick() {
  const now = Date.now() / 1000;
  for (const c of document.querySelectorAll('.countdown')) {
    const left = Math.floor(Number(c.dataset.expires) - now);
    c.textContent = left > 0 ? `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}` : 'expired';
    const cardNode = c.closest('.card');
    if (left <= 0 && cardNode && !cardNode.classList.contains('expired')) {
      cardNode.classList.add('expired');
      const approve = cardNode.querySelector('button.approve');
      if (approve) approve.disabled = true;
      showCardError(cardNode, 'This request expired: nothing was signed. The agent has to ask again.');
    }
  }
}

// ---- the journal (companion/journal.py's rules, in journal.js) -------------------------------

async function loadJournal() {
  app.journal = (await store.get('kv', 'journal')) || [];
  app.outcomes = (await store.get('kv', 'outcomes')) || [];
  app.devices = (await store.get('kv', 'devices')) || null;
  app.tier3 = (await store.get('kv', 'tier3')) || null;
  app.pendingFreeze = (await store.get('kv', 'pending_freeze')) || null;
  app.tier3Grants = (await store.get('kv', 'tier3_grants')) || [];
  await home.load(app, store);
}

// The balances and spending on the home screen (home.js): read again on connect and after each act.
function refreshHome() {
  return home.refresh(app, store).then((read) => (read ? render() : null))
    .catch((e) => console.error(`home: ${e.message || e}`));
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

// One line of the activity list: what, to whom, status, when, a short id, the tx (for the explorer).
async function recordOutcome(entry) {
  app.outcomes.push({ at: Date.now(), status: 'ok', ...entry });
  app.outcomes = app.outcomes.slice(-50);
  await store.put('kv', 'outcomes', app.outcomes);
}

const describe = (request) => (request && request.actions ? summary(request) : { what: '', to: '' });

function resultFor(request, action, result) {
  const { what, to } = describe(request);
  const about = what ? `${what}${to ? ' to ' + to : ''} on ${visible(P.chainName(request))}` : '';
  const txHash = visible(result.tx_hash);
  if (action === 'approve' && request.kind === 'policy') {
    return { kind: 'approved', title: 'Policy change approved', lines: ['Your signer applies the new policy now.'] };
  }
  if (action === 'approve') {
    return { kind: 'approved', title: 'Approved and sent', lines: [about, txHash ? `Transaction ${txHash.slice(0, 10)}…${txHash.slice(-6)}` : ''].filter(Boolean),
      explorer: P.explorerTx(request.chain_id, txHash) };
  }
  if (action === 'freeze') {
    return { kind: 'frozen', title: 'Denied and frozen', lines: [about, 'Nothing was signed. Every session key is revoked and stays revoked after Unfreeze.'].filter(Boolean) };
  }
  return { kind: 'denied', title: 'Denied', lines: [about, 'Nothing was signed.'].filter(Boolean) };
}

// ---- answers ---------------------------------------------------------------------------------

async function answer(request, action, passphrase) {
  showError('');
  const cardOf = () => document.querySelector(`article.card[data-request="${CSS.escape(request.request_id)}"]`);
  showCardError(cardOf(), '');
  app.result = null;  // the last answer's result gives way to this one's
  const device = app.device, v = await vault.load();
  const seed = eth.hexToBytes(device.seed);
  const { what, to } = describe(request);
  let refusal = null;
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
      if (!app.session || app.status !== 'connected') throw new Error('could not reach the bridge (this phone is offline); try again when connected');
      result = await app.session.call('approvals.answer', params);
    } catch (e) {
      if (txHash) await noteReply(request, `error: ${e.message}`);
      throw e;
    }
    if (txHash) await noteReply(request, `${text(result.status)} ${text(result.tx_hash)}`);
    await recordOutcome({ request_id: request.request_id, action, what, to, chain_id: text(request.chain_id),
      tx_hash: text(result.tx_hash) || txHash || null });
    app.result = { ...resultFor(request, action, result), fresh: true };
    app.requests.delete(request.request_id);
    saveRequests();
    if (txHash) settle(await app.session.call('approvals.state')).catch(() => {});
    refreshHome();
  } catch (e) {
    refusal = `${action === 'approve' ? 'Approve' : action === 'deny' ? 'Deny' : 'Deny and freeze'} refused: ${e.message || e}`;
    console.error(e.stack || String(e));  // where, never what: errors carry no key material
    await recordOutcome({ request_id: request.request_id, action, what, to, status: 'refused', detail: e.message || String(e) });
  } finally {
    seed.fill(0);
    await render();
  }
  // Said in the card's own action bar (the owner's finger is there), after the re-render.
  if (refusal && !showCardError(cardOf(), refusal)) showError(refusal);
}

async function noteReply(request, reply) {
  const e = approvedEntry(request.request_id);
  if (!e) return;
  e.reply = reply;
  await saveJournal();
}

// The kill switch always does something: sent now when connected; otherwise kept (in IndexedDB)
// and sent as soon as the phone reconnects, unless the owner cancels it.
async function freeze(action) {
  showError('');
  if (action === 'freeze' && (!app.session || app.status !== 'connected')) return queueFreeze();
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
    await recordOutcome({ action: action === 'freeze' ? 'freeze-all' : 'unfreeze' });
    refreshHome();
    if (action === 'freeze') {
      app.result = { kind: 'frozen', title: 'Frozen', lines: ['No session key signs anything now. Session keys stay revoked after Unfreeze.'], fresh: true };
    }
  } catch (e) {
    if (action === 'freeze' && e.transport) { seed.fill(0); return queueFreeze(e.message); }
    showError(`${action} refused: ${e.message}`);
    await recordOutcome({ action, status: 'refused', detail: e.message });
  } finally { seed.fill(0); }
  await render();
}

async function queueFreeze(why) {
  app.pendingFreeze = { at: Date.now() };
  await store.put('kv', 'pending_freeze', app.pendingFreeze);
  await recordOutcome({ action: 'freeze-queued', detail: why ? `could not reach the bridge: ${why}` : 'could not reach the bridge' });
  await render();
  const banner = $('#pending-freeze');
  if (banner) banner.scrollIntoView({ block: 'center' });
}

async function cancelPendingFreeze() {
  app.pendingFreeze = null;
  await store.del('kv', 'pending_freeze');
  await recordOutcome({ action: 'freeze-cancelled' });
  await render();
}

async function sendPendingFreeze() {
  if (!app.pendingFreeze || app.status !== 'connected') return;
  app.pendingFreeze = null;
  await store.del('kv', 'pending_freeze');
  await freeze('freeze');
}

async function topup(keyId, amount) {
  showError('');
  const device = app.device, seed = eth.hexToBytes(device.seed);
  try {
    if (!/^sk_[A-Za-z0-9_-]+$/.test(keyId)) throw new Error('type the session key id (it starts with sk_)');
    const wei = amount ? P.parseUnits(amount, 18) : null;
    if (wei === 0n) throw new Error('the amount must be more than 0 ETH (or empty: up to its cap)');
    const ts = nowTs();
    const body = { device_id: device.device_id, key_id: keyId, amount: wei === null ? null : wei.toString(), ts };
    const params = { device_id: device.device_id, key_id: keyId, ts,
      signature: proto.deviceSign(seed, proto.signedMessage(proto.DOMAINS.topup, body)) };
    if (wei !== null) params.amount = wei.toString();
    const result = await app.session.call('approvals.topup', params);
    for (const id of ['topup-key', 'topup-amount']) { const f = document.getElementById(id); if (f) f.value = ''; }
    refreshHome();
    await recordOutcome({ request_id: text(result.request_id) || null, action: 'topup', what: `Top up ${amount || 'to its cap'}${amount ? ' ETH' : ''}`, to: home.sessionKeyWords(app.home, keyId) });
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
    await recordOutcome({ action: 'notifications', detail: 'enabled' });
  } catch (e) { showError(`notifications: ${e.message}`); }
  await render();
}

// ---- the connection --------------------------------------------------------------------------

function receive(requests) {
  for (const r of requests) {
    try {
      if (!r || typeof r !== 'object' || typeof r.request_id !== 'string' || !(r.expires_at instanceof Num)) throw new Error('not a request');
      proto.verifiedHash(r, app.device.signer_key);
    } catch {
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
    if (app.error.startsWith('cannot reach the bridge')) showError('');  // no stale failure beside "connected"
    sendPendingFreeze().catch((e) => console.error(`queued freeze: ${e.message}`));
    settle(await session.call('approvals.state')).then(render).catch(() => {});
    refreshHome();
  } catch (e) {
    app.status = 'offline';
    const why = /failed to fetch|networkerror|load failed/i.test(e.message || '') ? 'no network' : e.message;
    showError(`cannot reach the bridge (${why}); retrying every few seconds`);
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

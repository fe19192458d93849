// "Freeze Tier 3" from the phone alone, the same on-chain act as `owlia wallet freeze`
// (companion_bridge/companion/tier3.py freeze): one EIP-7702 transaction from the main account that
// points the account's code at the zero address (a plain account again: nothing can be redeemed from
// it) and calls NonceEnforcer.incrementNonce(manager) (every grant signed so far stays dead, even if
// the account is authorized again later). Sent by this page to the owner's chain node: no bridge, no
// signer, so it works after a host theft. The funds stay with the main key.
import * as tier3 from './tier3.js';
import { signEip7702 } from './grants.js';
import { shortAddress } from './present.js';
import { text, visible } from './dom.js';
import { markTier3Ended } from './home.js';

export const ZERO_ADDRESS = '0x' + '00'.repeat(20);
export const FREEZE_GAS = 150000n;  // as the CLI: the authorization and incrementNonce

// Runs the whole act; `signWith(fn)` calls fn(secret) with the passkey-unlocked main key.
// Returns {before, after, tx_hash}; throws in words when it did not take effect on chain.
export async function freeze(settings, account, signWith, step = () => {}) {
  step('asking the node');
  await tier3.checkChain(settings);
  const before = await tier3.currentNonce(settings, account);
  const { txHash, receipt } = await tier3.sendFromMain(settings, account, (fees) => signWith((secret) => signEip7702({ ...fees,
    gas_limit: FREEZE_GAS, to: settings.nonce_enforcer, value: 0n, data: tier3.incrementNonceCalldata(settings.manager),
    implementation: ZERO_ADDRESS }, secret)), step);
  if (!receipt) throw new Error(`no receipt for ${txHash} yet: check it later, or freeze again`);
  const after = await tier3.currentNonce(settings, account);
  const code = String(await tier3.rpc(settings.rpc_url, 'eth_getCode', [account, 'latest'])).toLowerCase();
  if (receipt.status !== '0x1' || after <= before || (code !== '0x' && code !== '')) {
    throw new Error(`the freeze did not take effect on chain (tx ${txHash}): freeze again (or, on a computer with your main key: owlia wallet freeze)`);
  }
  return { before, after, tx_hash: txHash };
}

// The result screen's words (main.js shows them where the owner is looking).
export function resultLines(account, chainName, done) {
  return [
    `Your main account ${shortAddress(account)} on ${chainName} is a plain account again: no session key can spend from it through Tier 3.`,
    `Every grant it gave is dead on chain for good (revocation nonce ${done.before} → ${done.after}); authorizing it again later revives none of them.`,
    'Your funds did not move: they stay with your main key.',
    'To use Tier 3 again: authorize the account, then grant again, in the Tier 3 section below.',
  ];
}

// The button, for main.js's Tier 3 section (the node and addresses are that section's fields).
// ui: { el, app, v, vault, store, showError, render, recordOutcome, markEnded }
export function control(ui) {
  const { el, app, v } = ui;
  const field = (id) => (document.getElementById(id) || {}).value;
  return el('div', { class: 'tier3-freeze' },
    el('p', { class: 'note' }, 'Freeze Tier 3 makes your main account a plain account again and ends every grant on chain for good, '
      + 'in one transaction from this phone to the node above. No bridge and no signer are needed. Your funds stay put.'),
    el('button', { id: 't3-freeze', class: 'danger', onclick: async () => {
      ui.showError('');
      let settings;
      try {
        settings = tier3.checkSettings({ rpc_url: field('t3-rpc'), chain_id: field('t3-chain'), manager: field('t3-manager'), nonce_enforcer: field('t3-nonce-enforcer') });
      } catch (e) { return ui.showError(e.message); }
      app.tier3 = { ...(app.tier3 || {}), rpc_url: settings.rpc_url, chain_id: settings.chain_id.toString(), manager: settings.manager, nonce_enforcer: settings.nonce_enforcer };
      await ui.store.put('kv', 'tier3', app.tier3);
      const known = ((app.home && app.home.balances) || []).find((b) => b && text(b.chain_id) === settings.chain_id.toString());
      const chainName = known && known.chain ? visible(known.chain) : `chain ${settings.chain_id}`;
      const pass = field('t3-pass') || '';
      const progress = document.getElementById('t3-result');
      try {
        const done = await freeze(settings, v.address, (fn) => ui.vault.withSecret(pass, async (secret) => fn(secret)),
          (what) => { if (progress) progress.textContent = `Freezing Tier 3: ${what}…`; });
        await ui.markEnded(app, ui.store, settings, v.address, done);
        await markTier3Ended(app, ui.store, settings.chain_id, `frozen from this phone, revocation nonce ${done.before} → ${done.after}`);
        app.tier3.last = `Tier 3 frozen on ${chainName} (tx ${done.tx_hash}).`;
        app.result = { kind: 'frozen', title: 'Tier 3 frozen', lines: resultLines(v.address, chainName, done), fresh: true };
        await ui.recordOutcome({ action: 'tier3-freeze', what: 'Froze Tier 3', to: chainName, chain_id: settings.chain_id.toString(), tx_hash: done.tx_hash });
      } catch (e) {
        const message = e.message || String(e);
        app.tier3.last = `Tier 3 not frozen: ${message}`;
        app.result = { kind: 'denied', title: 'Tier 3 not frozen', lines: [message, 'Nothing changed on chain unless a transaction is named above.'], fresh: true };
        await ui.recordOutcome({ action: 'tier3-freeze', status: 'refused', detail: message });
      }
      const box = document.getElementById('t3-pass');
      if (box) box.value = '';
      await ui.store.put('kv', 'tier3', app.tier3);
      await ui.render();
    } }, 'Freeze Tier 3'));
}

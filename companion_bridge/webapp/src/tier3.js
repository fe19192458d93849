// Tier 3 from the phone alone: end every delegation of the main account with one transaction,
// NonceEnforcer.incrementNonce(manager), sent by the main account to a chain node the owner named.
// Neither the bridge nor the signer is involved (after a host theft both may be the thief's): the
// page asks the node for the nonce and fees, signs with the main key, broadcasts, and reads the
// revocation nonce back. Same calldata as signer/wire/delegation.py's increment_nonce_calldata.
import * as eth from './eth.js';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const SELECTOR = (signature) => eth.bytesToHex(eth.keccak_256(eth.utf8ToBytes(signature)).slice(0, 4));
export const INCREMENT_NONCE = SELECTOR('incrementNonce(address)');
export const CURRENT_NONCE = SELECTOR('currentNonce(address,address)');
export const REVOKE_GAS = 100000n;

const word = (address) => '0'.repeat(24) + eth.strip0x(address).toLowerCase();

export function incrementNonceCalldata(manager) { return '0x' + INCREMENT_NONCE + word(manager); }
export function currentNonceCalldata(manager, account) { return '0x' + CURRENT_NONCE + word(manager) + word(account); }

// What the owner entered once (kept in IndexedDB): checked before anything is signed.
export function checkSettings(s) {
  const url = String(s.rpc_url || '').trim();
  if (!/^https?:\/\/[^\s]+$/.test(url)) throw new Error('the node URL must start with https:// (or http:// for a local node)');
  if (!/^[0-9]{1,12}$/.test(String(s.chain_id || '').trim())) throw new Error('the chain id must be a whole number');
  for (const [name, what] of [['manager', 'the DelegationManager'], ['nonce_enforcer', 'the NonceEnforcer']]) {
    if (!ADDRESS.test(String(s[name] || '').trim())) throw new Error(`${what} must be an address (0x and 40 hex digits)`);
  }
  return { rpc_url: url, chain_id: BigInt(String(s.chain_id).trim()), manager: s.manager.trim().toLowerCase(),
    nonce_enforcer: s.nonce_enforcer.trim().toLowerCase() };
}

let rpcId = 0;
export async function rpc(url, method, params) {
  let reply;
  try {
    const resp = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }), credentials: 'omit', referrerPolicy: 'no-referrer' });
    reply = await resp.json();
  } catch (e) {
    throw new Error(`cannot reach the node at ${url} (${e.message || e}); check the URL and that this phone is online`, { cause: e });
  }
  if (reply.error) throw new Error(`the node refused ${method}: ${String(reply.error.message || '').slice(0, 200)}`);
  return reply.result;
}

export const quantity = (hex, what) => {
  if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]+$/.test(hex)) throw new Error(`the node gave a malformed ${what}`);
  return BigInt(hex);
};

export async function currentNonce(settings, account) {
  const raw = await rpc(settings.rpc_url, 'eth_call', [{ to: settings.nonce_enforcer, data: currentNonceCalldata(settings.manager, account) }, 'latest']);
  return quantity(raw === '0x' ? '0x0' : raw, 'revocation nonce');
}

// The owner's node must serve the chain the owner named: asked before anything is read or signed.
export async function checkChain(settings) {
  const chainId = quantity(await rpc(settings.rpc_url, 'eth_chainId', []), 'chain id');
  if (chainId !== settings.chain_id) throw new Error(`the node at ${settings.rpc_url} is chain ${chainId}, not ${settings.chain_id}: nothing was signed`);
}

// One transaction from the main account, on a node `checkChain` accepted: the nonce and fees read from
// the node, `sign(fields)` signs them with whatever the act adds (the caller unlocks the key with the
// passkey), then it is broadcast and its receipt awaited. Returns {txHash, receipt}; receipt is null
// when none came within two minutes.
export async function sendFromMain(settings, account, sign, step = () => {}) {
  const nonce = quantity(await rpc(settings.rpc_url, 'eth_getTransactionCount', [account, 'pending']), 'nonce');
  const block = await rpc(settings.rpc_url, 'eth_getBlockByNumber', ['latest', false]);
  const tip = quantity(await rpc(settings.rpc_url, 'eth_maxPriorityFeePerGas', []), 'priority fee');
  const base = quantity(block.baseFeePerGas || '0x0', 'base fee');
  step('signing');
  const signed = await sign({ chain_id: settings.chain_id, nonce, max_priority_fee_per_gas: tip, max_fee_per_gas: 2n * base + tip });
  step('broadcasting');
  const txHash = await rpc(settings.rpc_url, 'eth_sendRawTransaction', [eth.hex0x(signed.raw)]);
  let receipt = null;
  for (let i = 0; i < 300 && !receipt; i++) {
    receipt = await rpc(settings.rpc_url, 'eth_getTransactionReceipt', [txHash]);
    if (!receipt) await new Promise((ok) => setTimeout(ok, 400));
  }
  return { txHash, receipt };
}

// Runs the whole act; `sign(tx)` signs with the main key (the caller unlocks it with the passkey).
// Returns {before, after, tx_hash}; throws with words when anything did not take effect.
export async function revokeAll(settings, account, sign, step = () => {}) {
  step('asking the node');
  await checkChain(settings);
  const before = await currentNonce(settings, account);
  const { txHash, receipt } = await sendFromMain(settings, account, (fees) => sign({ ...fees,
    gas_limit: REVOKE_GAS, to: settings.nonce_enforcer, value: 0n, data: incrementNonceCalldata(settings.manager) }), step);
  if (!receipt) throw new Error(`no receipt for ${txHash} yet: check it later, or revoke again`);
  const after = await currentNonce(settings, account);
  if (receipt.status !== '0x1' || after <= before) throw new Error(`the revocation did not take effect on chain (tx ${txHash}): revoke again`);
  return { before, after, tx_hash: txHash };
}

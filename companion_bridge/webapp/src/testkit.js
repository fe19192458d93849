// The app's own modules, exposed for the test vectors (tests/companion/test_webapp.py): built to
// dist/testkit.js, never served by the bridge (its file table does not list it).
import * as canon from './canon.js';
import * as eth from './eth.js';
import * as proto from './protocol.js';
import * as journal from './journal.js';
import * as present from './present.js';
import { renderCard } from './card.js';
import * as grants from './grants.js';
import * as policyEdit from './policy_edit.js';
import { roundUnits } from './home.js';

globalThis.owliaTestkit = {
  signEip1559(tx, secretHex) {
    const big = (v) => BigInt(v);
    const out = eth.signEip1559({ chain_id: big(tx.chainId), nonce: big(tx.nonce), max_priority_fee_per_gas: big(tx.maxPriorityFeePerGas),
      max_fee_per_gas: big(tx.maxFeePerGas), gas_limit: big(tx.gas), to: tx.to, value: big(tx.value), data: tx.data }, eth.hexToBytes(secretHex));
    return { raw: eth.hex0x(out.raw), hash: out.hash };
  },
  dumps: (text, ascii) => canon.dumps(canon.parse(text), ascii),
  requestHash: (text) => proto.requestHash(canon.parse(text)),
  signedMessage: (domain, text) => new TextDecoder().decode(proto.signedMessage(domain, canon.parse(text))),
  checksum: eth.toChecksum,
  addressOf: (secretHex) => eth.addressOf(eth.hexToBytes(secretHex)),
  keystore: async (secretHex, pass, n) => JSON.stringify(await eth.encryptKeystore(eth.hexToBytes(secretHex), pass, n)),
  fromKeystore: async (json, pass) => eth.bytesToHex(await eth.decryptKeystore(json, pass)),
  // Runs admit/apply_quote steps; returns the entries after each step (or 'full').
  journalRun(ops, maxEntries, maxUnsettled) {
    let entries = [];
    const out = [];
    for (const op of ops) {
      if (op.op === 'admit') {
        try { entries = journal.admit(entries, journal.newEntry(op.entry), maxEntries, maxUnsettled); out.push('ok'); }
        catch (e) { if (!(e instanceof journal.JournalFull)) throw e; out.push('full'); }
      } else {
        out.push(journal.applyQuote(entries, op.quote, op.main, op.now) ? 'changed' : 'same');
      }
    }
    return { out, entries, final: entries.map(journal.isFinal) };
  },
  typedDataDigest: (text) => eth.bytesToHex(grants.typedDataDigest(canon.parse(text))),
  signDigest: (digestHex, secretHex) => grants.signDigest(eth.hexToBytes(digestHex), eth.hexToBytes(secretHex)),
  offerHash: (text) => grants.offerHash(canon.parse(text)),
  // 'ok' or the refusal's words: what the page does with an offer before anything is shown or signed.
  checkOffer(text, signerKey, account) {
    try { grants.checkOffer(canon.parse(text), signerKey, account); return 'ok'; } catch (e) { return e.message; }
  },
  signEip7702(tx, secretHex) {
    const big = (v) => BigInt(v);
    const out = grants.signEip7702({ chain_id: big(tx.chainId), nonce: big(tx.nonce), max_priority_fee_per_gas: big(tx.maxPriorityFeePerGas),
      max_fee_per_gas: big(tx.maxFeePerGas), gas_limit: big(tx.gas), to: tx.to, value: big(tx.value), data: tx.data,
      implementation: tx.implementation }, eth.hexToBytes(secretHex));
    return { raw: eth.hex0x(out.raw), hash: out.hash };
  },
  fromPhrase: async (phrase) => eth.bytesToHex(await eth.secretFromPhrase(phrase)),
  // The approval card for a request body, appended to the page; returns its text as shown.
  renderCard(requestText, mainAddress) {
    const node = renderCard(canon.parse(requestText), { mainAddress, journaled: null, canApprove: true, needsPassphrase: false,
      onAnswer: () => {} });
    document.body.append(node);
    return node.innerText;
  },
  explorerTx: present.explorerTx,
  dollars: (amount, decimals, price) => present.dollars(BigInt(amount), decimals, price),
  parseUnits: (typed) => present.parseUnits(typed).toString(),
  // Each typed amount -> wei as text, or null where the page refuses it.
  parseMany: (texts, decimals) => texts.map((t) => { try { return present.parseUnits(t, decimals).toString(); } catch { return null; } }),
  formatMany: (pairs) => pairs.map(([amount, decimals]) => present.formatUnits(BigInt(amount), decimals)),
  feeText: (wei) => present.feeText(BigInt(wei), 'ETH'),
  // The limits screen's edits and its tighter/looser reading of typed changes (policy_edit.js).
  policyDiff(policyText, draft, added, removed) {
    try {
      const r = policyEdit.diff(canon.parse(policyText), draft, added.map((a) => ({ ...a, chain: new canon.Num(String(a.chain)) })), new Set(removed));
      return { edits: JSON.parse(canon.dumps(r.edits, false)), lines: r.lines.map((l) => l.words), loosens: r.loosens };
    } catch (e) { return { error: e.message }; }
  },
  // What the device key and the main key sign for an edit: the bytes, and the EIP-191 signature.
  policyEditSigned(deviceId, baseHash, editsText, ts, secretHex) {
    const m = policyEdit.editMessage(deviceId, baseHash, canon.parse(editsText), ts);
    return { message: new TextDecoder().decode(m), main: policyEdit.personalSign(m, eth.hexToBytes(secretHex)) };
  },
  // [amount, decimals, 'up' | 'down'] -> the shortened amount the home screen and swap card show
  roundMany: (items) => items.map(([amount, decimals, direction]) => roundUnits(BigInt(amount), decimals, direction)),
};

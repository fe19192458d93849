// IndexedDB: the page's only storage. Nothing here is sent anywhere.
// One object store, `kv`:
//   vault:    the main key as AES-GCM ciphertext (never the key, never the wrapping key)
//   device:   the Ed25519 device seed, device id, signer identity key (public)
//   journal:  approvals this page signed (journal.js)
//   outcomes: recent answers and their replies
//   requests: the open requests, to open offline to the last screen
//   pending_pair: a pairing link's fields until the pairing is done
//   pending_freeze: a freeze pressed offline, sent (signed then) when the phone reconnects
//   tier3:    the chain node and Tier 3 contract addresses the owner typed (tier3.js, grants.js)
//   tier3_grants: every Tier 3 grant this page signed (grants.js): its record, to name them on revoke
const DB = 'owliabot-companion';
const STORES = ['kv'];
let dbp = null;

function open() {
  if (!dbp) {
    dbp = new Promise((resolve, reject) => {
      const req = indexedDB.open(DB, 1);
      req.onupgradeneeded = () => {
        for (const s of STORES) if (!req.result.objectStoreNames.contains(s)) req.result.createObjectStore(s);
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  }
  return dbp;
}

async function tx(store, mode, fn) {
  const db = await open();
  return new Promise((resolve, reject) => {
    const t = db.transaction(store, mode);
    const result = fn(t.objectStore(store));
    t.oncomplete = () => resolve(result && 'result' in result ? result.result : undefined);
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error || new Error('storage transaction aborted'));
  });
}

export const get = (store, key) => tx(store, 'readonly', (s) => s.get(key));
export const put = (store, key, value) => tx(store, 'readwrite', (s) => s.put(value, key));
export const del = (store, key) => tx(store, 'readwrite', (s) => s.delete(key));
export const all = (store) => tx(store, 'readonly', (s) => s.getAll());

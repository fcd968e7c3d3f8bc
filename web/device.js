// This browser as one of the person's devices (docs/keep/page.md): an Ed25519 key made with
// WebCrypto, its private half non-extractable, kept in IndexedDB for this origin and user. It
// signs decisions in the canonical JSON the host verifies, exactly as `imurun keep decide`
// does. Nothing here decides anything: the page asks, the person clicks, the host verifies.

import { canonicalJson, hex, sha256Hex, utf8 } from './canonical.js';

const DB_NAME = 'imurun-keep';
const STORE = 'devices';
/** How long a decision made here is valid, as the command line's. */
export const DECISION_TTL_S = 300;
/** Characters of a key id: the first half of the public key's SHA-256. */
const KEY_ID_CHARS = 32;

/**
 * Why this browser cannot hold a device key, or null when it can. Checked by making a
 * throwaway key: a browser may know WebCrypto and still not Ed25519.
 */
export async function unsupported() {
  if (!window.isSecureContext || !globalThis.crypto?.subtle || !globalThis.indexedDB) {
    return 'This page is not in a secure context (https, or http on this machine), so the '
      + 'browser offers no WebCrypto and no device key can be made here. Open the page over '
      + 'https or on the host itself, or sign with the command line (imurun keep approve).';
  }
  try {
    await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
    return null;
  } catch (error) {
    return `This browser cannot make Ed25519 keys with WebCrypto (${error.name || 'refused'}), `
      + 'so it cannot be a device. Use a current Chromium, Firefox or Safari, or sign with '
      + 'the command line (imurun keep approve).';
  }
}

function openDb() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: 'user' });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function withStore(mode, work) {
  const db = await openDb();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const request = work(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(request?.result);
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error);
    });
  } finally {
    db.close();
  }
}

/** This browser's key for `user`, or null: `{user, privateKey, publicKey, public_key, key_id, label}`. */
export async function loadDevice(user) {
  return (await withStore('readonly', (store) => store.get(user))) ?? null;
}

/** Makes and keeps a new key for `user` (the private half can never leave the browser). */
export async function createDevice(user, label) {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  const record = {
    user,
    label,
    privateKey: pair.privateKey,
    publicKey: pair.publicKey,
    public_key: hex(raw),
    key_id: await keyId(raw),
  };
  await withStore('readwrite', (store) => store.put(record));
  return record;
}

/** Forgets this browser's key for `user` (it cannot be brought back). */
export async function forgetDevice(user) {
  await withStore('readwrite', (store) => store.delete(user));
}

/** A key's id from its 32 bytes, as the host computes it. */
export async function keyId(raw) {
  return (await sha256Hex(raw)).slice(0, KEY_ID_CHARS);
}

/** The 32 bytes of a public key given in hexadecimal; throws on anything else. */
export function publicKeyBytes(text) {
  const clean = text.trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(clean)) throw new Error('a public key is 64 hexadecimal characters');
  return Uint8Array.from(clean.match(/../g), (pair) => parseInt(pair, 16));
}

async function sign(device, text) {
  return hex(await crypto.subtle.sign({ name: 'Ed25519' }, device.privateKey, utf8(text)));
}

/** The proof that whoever enrols `device` holds it: its signature over the possession message. */
export async function possession(device, user) {
  const message = { type: 'imurun.device_possession', user, public_key: device.public_key };
  return sign(device, canonicalJson(message));
}

/**
 * A decision signed by `device`: `basis` names `kind`, `subject`, `hashes`, `ceiling_version`
 * and `policy_version` (as the host's review gives them). Answers `{envelope, canonical}`: the
 * envelope to submit and the exact text the signature covers.
 */
export async function decide(device, user, basis, confirmTainted = false) {
  const nonce = hex(crypto.getRandomValues(new Uint8Array(16)));
  const now = Math.floor(Date.now() / 1000);
  const decision = {
    type: 'imurun.decision',
    kind: basis.kind,
    subject: basis.subject,
    hashes: basis.hashes,
    ceiling_version: basis.ceiling_version,
    policy_version: basis.policy_version,
    user,
    device_key_id: device.key_id,
    nonce,
    issued_at: now,
    expires_at: now + DECISION_TTL_S,
    confirm_tainted: Boolean(confirmTainted),
  };
  const canonical = canonicalJson(decision);
  const sig = await sign(device, canonical);
  return { envelope: { signed: decision, signature: { key_id: device.key_id, sig } }, canonical };
}

// RFC 8785 canonical JSON, byte for byte what the host and `imurun keep canonical` make: members
// sorted by their names' UTF-16 code units, no whitespace, strings and numbers as ECMAScript's
// JSON.stringify writes them (which is how RFC 8785 defines them). Only what may be signed is
// accepted: integers within ±(2^53 − 1), strings without lone surrogates, at most 16 nested arrays and
// objects.

const DEPTH_MAX = 16;

/** The canonical text of `value`; throws on a value that cannot be signed. */
export function canonicalJson(value) {
  return write(value, 0);
}

function write(value, depth) {
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`${value} is not an integer within ±(2^53 − 1)`);
    return JSON.stringify(value);
  }
  if (typeof value === 'string') {
    if (!value.isWellFormed()) throw new Error('a string holds a lone surrogate');
    return JSON.stringify(value);
  }
  if (depth >= DEPTH_MAX) throw new Error(`the document nests deeper than ${DEPTH_MAX} levels`);
  if (Array.isArray(value)) return `[${value.map((item) => write(item, depth + 1)).join(',')}]`;
  if (typeof value === 'object') {
    // The default sort compares UTF-16 code units, as RFC 8785 asks.
    const names = Object.keys(value).sort();
    return `{${names.map((name) => `${write(name, depth)}:${write(value[name], depth + 1)}`).join(',')}}`;
  }
  throw new Error(`a ${typeof value} cannot be signed`);
}

/** The UTF-8 bytes of `text`. */
export function utf8(text) {
  return new TextEncoder().encode(text);
}

/** Lower-case hexadecimal of bytes. */
export function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** SHA-256 of bytes (or of a string's UTF-8), in hexadecimal. */
export async function sha256Hex(data) {
  const bytes = typeof data === 'string' ? utf8(data) : data;
  return hex(await crypto.subtle.digest('SHA-256', bytes));
}

// The page's only way to the server: JSON requests with the API token, and the event stream.
// The token (when the server has one) is asked once and kept in this tab's sessionStorage.

const TOKEN_KEY = 'imurun.token';

/** The token this tab holds, or null. */
export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** Raised on a 401: the page shows its token form. */
export class Unauthorized extends Error {}

/**
 * `method path` with an optional JSON body. Answers `{status, body}` for every HTTP answer
 * (errors included: callers read `body.error.message`); throws `Unauthorized` on 401.
 */
export async function api(method, path, body) {
  return request(method, path, body === undefined ? undefined : JSON.stringify(body));
}

/**
 * `method path` with `text` as its JSON body, sent as it is: a signed file the person chose
 * goes to the host byte for byte (the host reads it strictly, duplicate names refused, which
 * parsing it here would hide).
 */
export async function sendText(method, path, text) {
  return request(method, path, text);
}

async function request(method, path, bodyText) {
  const headers = {};
  const held = token();
  if (held) headers.Authorization = `Bearer ${held}`;
  const init = { method, headers };
  if (bodyText !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = bodyText;
  }
  const response = await fetch(path, init);
  if (response.status === 401) throw new Unauthorized('the server needs its API token');
  let parsed = null;
  const text = await response.text();
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { error: { code: 'bad_answer', message: text.slice(0, 200) } };
    }
  }
  return { status: response.status, body: parsed };
}

/** The message of an error answer, for a person. */
export function errorText(answer) {
  return answer?.body?.error?.message || `the server answered ${answer?.status}`;
}

/**
 * An EventSource on `path` with these query parameters, and the token as `?access_token=`
 * (percent-encoded: the server decodes the query's token; URL-safe tokens stay as they are).
 */
function eventSource(path, params = []) {
  const parts = params.slice();
  const held = token();
  if (held) parts.push(`access_token=${encodeURIComponent(held)}`);
  return new EventSource(`${path}${parts.length ? `?${parts.join('&')}` : ''}`);
}

/** An EventSource on `/api/events`, for one session's events (plus the global ones). */
export function openEvents(sessionId) {
  return eventSource('/api/events', sessionId ? [`session=${encodeURIComponent(sessionId)}`] : []);
}

/** An EventSource on a Keep host's `/v1/events`: the signed-in person's own events. */
export function openKeepEvents() {
  return eventSource('/v1/events');
}

/**
 * Hands each event `source` brings (one JSON object per message) to `handle`, while
 * `current()` says `source` is still the stream followed; a message that is not JSON is
 * skipped.
 */
export function onJsonEvents(source, current, handle) {
  source.onmessage = (message) => {
    if (!current()) return;
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    handle(event);
  };
}

// The page's entry: asks for the API token when the server wants one, keeps the sessions
// list, and switches between the chat and settings views from the address's hash
// (`#chat/<session id>`, `#settings`), so a reload comes back to the same place. It opens
// with the prompt box focused: a first prompt needs no session made beforehand.

import { Unauthorized, api, errorText, setToken, token } from './api.js';
import { currentSession, initChat, setTitle, showSession, stopChat } from './chat.js';
import { byId, fill, h, markCurrent } from './dom.js';
import { initKeep, routeKeep, startKeep, stopKeep } from './keep.js';
import {
  CONSOLE_LINKS, CONSOLE_VIEWS, isConsoleHash, leaveConsole, routeConsole, startConsole, stopConsole,
} from './keep-console.js';
import { initSettings, loadGrants, loadModel, loadSettings, showPermissions } from './settings.js';

let sessions = [];
/** On a Keep host, who the token is (`GET /v1/whoami`); null elsewhere. */
let signedIn = null;

async function start() {
  initChat({ onGlobalEvent, onSessionCreated, guard });
  initSettings();
  initKeep({ guard });
  byId('new-session').addEventListener('click', () => guard(newSession));
  byId('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    tokens += 1;
    setToken(byId('token-input').value.trim());
    byId('token-input').value = '';
    guard(boot);
  });
  byId('sign-out').addEventListener('click', () => toSignIn(''));
  window.addEventListener('hashchange', () => guard(route));
  await guard(boot);
}

/** Runs `work`; a 401 shows the token form instead of failing (unless someone signed in since). */
async function guard(work) {
  const at = tokens;
  try {
    await work();
  } catch (error) {
    if (!(error instanceof Unauthorized)) throw error;
    // A refusal of the token someone signed in with before is not this person's.
    if (at !== tokens) return;
    toSignIn(sessionStorage.length ? 'That token was not accepted.' : '');
  }
}

/**
 * Forgets the token and everything shown with it (the event streams, the views' contents);
 * the sign-in form shows, with `message` (why, or nothing).
 */
function toSignIn(message) {
  boots += 1;
  tokens += 1;
  setToken(null);
  stopKeep();
  stopConsole();
  stopChat();
  sessions = [];
  renderSessions();
  signedIn = null;
  byId('who').textContent = '';
  byId('sign-out').hidden = true;
  byId('token-error').textContent = message;
  showView('token-view');
  byId('token-input').focus();
}

/** Bumped by each sign-in and sign-out: a boot overtaken by another draws nothing. */
let boots = 0;
/** Bumped each time the token changes (a sign-in, a sign-out): a 401 met with another token is not this one's. */
let tokens = 0;

async function boot() {
  boots += 1;
  const at = boots;
  // A Keep host (its health check needs a token: a 401 shows the sign-in) says who the
  // token is.
  const health = await api('GET', '/api/health');
  const who = health.body?.keep ? await api('GET', '/v1/whoami') : null;
  if (at !== boots) return;
  signedIn = who?.status === 200 ? who.body : null;
  byId('sign-out').hidden = !token();
  if (signedIn?.role === 'user') {
    await startKeep(signedIn);
    if (at !== boots) return;
    await route();
    return;
  }
  byId('who').textContent = signedIn ? 'Signed in as the operator' : '';
  // The operator of a Keep host: the console beside the assistant.
  if (signedIn?.role === 'operator') startConsole();
  await loadModel();
  await loadSessions();
  await route();
  // Ready to type, unless something already took the focus (an approval card waiting).
  const focused = document.activeElement;
  if (!byId('chat-view').hidden && (!focused || focused === document.body)) byId('prompt').focus();
}

async function route() {
  let hash = '';
  try {
    hash = decodeURIComponent(location.hash.slice(1));
  } catch {
    // A hand-made address that is not percent-encoding: the default view.
  }
  if (signedIn?.role === 'user') {
    await routeKeep(hash.startsWith('keep/') ? hash : 'keep/proposals', showView);
    return;
  }
  if (signedIn?.role === 'operator' && isConsoleHash(hash)) {
    await routeConsole(hash, showView, ASSISTANT_LINKS);
    return;
  }
  leaveConsole();
  if (hash === 'settings') {
    showView('settings-view');
    markCurrent([...ASSISTANT_LINKS, ...CONSOLE_LINKS], 'nav-settings');
    await loadSettings();
    return;
  }
  showView('chat-view');
  markCurrent([...ASSISTANT_LINKS, ...CONSOLE_LINKS], 'nav-chat');
  const wanted = hash.startsWith('chat/') ? hash.slice(5) : null;
  const session = sessions.find((s) => s.id === wanted) || (wanted ? null : sessions[0]);
  if (session?.id !== currentSession() || currentSession() === null) {
    await showSession(session?.id ?? null, session?.title);
  }
  renderSessions();
}

function showView(id) {
  for (const view of VIEWS) byId(view).hidden = view !== id;
}

const VIEWS = ['token-view', 'chat-view', 'settings-view', 'keep-agents-view', 'keep-conversations-view',
  'keep-talk-view', 'keep-proposals-view', 'keep-review-view',
  'keep-tools-view', 'keep-journal-view', 'keep-device-view', ...CONSOLE_VIEWS];

/** The assistant's links in the header. */
const ASSISTANT_LINKS = ['nav-chat', 'nav-settings'];

async function loadSessions() {
  const answer = await api('GET', '/api/sessions');
  if (answer.status === 200) sessions = answer.body.sessions;
  renderSessions();
}

function renderSessions() {
  const current = currentSession();
  byId('nav-chat').href = current ? `#chat/${encodeURIComponent(current)}` : '#chat';
  fill(byId('session-list'), sessions.length === 0
    ? h('li', { class: 'muted' }, 'No sessions yet.')
    : sessions.map((session) => {
      const title = session.title || 'Untitled session';
      return h('li', { class: session.id === current ? 'current' : '' },
        h('a', {
          href: `#chat/${encodeURIComponent(session.id)}`, class: 'session-link',
          'aria-current': session.id === current ? 'true' : null,
        }, title),
        h('button', {
          type: 'button', class: 'icon secondary', 'aria-label': `Rename ${title}`,
          onclick: () => guard(() => rename(session)),
        }, 'Rename'),
        h('button', {
          type: 'button', class: 'icon secondary', 'aria-label': `Delete ${title}`,
          onclick: () => guard(() => remove(session)),
        }, 'Delete'));
    }));
}

async function newSession() {
  const answer = await api('POST', '/api/sessions', {});
  if (answer.status !== 201) {
    byId('prompt-error').textContent = errorText(answer);
    return;
  }
  upsert(answer.body);
  // The hash change shows the new session (see `route`).
  location.hash = `#chat/${encodeURIComponent(answer.body.id)}`;
  byId('prompt').focus();
}

async function rename(session) {
  const title = window.prompt('New title', session.title || '');
  if (title === null) return;
  const answer = await api('PATCH', `/api/sessions/${session.id}`, { title: title.trim() || null });
  if (answer.status === 200) upsert(answer.body);
}

async function remove(session) {
  if (!window.confirm(`Delete “${session.title || 'Untitled session'}” and its turns?`)) return;
  const answer = await api('DELETE', `/api/sessions/${session.id}`);
  if (answer.status === 200) forget(session.id);
}

/** A first prompt created `session`: list it and put it in the address. */
function onSessionCreated(session) {
  upsert(session);
  // `route` finds it current already and keeps the view as it is.
  location.hash = `#chat/${encodeURIComponent(session.id)}`;
}

function upsert(session) {
  const index = sessions.findIndex((s) => s.id === session.id);
  // An event can arrive after the answer to a later change (a rename answered while the
  // update of an earlier message was still on its way): the older copy never wins.
  if (index >= 0 && session.updated_at_ms < sessions[index].updated_at_ms) return;
  if (index >= 0) sessions[index] = session;
  else sessions.unshift(session);
  if (session.id === currentSession()) setTitle(session.title);
  renderSessions();
}

function forget(id) {
  sessions = sessions.filter((s) => s.id !== id);
  if (id === currentSession()) {
    location.hash = '#chat';
    showSession(null);
  }
  renderSessions();
}

/** Events that are not about one session's turns. */
function onGlobalEvent(event) {
  switch (event.type) {
    case 'session.created':
    case 'session.updated':
      if (event.session) upsert(event.session);
      break;
    case 'session.deleted':
      forget(event.session_id);
      break;
    case 'permissions':
      showPermissions(event);
      break;
    case 'grants.revoked':
      if (!byId('settings-view').hidden) loadGrants();
      break;
    default:
  }
}

start();

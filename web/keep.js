// A person's view of a Keep host (docs/keep/page.md), shown when the token signed in is a
// user's: proposals and their authority diff, egress uses waiting for them, their tools, plans,
// suggestions, memory entries and cards, the journal, and this browser as one of their
// devices. Every decision that needs a device is signed here (device.js) and verified by the
// host; everything a cell or the host wrote is shown as text, never interpreted.

import { Unauthorized, api, errorText, onJsonEvents, openKeepEvents } from './api.js';
import { canonicalJson, sha256Hex } from './canonical.js';
import * as devices from './device.js';
import { byId, fill, h, markCurrent } from './dom.js';
import { forgetTalk, loadAgents, loadConversation, loadConversations, reloadTalk, shownSession } from './keep-talk.js';

let me = null;
let events = null;
let device = null;
let deviceProblem = null;
let current = 'proposals';
let reloadTimer = null;
const pendingReloads = new Set();
/**
 * Bumped when a person signs in or out: an answer to a request made before (with another
 * token) is dropped rather than drawn for whoever is signed in now.
 */
let signIns = 0;

/** A check that answers true once the person signed in has changed since it was made. */
export function whileSignedIn() {
  return staleAfter();
}

function staleAfter() {
  const at = signIns;
  return () => at !== signIns;
}

/**
 * Who is signed in as an action starts, with their device, and a check that says when that is
 * no longer so: what an action does after an answer arrives is for the person who clicked, or
 * nothing.
 */
function signedInNow() {
  return { stale: staleAfter(), user: me?.user, device };
}

/** Runs work that may meet a 401 (app.js: it shows the sign-in). */
let guard = (work) => work();

/** Wires the page's guard, which turns a refused token into the sign-in. */
export function initKeep(options) {
  guard = options.guard;
}

/**
 * What may be shown as itself: control, format (bidi, zero-width), other default-ignorable
 * and blank-looking characters become visible `\u{XXXX}` (as the host writes them), and so do
 * combining marks past the third on one character, so nothing hides, reorders or overflows.
 */
export function visibleText(value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const escape = (character) => `\\u{${character.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}}`;
  return (text ?? '')
    .replace(/[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029\u2800]/gu,
      (character) => (character === '\n' || character === '\t' ? character : escape(character)))
    .replace(/(\p{M}{3})(\p{M}+)/gu, (_, kept, extra) => kept + [...extra].map(escape).join(''));
}

/**
 * `work` for a button: the button is disabled while it runs (a second click sends nothing),
 * a refused token shows the sign-in, and any other failure is said in `result`.
 */
export function act(work, result) {
  return async (event) => {
    event?.preventDefault?.();
    // Every button of the item (Approve and Deny alike) or form waits for this one.
    const target = event?.currentTarget;
    const scope = target instanceof HTMLFormElement ? target : target?.closest?.('.decide, form, li') ?? target ?? null;
    const within = scope instanceof HTMLButtonElement ? [scope] : [...(scope?.querySelectorAll?.('button') ?? [])];
    const buttons = within.filter((button) => !button.disabled);
    if (scope?.dataset.busy) return;
    if (scope) scope.dataset.busy = 'true';
    for (const button of buttons) button.disabled = true;
    const stale = staleAfter();
    try {
      await guard(work);
    } catch (error) {
      if (result && !stale()) status(result, `Something failed: ${error.message}`, false);
    } finally {
      if (scope) delete scope.dataset.busy;
      for (const button of buttons) button.disabled = false;
    }
  };
}

export function when(ms) {
  return ms ? new Date(ms).toLocaleString() : '—';
}

function fact(name, ...value) {
  return h('div', {}, h('dt', {}, name), h('dd', {}, ...value));
}

export function status(el, text, ok = true) {
  el.textContent = text;
  el.className = ok ? 'result ok' : 'result error';
}

/** Starts the Keep view for `whoami` (a user): the device, the event stream, the first view. */
export async function startKeep(whoami) {
  signIns += 1;
  const stale = staleAfter();
  me = whoami;
  document.body.classList.add('keep-user');
  byId('who').textContent = `Signed in as ${me.user}`;
  byId('model-status').textContent = 'Keep host';
  // Worked out in locals: a sign-out meanwhile leaves the module's state alone.
  let problem = await devices.unsupported();
  let record = null;
  if (!problem) {
    try {
      record = await devices.loadDevice(whoami.user);
    } catch (error) {
      problem = `This browser's key store cannot be read (${error.name || error.message}), so it cannot sign here.`;
    }
  }
  if (stale()) return;
  if (record) {
    const state = await registration(record);
    if (stale()) return;
    if (state === 'retired') {
      // A retired key signs nothing ever again: forget it, so a new one can be enrolled.
      await devices.forgetDevice(whoami.user);
      if (stale()) return;
      record = null;
    } else if (state === 'unknown') {
      record = { ...record, pending: true };
    }
  }
  deviceProblem = problem;
  device = record;
  events?.close();
  const source = openKeepEvents();
  events = source;
  onJsonEvents(source, () => events === source, onEvent);
  source.onopen = () => { byId('keep-live').textContent = 'Live: new proposals and decisions show as they happen.'; };
  source.onerror = () => {
    if (events !== source) return;
    byId('keep-live').textContent = 'Reconnecting to the event stream…';
    // A stream the browser gave up on: a refused token shows the sign-in.
    if (source.readyState === EventSource.CLOSED) guard(() => api('GET', '/v1/whoami'));
  };
}

/** Closes the event stream and forgets everything shown (signing out, or a refused token). */
export function stopKeep() {
  signIns += 1;
  events?.close();
  events = null;
  clearTimeout(reloadTimer);
  reloadTimer = null;
  pendingReloads.clear();
  me = null;
  device = null;
  deviceProblem = null;
  reviewed = null;
  reviews += 1;
  keyMaking = null;
  for (const id of ['keep-approvals', 'keep-tool-proposals', 'keep-other-proposals', 'keep-review', 'keep-tools', 'keep-journal', 'keep-device']) fill(byId(id));
  forgetTalk();
  for (const id of ['keep-live', 'keep-device-note', 'keep-proposals-error', 'keep-tools-result', 'keep-chain', 'keep-recheck', 'keep-device-result']) byId(id).textContent = '';
  document.body.classList.remove('keep-user');
}

/** Whether this browser's key is one of the person's devices at the host: `registered`, `retired` or `unknown`. */
async function registration(record) {
  const answer = await api('GET', '/v1/devices');
  const found = answer.status === 200 ? answer.body.devices.find((key) => key.key_id === record.key_id) : null;
  if (!found) return 'unknown';
  return found.retired_at_ms ? 'retired' : 'registered';
}

const VIEWS = {
  agents: 'keep-agents-view',
  conversations: 'keep-conversations-view',
  conversation: 'keep-talk-view',
  proposals: 'keep-proposals-view',
  proposal: 'keep-review-view',
  tools: 'keep-tools-view',
  journal: 'keep-journal-view',
  device: 'keep-device-view',
};

/** The Keep view `hash` names (`keep/tools`, `keep/proposal/kt-…`), loaded. */
export async function routeKeep(hash, showView) {
  const [, name = 'proposals', id] = hash.split('/');
  current = VIEWS[name] ? name : 'proposals';
  showView(VIEWS[current]);
  markCurrent(Object.values(NAV), NAV[current]);
  if (current === 'proposal') await loadReview(id);
  else if (current === 'conversation') await loadConversation(id);
  else await LOADERS[current]();
}

/** The header's link of each view (a review belongs to Proposals). */
const NAV = {
  agents: 'nav-agents',
  conversations: 'nav-conversations',
  conversation: 'nav-conversations',
  proposals: 'nav-proposals',
  proposal: 'nav-proposals',
  tools: 'nav-tools',
  journal: 'nav-journal',
  device: 'nav-device',
};

const LOADERS = {
  agents: loadAgents,
  conversations: loadConversations,
  proposals: loadProposals,
  tools: loadTools,
  journal: loadJournal,
  device: loadDevice,
};

/** Events reload what they are about, at most once per 150 ms each. */
function onEvent(event) {
  const type = event.type || '';
  // `stream.*`: events were missed (a gap, a lagging reader): reload everything shown.
  const missed = type.startsWith('stream.');
  if (missed || type.startsWith('proposal.') || type.startsWith('egress.')) pendingReloads.add('proposals');
  if (missed || type.startsWith('tool.') || type === 'proposal.decided') pendingReloads.add('tools');
  if (missed || type === 'proposal.decided') pendingReloads.add('review');
  const aboutShown = event.session_id && event.session_id === shownSession();
  if (missed || type.startsWith('session.') || aboutShown || type.startsWith('proposal.') || type.startsWith('egress.')) pendingReloads.add('talk');
  if (reloadTimer) return;
  reloadTimer = setTimeout(() => guard(async () => {
    reloadTimer = null;
    const wanted = [...pendingReloads];
    pendingReloads.clear();
    if (wanted.includes('proposals') && current === 'proposals') await loadProposals();
    if (wanted.includes('tools') && current === 'tools') await loadTools();
    if (wanted.includes('review') && current === 'proposal') await refreshReviewState();
    if (wanted.includes('talk') && ['agents', 'conversations', 'conversation'].includes(current)) await reloadTalk();
  }).catch(() => {}), 150);
}

/**
 * Puts `items` (`[key, build]` pairs, in order) into `list`, keeping the element of every key
 * it already shows as it is: a live update never unticks a box, clears a result or takes the
 * focus from an item that did not change.
 */
export function reconcile(list, items) {
  const kept = new Map([...list.children].map((el) => [el.dataset.key, el]));
  const wanted = items.map(([key, build]) => {
    const el = kept.get(key) || build();
    el.dataset.key = key;
    return el;
  });
  for (const el of [...list.children]) if (!wanted.includes(el)) el.remove();
  wanted.forEach((el, index) => {
    if (list.children[index] !== el) list.insertBefore(el, list.children[index] || null);
  });
}

// Proposals ---------------------------------------------------------------------------------

async function loadProposals() {
  const stale = staleAfter();
  const [proposals, approvals] = await Promise.all([api('GET', '/v1/proposals'), api('GET', '/v1/approvals')]);
  if (stale()) return;
  byId('keep-proposals-error').textContent = proposals.status === 200 ? '' : errorText(proposals);
  deviceNote();
  const empty = (text) => [['empty', () => h('li', { class: 'muted' }, text)]];
  const list = approvals.status === 200 ? approvals.body.approvals : [];
  reconcile(byId('keep-approvals'), list.length === 0
    ? empty(approvals.status === 200 ? 'Nothing is waiting for you.' : errorText(approvals))
    : list.map((approval) => [approval.id, () => approvalItem(approval)]));
  const tools = proposals.status === 200 ? proposals.body.tools : [];
  reconcile(byId('keep-tool-proposals'), tools.length === 0
    ? empty(proposals.status === 200 ? 'No tool has been proposed.' : '')
    : tools.map((review) => [`${review.id}:${review.state}`, () => toolProposalItem(review)]));
  const others = proposals.status === 200 ? proposals.body.proposals : [];
  reconcile(byId('keep-other-proposals'), others.length === 0
    ? empty(proposals.status === 200 ? 'Nothing proposed yet.' : '')
    : others.map((proposal) => [`${proposal.id}:${proposal.state}`, () => otherProposalItem(proposal)]));
}

function deviceNote() {
  const note = byId('keep-device-note');
  note.replaceChildren();
  if (deviceProblem) note.append(deviceProblem);
  else if (!device || device.pending) {
    note.append('This browser is not one of your devices yet, so it cannot sign. ',
      h('a', { href: '#keep/device' }, 'Enrol it'), '.');
  }
}

function stateBadge(state) {
  return h('span', { class: `badge state-${state}` }, state);
}

export function taintBadge(tainted) {
  return tainted ? h('span', { class: 'badge taint' }, 'tainted') : null;
}

export function toolProposalItem(review) {
  const authority = review.authority_diff.length === 0
    ? h('span', { class: 'badge ok' }, 'no new authority')
    : h('span', { class: 'badge new-authority' }, `${review.authority_diff.length} new ${review.authority_diff.length === 1 ? 'authority' : 'authorities'}`);
  return h('li', { 'data-id': review.id },
    h('div', {},
      h('a', { href: `#keep/proposal/${encodeURIComponent(review.id)}` }, `${visibleText(review.name)} version ${review.version}`),
      ' ', stateBadge(review.state), taintBadge(review.tainted), authority,
      h('p', { class: 'muted' }, `from ${visibleText(review.origin.agent)} (version ${review.origin.agent_version}), ${when(review.origin.created_at_ms)}`)));
}

export function otherProposalItem(proposal) {
  const body = proposalBody(proposal);
  const item = h('li', { 'data-id': proposal.id, 'data-kind': proposal.kind, class: 'proposal' },
    h('div', { class: 'proposal-main' },
      h('p', {}, h('strong', {}, KIND_NAMES[proposal.kind] || proposal.kind), ' ', stateBadge(proposal.state), taintBadge(proposal.tainted),
        h('span', { class: 'muted' }, ` from ${visibleText(proposal.agent)}, ${when(proposal.created_at_ms)}`)),
      body,
      proposal.tainted ? h('p', { class: 'muted' }, `What tainted the session: ${visibleText(proposal.taint_source || 'untrusted content')}`) : null));
  if (proposal.state === 'pending') item.append(acceptReject(proposal));
  return item;
}

const KIND_NAMES = { memory: 'Memory entry', suggestion: 'Suggestion', plan: 'Plan', card: 'Card (display only)' };

/** What the agent proposed, as text: nothing in it is a link, a button or markup. */
function proposalBody(proposal) {
  const payload = proposal.payload || {};
  switch (proposal.kind) {
    case 'memory':
      return h('p', { class: 'text' }, visibleText(payload.text));
    case 'suggestion':
      return h('div', {}, payload.title ? h('p', {}, h('strong', {}, visibleText(payload.title))) : null,
        h('p', { class: 'text' }, visibleText(payload.text)));
    case 'plan':
      return h('div', {}, h('p', {}, h('strong', {}, visibleText(payload.title))),
        h('ol', { class: 'steps' }, (payload.steps || []).map((step) => h('li', { class: 'text' }, visibleText(step)))));
    case 'card':
      return h('div', { class: 'keep-card', role: 'group', 'aria-label': `Card: ${visibleText(payload.title)}` },
        h('p', {}, h('strong', {}, visibleText(payload.title))),
        payload.body ? h('p', { class: 'text' }, visibleText(payload.body)) : null,
        payload.fields?.length ? h('dl', { class: 'facts' }, payload.fields.map((field) => fact(visibleText(field.label ?? field.name ?? ''), visibleText(field.value ?? '')))) : null);
    default:
      return h('pre', {}, visibleText(JSON.stringify(payload, null, 2)));
  }
}

function confirmBox(id, text) {
  const box = h('input', { type: 'checkbox', id });
  return { box, label: h('label', { class: 'check confirm', for: id }, box, text) };
}

/** Whether a needed confirm is ticked; says so in `result` when it is not. */
function confirmed(needed, box, result, why) {
  if (!needed || box?.checked) return true;
  status(result, `Tick the confirm first: ${why}`, false);
  return false;
}

function acceptReject(proposal) {
  const result = h('p', { class: 'result', role: 'status' });
  const confirm = proposal.tainted
    ? confirmBox(`confirm-${proposal.id}`, 'This came from a session that read untrusted content. I have read it and accept it anyway.')
    : null;
  const accept = h('button', {
    type: 'button',
    onclick: act(() => decideOther(proposal, 'accept', confirm?.box, result), result),
  }, 'Accept');
  const reject = h('button', {
    type: 'button', class: 'secondary',
    onclick: act(() => decideOther(proposal, 'reject', null, result), result),
  }, 'Reject');
  return h('div', { class: 'decide' }, confirm?.label, h('div', { class: 'actions' }, accept, reject), result);
}

async function decideOther(proposal, action, box, result) {
  const now = signedInNow();
  const accepting = action === 'accept';
  if (accepting && !confirmed(proposal.tainted, box, result, 'this came from a tainted session.')) return;
  const body = accepting ? { confirm_tainted: Boolean(box?.checked) } : undefined;
  const answer = await api('POST', `/v1/proposals/${encodeURIComponent(proposal.id)}/${action}`, body);
  if (now.stale()) return;
  if (answer.status !== 200) {
    status(result, errorText(answer), false);
    return;
  }
  await loadProposals();
}

// Waiting egress uses -----------------------------------------------------------------------

export function approvalItem(approval) {
  const result = h('p', { class: 'result', role: 'status' });
  const answer = (approve) => act(() => answerApproval(approval, approve, result), result);
  return h('li', { class: 'approval', 'data-id': approval.id, 'data-state': 'waiting' },
    h('div', { class: 'proposal-main' },
      h('p', {}, h('strong', {}, `${approval.method} `), h('span', { class: 'wrap' }, visibleText(approval.url)), taintBadge(approval.tainted)),
      h('dl', { class: 'facts' },
        approval.agent.startsWith('u/')
          ? fact('Tool', `${visibleText(approval.agent)} (version ${approval.agent_version})`)
          : fact('Agent', `${visibleText(approval.agent)} (version ${approval.agent_version})`),
        fact('Credentials the host adds', approval.credentials.length ? approval.credentials.map(visibleText).join(', ') : 'none'),
        approval.body_bytes === 0
          ? fact('Body', 'no body')
          : fact('Body', `${approval.body_bytes} ${approval.body_bytes === 1 ? 'byte' : 'bytes'}`, h('span', { class: 'muted mono wrap' }, `, SHA-256 ${approval.body_sha256}`)),
        approval.headers.length ? fact('Headers', h('pre', {}, approval.headers.map(([name, value]) => `${visibleText(name)}: ${visibleText(value)}`).join('\n'))) : null,
        approval.device_signature ? fact('Needs', 'a signature from this device') : null),
      approval.tainted ? h('p', {}, 'The session read untrusted content that may be steering this request.') : null),
    h('div', { class: 'decide' },
      h('div', { class: 'actions' },
        h('button', { type: 'button', onclick: answer(true) }, approval.device_signature ? 'Approve (sign)' : 'Approve'),
        h('button', { type: 'button', class: 'secondary', onclick: answer(false) }, 'Deny')),
      result));
}

async function answerApproval(approval, approve, result) {
  const now = signedInNow();
  const body = { approve };
  if (approve && approval.device_signature) {
    if (!(await approvalHashesHold(approval))) {
      status(result, 'The host names other hashes than the request it shows (or shows it cut), so this page signs nothing: decide it with the command line.', false);
      return;
    }
    const signed = await signOrSay(result, {
      kind: 'approve_egress', subject: approval.id, hashes: approval.hashes,
      ceiling_version: 0, policy_version: approval.agent_version,
    }, false, now);
    if (!signed) return;
    body.decision = signed.envelope;
  }
  const answer = await api('POST', `/v1/approvals/${encodeURIComponent(approval.id)}`, body);
  if (now.stale()) return;
  if (answer.status !== 200) status(result, errorText(answer), false);
  else status(result, approve ? 'Approved: the request goes out.' : 'Denied: the request was refused.');
}

/**
 * Whether an egress approval's hashes are those of the request shown: `body` its body's hash,
 * `request` the hash of `{body_sha256, credentials, headers, method, url}` as shown. A header cut or
 * escaped for showing makes them differ, and then nothing is signed here.
 */
async function approvalHashesHold(approval) {
  try {
    const { method, url, headers, credentials, body_sha256: bodySha } = approval;
    const request = await sha256Hex(canonicalJson({ body_sha256: bodySha, credentials, headers, method, url }));
    // A body shown as empty must hash as empty: its size is in no hash.
    const empty = bodySha === EMPTY_SHA256;
    return sameKeys(approval.hashes, ['body', 'request']) && (approval.body_bytes === 0) === empty
      && approval.hashes.body === bodySha && approval.hashes.request === request;
  } catch {
    return false;
  }
}

/** The SHA-256 of no bytes. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** Whether `hashes` names exactly these keys. */
function sameKeys(hashes, keys) {
  return Object.keys(hashes || {}).sort().join() === keys.slice().sort().join();
}

/**
 * Signs `basis` with the device of the person who clicked (`now`, from `signedInNow`), or says
 * why it cannot (and answers null); nothing is signed once someone else signed in.
 */
async function signOrSay(result, basis, confirmTainted, now) {
  if (now.stale()) return null;
  if (deviceProblem) {
    status(result, deviceProblem, false);
    return null;
  }
  if (!now.device || now.device.pending) {
    status(result, 'This browser is not one of your devices yet: enrol it (Device) to sign.', false);
    return null;
  }
  try {
    const signed = await devices.decide(now.device, now.user, basis, confirmTainted);
    return now.stale() ? null : signed;
  } catch (error) {
    status(result, `The decision could not be signed: ${error.message}`, false);
    return null;
  }
}

// A tool proposal's review ------------------------------------------------------------------

let reviewed = null;
/** Bumped by each load of a review, so an older load that answers late draws nothing. */
let reviews = 0;
/** True while a decision on the review shown is signed and sent. */
let deciding = false;

async function loadReview(id) {
  const root = byId('keep-review');
  reviews += 1;
  const load = reviews;
  // Nothing of the review shown before stays clickable while this one loads.
  fill(root, h('p', { class: 'muted' }, 'Loading…'));
  const answer = await api('GET', `/v1/proposals/${encodeURIComponent(id || '')}`);
  if (load !== reviews) return;
  if (answer.status !== 200 || answer.body.kind !== 'tool') {
    reviewed = null;
    fill(root, h('p', { class: 'error' }, answer.status === 200 ? 'That proposal is not a tool.' : errorText(answer)));
    return;
  }
  const shown = await reviewView(answer.body);
  if (load !== reviews) return;
  reviewed = answer.body;
  fill(root, shown);
}

async function refreshReviewState() {
  if (!reviewed || deciding) return;
  const stale = staleAfter();
  const answer = await api('GET', `/v1/proposals/${encodeURIComponent(reviewed.id)}`);
  if (stale()) return;
  if (answer.status === 200 && answer.body.state !== reviewed.state) {
    const signedText = byId('keep-signed')?.textContent;
    const result = byId('keep-review-result')?.textContent;
    await loadReview(reviewed.id);
    if (signedText) showSigned(signedText);
    if (result) status(byId('keep-review-result'), result);
  }
}

const CLASS_NAMES = {
  new_host: 'New host',
  egress: 'Wider egress',
  credential_reach: 'Credential',
  memory: 'Memory',
  model: 'Model',
  resources: 'Resources',
  timeouts: 'Timeouts',
};

function changeList(changes, className) {
  return h('ul', { class: `changes ${className}` }, changes.map((change) => h('li', { class: `change ${change.class}`, 'data-class': change.class },
    h('mark', {}, CLASS_NAMES[change.class] || change.class), ' ',
    h('span', {}, visibleText(change.summary)),
    h('span', { class: 'muted' }, ` (${visibleText(change.field)})`))));
}

async function reviewView(review) {
  const diff = review.authority_diff;
  const manifestText = JSON.stringify(review.clamped_manifest, null, 2);
  const hashesHold = await reviewHashesHold(review);
  const origin = review.origin;
  const parts = [
    h('p', {}, h('a', { href: `#keep/conversation/${encodeURIComponent(origin.session_id)}` }, 'Back to the conversation it came from')),
    h('h2', {}, `${visibleText(review.name)} version ${review.version} `, stateBadge(review.state)),
    review.tainted ? h('div', { class: 'taint-warning', role: 'note' },
      h('p', {}, h('strong', {}, 'Tainted. '), 'The session that proposed this tool had read untrusted content, which may have steered it. Approving needs your explicit confirm, and the tool asks before each use of the network until you clear its taint.'),
      h('p', {}, `What tainted it: ${visibleText(origin.taint_source || 'untrusted content')}`)) : null,
    h('dl', { class: 'facts' },
      fact('Deploys as', visibleText(review.qualified_name)),
      fact('Code', h('span', { class: 'wrap mono' }, `SHA-256 ${review.bundle_sha256}`), ` (${review.bundle_size} bytes)`),
      fact('Proposed by', `${visibleText(origin.agent)} version ${origin.agent_version}, whose bundle key ${origin.signer_key_id} signed`),
      fact('Session', visibleText(origin.session_id)),
      fact('When', when(origin.created_at_ms))),
    h('h3', {}, 'Description (as the agent wrote it, plain text)'),
    h('pre', { class: 'description' }, visibleText(review.description)),
    h('h3', {}, 'Authority'),
    diff.length === 0
      ? h('p', { class: 'no-new-authority' }, 'No new authority: this tool reaches nothing the agent that proposed it cannot.')
      : h('div', { class: 'new-authority-block' },
        h('p', {}, h('strong', {}, `${diff.length} new ${diff.length === 1 ? 'authority' : 'authorities'}`), ' beyond what the agent has:'),
        changeList(diff, 'authority-diff')),
    review.no_new_authority !== (diff.length === 0)
      ? h('p', { class: 'error' }, 'The host says otherwise about new authority than its own diff: do not approve.') : null,
    h('h3', {}, 'What your ceiling drops'),
    review.dropped.length === 0
      ? h('p', { class: 'muted' }, 'Nothing: everything proposed is within your ceiling.')
      : h('ul', { class: 'dropped' }, review.dropped.map((dropped) => h('li', {},
        h('span', { class: 'mono' }, visibleText(dropped.field)), ': ',
        visibleText(JSON.stringify(dropped.entry)), ' — ', visibleText(dropped.reason)))),
    review.granted_diff.length ? h('div', {}, h('h3', {}, 'What an approval grants (after the ceiling)'), changeList(review.granted_diff, 'granted-diff')) : null,
    h('h3', {}, 'The manifest an approval deploys (clamped by your ceiling)'),
    h('p', { class: 'muted wrap' }, `Your device signs its SHA-256: ${review.hashes.manifest}`),
    h('pre', { class: 'manifest' }, visibleText(manifestText)),
  ];
  if (!hashesHold) {
    parts.push(h('p', { class: 'error', role: 'alert' }, 'The host names other hashes than the manifest and description it shows. Nothing can be signed here.'));
  }
  if (review.refused) {
    parts.push(h('p', { class: 'error', role: 'alert' }, `The host refuses this proposal: ${visibleText(review.refused)}`));
  }
  const result = h('p', { id: 'keep-review-result', class: 'result', role: 'status' });
  if (review.state === 'pending' && hashesHold && !review.refused) {
    const confirm = review.needs_confirm_tainted
      ? confirmBox('confirm-tainted', 'I know this tool was proposed by a tainted session, and approve it anyway.')
      : null;
    parts.push(h('div', { class: 'decide' },
      confirm?.label,
      h('div', { class: 'actions' },
        h('button', { type: 'button', onclick: act(() => decideTool(review, true, confirm?.box, result), result) }, 'Approve on this device'),
        h('button', { type: 'button', class: 'secondary', onclick: act(() => decideTool(review, false, null, result), result) }, 'Deny on this device'))));
  } else if (review.state === 'pending' && hashesHold && review.refused) {
    // A refused proposal never deploys; denying it only clears it from the pending list.
    parts.push(h('div', { class: 'decide' },
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'secondary', onclick: act(() => decideTool(review, false, null, result), result) }, 'Deny on this device'))));
  }
  parts.push(result, h('details', { class: 'signed', hidden: true },
    h('summary', {}, 'What your device signed'), h('pre', { id: 'keep-signed' })));
  return parts;
}

/**
 * The hashes a decision names are those of what the page shows (as `imurun keep approve`
 * checks): the code, the clamped manifest, the description, and what it says about authority.
 */
async function reviewHashesHold(review) {
  try {
    const manifest = await sha256Hex(canonicalJson(review.clamped_manifest));
    const description = await sha256Hex(review.description);
    const { authority_diff: diff, dropped, granted_diff: granted } = review;
    const authority = await sha256Hex(canonicalJson({ authority_diff: diff, dropped, granted_diff: granted }));
    return sameKeys(review.hashes, ['authority', 'bundle', 'description', 'manifest'])
      && review.hashes.manifest === manifest && review.hashes.description === description
      && review.hashes.authority === authority && review.hashes.bundle === review.bundle_sha256;
  } catch {
    return false;
  }
}

function showSigned(text) {
  const shown = byId('keep-signed');
  if (!shown) return;
  shown.textContent = text;
  shown.closest('details').hidden = false;
}

async function decideTool(review, approve, box, result) {
  if (approve && !confirmed(review.needs_confirm_tainted, box, result, 'a tool from a tainted session is approved only with it.')) return;
  deciding = true;
  try {
    await signAndSend(review, approve, approve && Boolean(box?.checked), result, signedInNow());
  } finally {
    deciding = false;
  }
}

async function signAndSend(review, approve, confirmTainted, result, now) {
  const signed = await signOrSay(result, {
    kind: approve ? 'approve_proposal' : 'deny_proposal',
    subject: review.id,
    hashes: review.hashes,
    ceiling_version: review.ceiling_version,
    policy_version: review.policy_version,
  }, confirmTainted, now);
  if (!signed) return;
  showSigned(signed.canonical);
  const answer = await api('POST', `/v1/proposals/${encodeURIComponent(review.id)}/decision`, { decision: signed.envelope });
  if (now.stale()) return;
  if (answer.status !== 200) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  reviewed = answer.body;
  const message = answer.body.state === 'approved'
    ? `Approved on this device: deployed as ${answer.body.qualified_name} version ${answer.body.version}.`
    : 'Denied on this device.';
  const shown = await reviewView(answer.body);
  if (now.stale()) return;
  fill(byId('keep-review'), shown);
  showSigned(signed.canonical);
  status(byId('keep-review-result'), message);
}

// Tools -------------------------------------------------------------------------------------

async function loadTools() {
  const stale = staleAfter();
  const [answer, keys] = await Promise.all([api('GET', '/v1/tools'), api('GET', '/v1/devices')]);
  if (stale()) return;
  if (answer.status !== 200) {
    reconcile(byId('keep-tools'), [['error', () => h('li', { class: 'error' }, errorText(answer))]]);
    return;
  }
  // A device is named by its label, as the person named it; its key id only when it has none.
  labels = new Map((keys.status === 200 ? keys.body.devices : []).map((key) => [key.key_id, key.label]));
  const tools = answer.body.tools;
  reconcile(byId('keep-tools'), tools.length === 0
    ? [['empty', () => h('li', { class: 'muted' }, 'You have no tools yet: approve a proposed one.')]]
    : tools.map((tool) => [
      [tool.name, tool.version, tool.egress_mode, tool.taint_cleared, tool.revoked_at_ms, tool.refused || ''].join(':'),
      () => toolItem(tool),
    ]));
}

/** The person's devices' labels by key id, for naming the device that approved a tool. */
let labels = new Map();

function deviceName(keyId) {
  const label = labels.get(keyId);
  return label ? `“${visibleText(label)}”` : `with the key ${keyId}`;
}

function toolItem(tool) {
  const result = h('p', { class: 'result', role: 'status' });
  const revoked = Boolean(tool.revoked_at_ms);
  const mode = revoked ? 'revoked' : tool.egress_mode;
  const buttons = [];
  let confirm = null;
  if (!revoked && !tool.refused && tool.clear_taint) {
    confirm = confirmBox(`trust-${tool.name}`, `I have checked ${visibleText(tool.name)} and trust its answers from now on.`);
    buttons.push(h('button', { type: 'button', class: 'secondary', onclick: act(() => clearTaint(tool, confirm.box, result), result) }, `Clear taint of ${visibleText(tool.name)}`));
  }
  if (!revoked) {
    buttons.push(h('button', { type: 'button', class: 'danger', onclick: act(() => revoke(tool, result), result) }, `Revoke ${visibleText(tool.name)}`));
  }
  return h('li', { 'data-name': tool.name, 'data-mode': mode },
    h('div', { class: 'proposal-main' },
      h('p', {}, h('strong', {}, visibleText(tool.qualified_name)), ` version ${tool.version} `,
        revoked ? h('span', { class: 'badge state-revoked' }, 'revoked') : h('span', { class: `badge mode-${tool.egress_mode}` }, `egress: ${tool.egress_mode}`),
        tool.tainted && !tool.taint_cleared ? h('span', { class: 'badge taint' }, 'tainted') : null),
      h('p', { class: 'muted' }, revoked
        ? `Revoked ${when(tool.revoked_at_ms)}: no call reaches it.`
        : tool.tainted && !tool.taint_cleared
          ? `Asks before each use of the network until its taint is cleared (${visibleText(tool.taint_source || 'untrusted content')}).`
          : `Deployed ${when(tool.deployed_at_ms)}, approved on your device ${deviceName(tool.approved_by)}.`),
      tool.refused && !revoked
        ? h('p', { class: 'error', role: 'alert' }, `The host refuses this tool: ${visibleText(tool.refused)}. No call reaches it; revoke it.`)
        : null),
    h('div', { class: 'decide' }, confirm?.label, h('div', { class: 'actions' }, buttons), result));
}

/**
 * The `clear_taint` decision for `tool`, built here: its kind and subject are this tool's, and
 * the hashes the host names must be those of the tool shown (its bundle, its manifest).
 */
async function clearTaintBasis(tool, user) {
  const basis = tool.clear_taint;
  const hashes = basis?.hashes || {};
  const manifest = await sha256Hex(canonicalJson(tool.manifest));
  if (!sameKeys(hashes, ['bundle', 'manifest']) || hashes.bundle !== tool.bundle_sha256 || hashes.manifest !== manifest) {
    return null;
  }
  return {
    kind: 'clear_taint',
    subject: `u/${user}/${tool.name}@${tool.version}`,
    hashes,
    ceiling_version: basis.ceiling_version,
    policy_version: basis.policy_version,
  };
}

async function clearTaint(tool, box, result) {
  const now = signedInNow();
  if (!confirmed(true, box, result, 'clearing the taint lets the tool use the network without asking.')) return;
  let basis = null;
  try {
    basis = await clearTaintBasis(tool, now.user);
  } catch {
    basis = null;
  }
  if (!basis) {
    status(result, 'The host names other hashes than the tool it shows, so this page signs nothing.', false);
    return;
  }
  const signed = await signOrSay(result, basis, false, now);
  if (!signed) return;
  const answer = await api('POST', `/v1/tools/${encodeURIComponent(tool.name)}/clear-taint`, { decision: signed.envelope });
  if (now.stale()) return;
  if (answer.status !== 200) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  await loadTools();
  status(byId('keep-tools-result'), `Taint cleared on this device: ${visibleText(tool.name)} uses its egress rules as approved.`);
}

async function revoke(tool, result) {
  const now = signedInNow();
  const answer = await api('POST', `/v1/tools/${encodeURIComponent(tool.name)}/revoke`);
  if (now.stale()) return;
  if (answer.status !== 200) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  await loadTools();
  status(byId('keep-tools-result'), `Revoked ${visibleText(tool.name)}: every version, from the next call on.`);
}

// Journal -----------------------------------------------------------------------------------

async function loadJournal() {
  const stale = staleAfter();
  // An earlier check's result never stands for this one while it runs.
  for (const id of ['keep-chain', 'keep-recheck']) {
    byId(id).textContent = 'Checking…';
    byId(id).className = 'result muted';
  }
  const [list, check] = await Promise.all([api('GET', '/v1/journal'), api('GET', '/v1/journal/verify')]);
  if (stale()) return;
  const chain = byId('keep-chain');
  if (check.status === 200) {
    const c = check.body;
    status(chain, c.intact
      ? `The host checked the whole chain: intact (${c.entries} ${c.entries === 1 ? 'entry is' : 'entries are'} about you).`
      : `The host's check found the chain broken${c.first_bad_seq ? ` at entry ${c.first_bad_seq}` : ''}: ${visibleText(c.reason || '')}`, c.intact);
  } else {
    status(chain, `The chain could not be checked: ${errorText(check)}`, false);
  }
  if (list.status !== 200) {
    fill(byId('keep-journal'), h('li', { class: 'error' }, errorText(list)));
    return;
  }
  const entries = list.body.entries;
  const bad = await recheck(entries);
  if (stale()) return;
  status(byId('keep-recheck'), bad.length === 0
    ? `This browser recomputed the hash of each of the ${entries.length} entries shown, and the links between consecutive ones: all hold.`
    : `This browser found entries that do not hold: ${bad.map((b) => b.why).join('; ')}`, bad.length === 0);
  const badSeqs = new Set(bad.map((b) => b.seq));
  fill(byId('keep-journal'), entries.length === 0
    ? h('li', { class: 'muted' }, 'No entries about you yet.')
    : entries.map((entry) => journalItem(entry, badSeqs.has(entry.seq))));
}

/** Each entry's hash recomputed from its content, and each link between shown neighbours. */
export async function recheck(entries) {
  const bad = [];
  const bySeq = new Map(entries.map((entry) => [entry.seq, entry]));
  for (const entry of entries) {
    const { hash, ...rest } = entry;
    let computed = null;
    try {
      computed = await sha256Hex(canonicalJson(rest));
    } catch (error) {
      bad.push({ seq: entry.seq, why: `entry ${entry.seq} cannot be read (${error.message})` });
      continue;
    }
    if (computed !== hash) bad.push({ seq: entry.seq, why: `entry ${entry.seq}'s hash does not match its content` });
    const before = bySeq.get(entry.seq - 1);
    if (before && before.hash !== entry.prev_hash) bad.push({ seq: entry.seq, why: `entry ${entry.seq} does not follow entry ${before.seq}` });
  }
  return bad;
}

/** One journal entry; `aboutWhom`: say whom it is about (the operator's journal). */
export function journalItem(entry, bad, aboutWhom = false) {
  const action = typeof entry.detail?.action === 'string' ? entry.detail.action : null;
  const about = aboutWhom && entry.user ? `, about ${visibleText(entry.user)}` : '';
  return h('li', { 'data-kind': entry.kind, 'data-action': action, 'data-seq': String(entry.seq), 'data-actor': entry.actor, class: bad ? 'bad' : null },
    h('p', {}, h('strong', {}, `#${entry.seq} ${entry.kind}${action ? `: ${visibleText(action)}` : ''}`), ' ',
      bad ? h('span', { class: 'badge taint' }, 'does not hold') : null, ' ',
      h('span', { class: 'wrap' }, visibleText(entry.subject)),
      h('span', { class: 'muted' }, ` by ${visibleText(entry.actor)}${about}, ${when(entry.at_ms)}`)),
    h('details', {}, h('summary', {}, 'Detail'),
      h('pre', {}, visibleText(JSON.stringify(entry.detail, null, 2))),
      h('p', { class: 'muted wrap mono' }, `hash ${entry.hash}`)));
}

// This device -------------------------------------------------------------------------------

async function loadDevice() {
  const root = byId('keep-device');
  const stale = staleAfter();
  const list = await api('GET', '/v1/devices');
  if (stale()) return;
  const registeredKeys = list.status === 200 ? list.body.devices : [];
  const parts = [];
  if (deviceProblem) {
    parts.push(h('p', { class: 'error', role: 'alert', id: 'keep-device-problem' }, deviceProblem));
  } else if (device && !device.pending) {
    const result = h('p', { class: 'result', role: 'status' });
    parts.push(h('p', { class: 'result ok' }, `This browser is your device “${visibleText(device.label)}”, key ${device.key_id}. Its private key never leaves this browser, and anyone who signs in here with your token can sign with it: retire it before you leave a shared browser.`),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'danger', onclick: act(() => retire(result), result) }, 'Retire this browser as a device')),
      registeredKeys.filter((key) => !key.retired_at_ms).length === 1
        ? h('p', { class: 'muted', id: 'keep-last-device' }, 'It is your only device: retiring it closes the proposals waiting for your decision and ends your conversations, and a new device will need an enrolment code from the operator; whoever enrols it governs your tools, so revoke any you want gone first.')
        : null,
      result,
      approveAnotherForm());
  } else {
    parts.push(enrolForms());
  }
  const signs = device && !device.pending && !deviceProblem;
  const listed = h('p', { class: 'result', role: 'status', id: 'keep-devices-result' });
  parts.push(h('h2', {}, 'Your devices'),
    h('ul', { class: 'plain', id: 'keep-devices' }, registeredKeys.length === 0
      ? h('li', { class: 'muted' }, 'None yet.')
      : registeredKeys.map((key) => h('li', { 'data-key': key.key_id },
        h('span', {}, `${visibleText(key.label || 'unnamed')} `, h('span', { class: 'mono wrap' }, key.key_id),
          key.key_id === device?.key_id ? ' (this browser)' : '',
          key.retired_at_ms ? h('span', { class: 'badge' }, 'retired') : null),
        // Another live device (a lost phone) is retired with a decision this browser signs.
        signs && !key.retired_at_ms && key.key_id !== device.key_id
          ? h('button', {
            type: 'button',
            class: 'secondary',
            'aria-label': `Retire ${visibleText(key.label || 'unnamed')}`,
            onclick: act(() => retireOther(key, listed), listed),
          }, 'Retire')
          : null))),
    listed);
  fill(root, parts);
}

/**
 * Signs, on this browser's key, a `retire_device` decision for `key` (a registered device of
 * the person's: this browser's own or another) and sends it; the host's answer.
 */
async function signRetire(result, key, now) {
  const bytes = devices.publicKeyBytes(key.public_key);
  const signed = await signOrSay(result, {
    kind: 'retire_device',
    subject: key.key_id,
    hashes: { public_key: await sha256Hex(bytes) },
    ceiling_version: 0,
    policy_version: 0,
  }, false, now);
  if (!signed) return null;
  return api('POST', `/v1/devices/${encodeURIComponent(key.key_id)}/retire`, { decision: signed.envelope });
}

/** Retires this browser's key at the host (signed with it) and forgets it here. */
async function retire(result) {
  const now = signedInNow();
  const answer = await signRetire(result, now.device, now);
  if (!answer) return;
  if (answer.status === 200) {
    // The key retired is the one that clicked's, whoever is signed in now.
    await devices.forgetDevice(now.user);
  }
  if (now.stale()) return;
  if (answer.status !== 200) {
    status(result, `Not retired: ${errorText(answer)}`, false);
    return;
  }
  device = null;
  keyMaking = null;
  await loadDevice();
  status(byId('keep-device-result'), 'Retired: this browser signs nothing from now on, and its key is gone.');
}

/** Retires another of the person's devices (a lost phone), signed on this browser. */
async function retireOther(key, result) {
  const now = signedInNow();
  const answer = await signRetire(result, key, now);
  if (!answer || now.stale()) return;
  if (answer.status !== 200) {
    status(result, `Not retired: ${errorText(answer)}`, false);
    return;
  }
  await loadDevice();
  status(byId('keep-device-result'), `Retired “${visibleText(key.label || 'unnamed')}”: it signs nothing from now on.`);
}

function enrolForms() {
  const result = h('p', { class: 'result', role: 'status', id: 'keep-enrol-result' });
  const label = h('input', { id: 'device-label', value: 'this browser', maxlength: '64' });
  const code = h('input', { id: 'enrol-code', autocomplete: 'off' });
  const pasted = h('textarea', { id: 'enrol-decision', rows: '4' });
  const keyShown = h('p', { class: 'mono wrap', id: 'keep-new-key' }, device ? `Public key: ${device.public_key}` : '');
  const withCode = act(() => enrol(label.value.trim(), { enrol_code: code.value.trim() }, result), result);
  const withDecision = act(async () => {
    let decision;
    try {
      decision = JSON.parse(pasted.value);
    } catch {
      status(result, 'The pasted decision is not JSON.', false);
      return;
    }
    await enrol(label.value.trim(), { decision }, result);
  }, result);
  const makeKey = act(async () => {
    await ensureKey(label.value.trim());
    keyShown.textContent = `Public key: ${device.public_key}`;
  }, result);
  return h('div', {},
    h('p', {}, 'To sign decisions here, enrol this browser as one of your devices. It makes an Ed25519 key whose private half cannot be read back, even by this page.'),
    h('label', { for: 'device-label' }, 'A name for this device'), label,
    h('form', { class: 'card', onsubmit: withCode, 'aria-labelledby': 'enrol-code-heading' },
      h('h2', { id: 'enrol-code-heading' }, 'With an enrolment code'),
      h('p', { class: 'muted' }, 'For your first device: the operator gives you a one-time code.'),
      h('label', { for: 'enrol-code' }, 'Enrolment code'), code,
      h('button', { type: 'submit' }, 'Enrol this browser')),
    h('form', { class: 'card', onsubmit: withDecision, 'aria-labelledby': 'enrol-decision-heading' },
      h('h2', { id: 'enrol-decision-heading' }, 'Approved from one of your devices'),
      h('p', { class: 'muted' }, 'Give this public key to a device you already have; paste the decision it signs below.'),
      h('button', { type: 'button', class: 'secondary', onclick: makeKey }, 'Show this browser’s public key'),
      keyShown,
      h('label', { for: 'enrol-decision' }, 'The signed decision'), pasted,
      h('button', { type: 'submit' }, 'Enrol with the decision')),
    result);
}

/** The key being made, so two quick clicks make one key. */
let keyMaking = null;

async function ensureKey(label) {
  if (device) return device;
  const user = me.user;
  keyMaking ??= devices.createDevice(user, label || 'this browser');
  const record = await keyMaking;
  if (me?.user === user) device = { ...record, pending: true };
  return record;
}

async function enrol(label, proof, result) {
  const now = signedInNow();
  try {
    const record = await ensureKey(label);
    if (now.stale()) return;
    const body = {
      public_key: record.public_key,
      label: label || record.label,
      possession: await devices.possession(record, now.user),
      ...proof,
    };
    const answer = await api('POST', '/v1/devices', body);
    if (now.stale()) return;
    if (answer.status !== 201) {
      status(result, `Not enrolled: ${errorText(answer)}`, false);
      return;
    }
    device = { ...record, label: answer.body.label, pending: false };
    await loadDevice();
    status(byId('keep-device-result'), `Enrolled: this browser signs as key ${device.key_id}.`);
  } catch (error) {
    if (error instanceof Unauthorized) throw error;
    status(result, `Not enrolled: ${error.message}`, false);
  }
}

function approveAnotherForm() {
  const result = h('p', { class: 'result', role: 'status', id: 'keep-other-result' });
  const key = h('input', { id: 'other-key', autocomplete: 'off' });
  const out = h('textarea', { id: 'other-decision', rows: '5', readonly: true });
  const submit = act(async () => {
    const now = signedInNow();
    try {
      const bytes = devices.publicKeyBytes(key.value);
      const ceiling = await api('GET', `/v1/ceilings/${encodeURIComponent(now.user)}`);
      if (ceiling.status !== 200) throw new Error(errorText(ceiling));
      const signed = await signOrSay(result, {
        kind: 'enrol_device',
        subject: await devices.keyId(bytes),
        hashes: { public_key: await sha256Hex(bytes) },
        ceiling_version: ceiling.body.ceiling.version,
        policy_version: 0,
      }, false, now);
      if (!signed) return;
      out.value = JSON.stringify(signed.envelope);
      status(result, 'Signed: paste this decision into the new device within five minutes.');
    } catch (error) {
      if (error instanceof Unauthorized) throw error;
      status(result, error.message, false);
    }
  }, result);
  return h('form', { class: 'card', onsubmit: submit, 'aria-labelledby': 'approve-other-heading' },
    h('h2', { id: 'approve-other-heading' }, 'Approve another device'),
    h('label', { for: 'other-key' }, 'The new device’s public key (64 hexadecimal characters)'), key,
    h('button', { type: 'submit' }, 'Sign its enrolment'),
    h('label', { for: 'other-decision' }, 'The decision to paste into it'), out,
    result);
}

// The operator's console on a Keep host (docs/keep/console.md), shown beside the assistant when
// the operator's token signs in: people (add, tokens, enrolment codes, revoke), agents (what is
// in force, what is refused and why, a pack signed offline deployed by uploading it), ceilings
// per person (uploaded signed), every person's tools (revoke any), the journal (filtered,
// checked) and the host's settings, read only. The console decides nothing for a person: no
// view here approves a tool, a use of the network or a proposal, and every action is the
// operator's own, journaled as the operator's. Signing keys never come to the page.

import { api, errorText, sendText } from './api.js';
import { byId, fill, h, markCurrent } from './dom.js';
import { act, journalItem, recheck, status, visibleText, when } from './keep.js';
import { reachInWords } from './keep-talk.js';

/** The kinds of journal entries (GET /v1/journal?kind=). */
const JOURNAL_KINDS = ['trust_root', 'deploy', 'ceiling', 'token', 'enrol_code', 'device', 'vault',
  'host', 'config', 'session', 'proposal', 'tool', 'egress', 'refusal'];
/** Enrolment code lifetimes offered, in seconds, with their names. */
const CODE_LIFETIMES = [[900, '15 minutes'], [3600, '1 hour'], [86400, '1 day'], [604800, '7 days']];
/** The largest signed pack the host takes (its deploy body), in bytes. */
const PACK_BYTES_MAX = 24 << 20;
/** The largest signed ceiling file read here, in bytes. */
const CEILING_BYTES_MAX = 256 << 10;

const VIEWS = {
  people: 'console-people-view',
  agents: 'console-agents-view',
  ceilings: 'console-ceilings-view',
  tools: 'console-tools-view',
  journal: 'console-journal-view',
  host: 'console-host-view',
};
const NAV = {
  people: 'nav-console-people',
  agents: 'nav-console-agents',
  ceilings: 'nav-console-ceilings',
  tools: 'nav-console-tools',
  journal: 'nav-console-journal',
  host: 'nav-console-host',
};
const LOADERS = {
  people: loadPeople,
  agents: loadAgents,
  ceilings: loadCeilings,
  tools: loadTools,
  journal: () => loadJournal(false),
  host: loadHost,
};

/** Bumped at each sign-in and sign-out: an answer to a request made before is dropped. */
let epoch = 0;
/** The journal's filter as last applied, and the oldest entry shown (for the next page). */
let journalFilter = { user: '', kind: '' };
let journalOldest = null;

function staleAfter() {
  const at = epoch;
  return () => at !== epoch;
}

/** The operator signed in on a Keep host: the console's links show. */
export function startConsole() {
  epoch += 1;
  document.body.classList.add('keep-operator');
  byId('console-journal-form').onsubmit = act(() => applyJournalFilter(), byId('console-journal-result'));
  byId('console-journal-more').onclick = act(() => loadJournal(true), byId('console-journal-result'));
  byId('console-add-form').onsubmit = act(() => addPerson(), byId('console-add-result'));
  byId('console-deploy-form').onsubmit = act(() => deployPack(), byId('console-deploy-result'));
  const lifetimes = byId('console-add-ttl');
  fill(lifetimes, CODE_LIFETIMES.map(([seconds, name]) => h('option', { value: String(seconds) }, name)));
  fill(byId('console-journal-kind'), h('option', { value: '' }, 'Every kind'),
    JOURNAL_KINDS.map((kind) => h('option', { value: kind }, kind)));
}

/** Signed out: everything the console showed is forgotten. */
export function stopConsole() {
  epoch += 1;
  journalFilter = { user: '', kind: '' };
  journalOldest = null;
  document.body.classList.remove('keep-operator', 'console-shown');
  for (const id of ['console-people', 'console-added', 'console-agents', 'console-ceilings', 'console-tools', 'console-journal', 'console-host']) fill(byId(id));
  for (const id of ['console-people-result', 'console-add-result', 'console-deploy-result', 'console-agents-result',
    'console-ceilings-result', 'console-tools-result', 'console-journal-result', 'console-chain', 'console-recheck', 'console-host-result']) byId(id).textContent = '';
  for (const id of ['console-add-user', 'console-journal-user']) byId(id).value = '';
  byId('console-deploy-file').value = '';
}

/** The assistant's view shows: its sessions column comes back. */
export function leaveConsole() {
  document.body.classList.remove('console-shown');
}

/** Whether `hash` names a console view (`console/people`, …). */
export function isConsoleHash(hash) {
  return hash === 'console' || hash.startsWith('console/');
}

/** The console view `hash` names, loaded; `others` are the assistant's links, unmarked. */
export async function routeConsole(hash, showView, others) {
  document.body.classList.add('console-shown');
  const [, name = 'people'] = hash.split('/');
  const current = VIEWS[name] ? name : 'people';
  showView(VIEWS[current]);
  markCurrent([...others, ...Object.values(NAV)], NAV[current]);
  await LOADERS[current]();
}

/** The console's views, for the page's list of views. */
export const CONSOLE_VIEWS = Object.values(VIEWS);

/** The console's links, for the page to unmark when it shows another view. */
export const CONSOLE_LINKS = Object.values(NAV);

/**
 * `GET path`'s body, the view's result line `resultId` cleared; null when it cannot be read
 * (said in that line).
 */
async function read(path, resultId) {
  const answer = await api('GET', path);
  if (answer.status !== 200) {
    status(byId(resultId), errorText(answer), false);
    return null;
  }
  byId(resultId).textContent = '';
  return answer.body;
}

function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

// People ------------------------------------------------------------------------------------

async function loadPeople() {
  const stale = staleAfter();
  const body = await read('/v1/people', 'console-people-result');
  if (!body || stale()) return;
  const { people } = body;
  fill(byId('console-people'), people.length === 0
    ? h('li', { class: 'muted' }, 'Nobody yet: add a person above.')
    : people.map(personItem));
}

function counts(person) {
  return `${plural(person.tokens, 'token')} working, ${person.tokens_revoked} revoked; `
    + `${plural(person.devices, 'device')}; ${plural(person.tools, 'tool')} in force; `
    + `${plural(person.live_sessions, 'conversation')} running here; since ${when(person.since_ms)}`;
}

function personItem(person) {
  const name = visibleText(person.user);
  const result = h('p', { class: 'result', role: 'status' });
  const shownOnce = h('div', { class: 'shown-once' });
  const tokens = h('ul', { class: 'plain tokens' });
  const details = h('details', {
    ontoggle: (event) => { if (event.currentTarget.open) act(() => loadTokens(person.user, tokens, result), result)(); },
  }, h('summary', {}, `${name}'s devices and tokens`), tokens);
  const revokeBox = h('input', { type: 'checkbox', id: `console-revoke-${person.user}` });
  return h('li', { class: 'card person', 'data-user': person.user },
    h('h2', {}, name),
    h('p', { class: 'muted' }, counts(person)),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: act(() => newCode(person.user, shownOnce, result), result) }, `New enrolment code for ${name}`),
      h('button', { type: 'button', class: 'secondary', onclick: act(() => newToken(person.user, shownOnce, result), result) }, `New token for ${name}`)),
    shownOnce,
    details,
    h('div', { class: 'decide revoke-person' },
      h('p', {}, `Revoking ${name}: ${revokeConsequences(person)} Her conversations, proposals and journal entries stay.`),
      h('p', { class: 'confirm' }, revokeBox, h('label', { for: `console-revoke-${person.user}` }, `I want ${name} revoked`)),
      h('button', { type: 'button', class: 'danger', onclick: act(() => revokePerson(person, revokeBox, result), result) }, `Revoke ${name}`)),
    result);
}

/** `n` things, with the verb that agrees: `some(2, 'token', 'stop', 'stops')` → "2 tokens stop". */
function some(n, one, verbs, verb) {
  if (n === 0) return `no ${one} ${verb}`;
  return n === 1 ? `1 ${one} ${verb}` : `${n} ${one}s ${verbs}`;
}

/** What revoking `person` does, in the order the host does it. */
function revokeConsequences(person) {
  return `her ${some(person.tokens, 'working token', 'stop working at once', 'stops working at once')}, and her open pages are signed out; `
    + 'her enrolment codes not used yet are voided; '
    + `${some(person.live_sessions, 'conversation', 'running here stop', 'running here stops')} (and any on other hosts of the database end); `
    + 'her proposals still waiting for a decision are closed, so no device enrolled later decides them; '
    + `${some(person.tools, 'tool', 'are revoked', 'is revoked')}; `
    + `${person.devices === 0 ? 'she has no device to retire' : some(person.devices, 'device', 'are retired and sign nothing more', 'is retired and signs nothing more')}.`;
}

async function loadTokens(user, list, result) {
  const stale = staleAfter();
  const answer = await api('GET', `/v1/people/${encodeURIComponent(user)}`);
  if (stale()) return;
  if (answer.status !== 200) {
    status(result, errorText(answer), false);
    return;
  }
  const devices = answer.body.devices.map((device) => h('li', {},
    h('span', {}, `Device “${visibleText(device.label || device.key_id)}”`),
    h('span', { class: 'muted' }, device.retired_at_ms ? `retired ${when(device.retired_at_ms)}` : `enrolled ${when(device.created_at_ms)}`)));
  fill(list, devices, answer.body.tokens.map((item) => h('li', {},
    h('span', { class: 'mono wrap' }, item.id),
    h('span', { class: 'muted' }, item.revoked_at_ms ? `revoked ${when(item.revoked_at_ms)}` : `made ${when(item.created_at_ms)}`),
    item.revoked_at_ms ? null : h('button', {
      type: 'button', class: 'secondary small',
      onclick: act(() => revokeToken(user, item.id, list, result), result),
    }, `Revoke token ${item.id}`))));
}

async function revokeToken(user, id, list, result) {
  const answer = await api('DELETE', `/v1/tokens/${encodeURIComponent(id)}`);
  if (answer.status !== 200) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  status(result, `Token ${id} revoked: it stopped working at once.`);
  await loadTokens(user, list, result);
}

/** A secret shown once: what it is for, and the text to copy. */
function secret(label, value, use) {
  return h('div', { class: 'notice secret' },
    h('p', {}, h('strong', {}, label), ' (shown once, never again: give it by a channel you trust)'),
    h('p', { class: 'mono wrap copy' }, value),
    h('p', { class: 'muted' }, use));
}

async function newCode(user, shownOnce, result) {
  const answer = await api('POST', '/v1/enrol-codes', { user });
  if (answer.status !== 201) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  fill(shownOnce, secret(`${visibleText(user)}'s enrolment code`, answer.body.code,
    `It enrols one device on her Device view, within ${Math.round(answer.body.expires_in_s / 60)} minutes.`));
  status(result, 'Enrolment code made.');
}

async function newToken(user, shownOnce, result) {
  const answer = await api('POST', '/v1/tokens', { user });
  if (answer.status !== 201) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  fill(shownOnce, secret(`${visibleText(user)}'s new token`, answer.body.token,
    'Whoever holds it acts as her: give it to her alone. Her other tokens keep working.'));
  status(result, `Token ${answer.body.id} made.`);
}

async function addPerson() {
  const user = byId('console-add-user').value.trim();
  const ttl = Number(byId('console-add-ttl').value);
  const result = byId('console-add-result');
  const answer = await api('POST', '/v1/people', { user, enrol_code_ttl_s: ttl });
  if (answer.status !== 201) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  const added = answer.body;
  byId('console-add-user').value = '';
  status(result, `Added ${visibleText(added.user)}.`);
  fill(byId('console-added'),
    secret(`${visibleText(added.user)}'s token`, added.token, 'It signs her in on this page; whoever holds it acts as her, so give it to her alone.'),
    secret(`${visibleText(added.user)}'s enrolment code`, added.enrol_code,
      `It makes her browser one of her devices (her Device view), within ${Math.round(added.enrol_code_expires_in_s / 60)} minutes.`));
  await loadPeople();
}

async function revokePerson(person, box, result) {
  if (!box.checked) {
    status(result, `Tick “I want ${visibleText(person.user)} revoked” first.`, false);
    return;
  }
  const answer = await api('DELETE', `/v1/people/${encodeURIComponent(person.user)}`);
  if (answer.status !== 200) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  const done = answer.body;
  await loadPeople();
  status(byId('console-people-result'), `Revoked ${visibleText(done.user)}: ${plural(done.tokens_revoked.length, 'token')}, `
    + `${plural(done.enrol_codes_voided, 'enrolment code')}, ${plural(done.sessions_stopped, 'conversation')} stopped, `
    + `${plural(done.proposals_closed, 'proposal')} closed, `
    + `${plural(done.tools_revoked.length, 'tool')}, ${plural(done.devices_retired.length, 'device')} retired. Each step is in the journal as yours.`);
}

// Agents ------------------------------------------------------------------------------------

async function loadAgents() {
  const stale = staleAfter();
  const body = await read('/v1/agents', 'console-agents-result');
  if (!body || stale()) return;
  const reach = new Map(body.agents.map((agent) => [agent.name, agent.reach]));
  const deployed = body.deployed || [];
  fill(byId('console-agents'), deployed.length === 0
    ? h('li', { class: 'muted' }, 'No agent is deployed yet: upload a signed pack above, or run imurun keep deploy.')
    : deployed.map((agent) => agentItem(agent, reach.get(agent.name))));
}

function agentItem(agent, reach) {
  const refused = typeof agent.refused === 'string';
  return h('li', { class: 'card agent', 'data-agent': agent.name },
    h('h2', {}, `${visibleText(agent.name)} `, h('span', { class: 'muted' }, `version ${agent.version}`), ' ',
      h('span', { class: refused ? 'badge taint' : 'badge' }, refused ? 'refused' : 'in force')),
    refused ? h('p', { class: 'error' }, `Not in force: ${visibleText(agent.refused || 'its row does not hold')}`) : null,
    h('dl', { class: 'facts' },
      h('div', {}, h('dt', {}, 'Deployed'), h('dd', {}, `${when(agent.deployed_at_ms)} by ${visibleText(agent.owner)}`)),
      h('div', {}, h('dt', {}, 'Bundle'), h('dd', { class: 'mono wrap' }, `${agent.bundle_size} bytes, SHA-256 ${agent.bundle_sha256}`)),
      h('div', {}, h('dt', {}, 'Signed by'), h('dd', { class: 'mono wrap' },
        `bundle ${visibleText(agent.signer_key_id || 'not read')}, policy ${visibleText(agent.policy_key_id || 'not read')}`))),
    refused ? null : h('h3', {}, 'What it may reach'),
    refused ? null : h('ul', { class: 'reach' }, reachInWords(reach, true).map((line) => h('li', {}, line))));
}

/** Reads the file chosen in `input` as text, refusing one over `max` bytes. */
async function chosenText(input, max, what) {
  const file = input.files?.[0];
  if (!file) throw new Error(`choose ${what} first`);
  if (file.size > max) throw new Error(`${file.name} is ${file.size} bytes; ${what} is at most ${max}`);
  return { name: file.name, text: await file.text() };
}

async function deployPack() {
  const result = byId('console-deploy-result');
  let chosen;
  try {
    chosen = await chosenText(byId('console-deploy-file'), PACK_BYTES_MAX, 'a signed pack file');
  } catch (error) {
    status(result, error.message, false);
    return;
  }
  const answer = await sendText('POST', '/v1/agents', chosen.text);
  if (answer.status !== 201) {
    status(result, `${visibleText(chosen.name)} was refused: ${errorText(answer)}`, false);
    return;
  }
  byId('console-deploy-file').value = '';
  status(result, `Deployed ${visibleText(answer.body.name)} version ${answer.body.version} from ${visibleText(chosen.name)}.`);
  await loadAgents();
}

// Ceilings ----------------------------------------------------------------------------------

async function loadCeilings() {
  const stale = staleAfter();
  const read = await perPerson('console-ceilings-result', (user) => `/v1/ceilings/${encodeURIComponent(user)}`);
  if (!read || stale()) return;
  fill(byId('console-ceilings'), read.people.length === 0
    ? h('li', { class: 'muted' }, 'Nobody yet: add a person in People.')
    : read.people.map((person, index) => ceilingItem(person.user, read.answers[index])));
}

/** Requests of one person's detail at once, at most. */
const PER_PERSON_AT_ONCE = 8;

/**
 * Everyone (`GET /v1/people`) and, for each in order, the answer to `GET pathOf(user)`, a few
 * at a time; null when the list cannot be read (said in `resultId`).
 */
async function perPerson(resultId, pathOf) {
  const listed = await read('/v1/people', resultId);
  if (!listed) return null;
  const { people } = listed;
  const answers = new Array(people.length);
  let next = 0;
  const worker = async () => {
    while (next < people.length) {
      const index = next;
      next += 1;
      answers[index] = await api('GET', pathOf(people[index].user));
    }
  };
  await Promise.all(Array.from({ length: Math.min(PER_PERSON_AT_ONCE, people.length) }, worker));
  return { people, answers };
}

function ceilingItem(user, answer) {
  const name = visibleText(user);
  const result = h('p', { class: 'result', role: 'status' });
  const input = h('input', { type: 'file', accept: '.json,application/json', id: `console-ceiling-file-${user}` });
  const ceiling = answer.status === 200 ? answer.body.ceiling : null;
  const state = !ceiling
    ? `Cannot be read: ${errorText(answer)}`
    : answer.body.empty_because
      ? `The empty ceiling applies (${visibleText(answer.body.empty_because)}): her tools may reach nothing.`
      : `Version ${ceiling.version} in force, until ${when((ceiling.expires_at || 0) * 1000)}.`;
  return h('li', { class: 'card ceiling', 'data-user': user },
    h('h2', {}, name),
    h('p', {}, state),
    ceiling ? h('details', {}, h('summary', {}, answer.body.empty_because ? 'The empty ceiling' : 'The ceiling in force'),
      h('pre', {}, visibleText(JSON.stringify(ceiling, null, 2)))) : null,
    h('form', { class: 'upload', onsubmit: act(() => uploadCeiling(user, input, result), result) },
      h('label', { for: `console-ceiling-file-${user}` }, `A signed ceiling for ${name}`),
      input,
      h('button', { type: 'submit' }, `Put it in force for ${name}`)),
    result);
}

async function uploadCeiling(user, input, result) {
  let chosen;
  try {
    chosen = await chosenText(input, CEILING_BYTES_MAX, 'a signed ceiling file');
  } catch (error) {
    status(result, error.message, false);
    return;
  }
  const answer = await sendText('PUT', `/v1/ceilings/${encodeURIComponent(user)}`, chosen.text);
  if (answer.status !== 200) {
    status(result, `${visibleText(chosen.name)} was refused: ${errorText(answer)}`, false);
    return;
  }
  await loadCeilings();
  status(byId('console-ceilings-result'), `${visibleText(user)}'s ceiling version ${answer.body.ceiling.version} is in force.`);
}

// Tools -------------------------------------------------------------------------------------

async function loadTools() {
  const stale = staleAfter();
  const read = await perPerson('console-tools-result', (user) => `/v1/people/${encodeURIComponent(user)}`);
  if (!read || stale()) return;
  const found = read.answers.filter((answer) => answer.status === 200).map((answer) => answer.body);
  const labels = new Map(found.flatMap((person) => person.devices.map((device) => [device.key_id, device.label])));
  const tools = found.flatMap((person) => person.tools);
  fill(byId('console-tools'), tools.length === 0
    ? h('li', { class: 'muted' }, 'No person has a tool yet.')
    : tools.map((tool) => toolItem(tool, labels.get(tool.approved_by))));
}

function toolItem(tool, deviceLabel) {
  const result = h('p', { class: 'result', role: 'status' });
  const revoked = Boolean(tool.revoked_at_ms);
  return h('li', { class: 'card tool', 'data-tool': tool.qualified_name },
    h('h2', {}, `${visibleText(tool.qualified_name)} `, h('span', { class: 'muted' }, `version ${tool.version}`), ' ',
      h('span', { class: revoked ? 'badge state-revoked' : 'badge' }, revoked ? 'revoked' : 'in force'),
      tool.tainted ? h('span', { class: 'badge taint' }, ' tainted') : null),
    h('p', { class: 'muted' }, `Approved on her device “${visibleText(deviceLabel || tool.approved_by)}”, deployed ${when(tool.deployed_at_ms)}; `
      + `its network use: ${tool.egress_mode === 'ask' ? 'asks her each time' : visibleText(tool.egress_mode)}.`),
    revoked
      ? h('p', { class: 'muted' }, `Revoked ${when(tool.revoked_at_ms)}.`)
      : h('div', { class: 'actions' }, h('button', {
        type: 'button', class: 'danger', onclick: act(() => revokeTool(tool, result), result),
      }, `Revoke ${visibleText(tool.qualified_name)}`)),
    result);
}

async function revokeTool(tool, result) {
  const answer = await api('POST', `/v1/tools/${encodeURIComponent(tool.qualified_name)}/revoke`);
  if (answer.status !== 200) {
    status(result, `Refused: ${errorText(answer)}`, false);
    return;
  }
  await loadTools();
  status(byId('console-tools-result'), `Revoked ${visibleText(tool.qualified_name)}: every version, from its next call on. Its person sees it, and the journal has it as yours.`);
}

// Journal -----------------------------------------------------------------------------------

async function applyJournalFilter() {
  journalFilter = { user: byId('console-journal-user').value.trim(), kind: byId('console-journal-kind').value };
  await loadJournal(false);
}

/** The journal as filtered; `more`: the next older page, added below. */
async function loadJournal(more) {
  const stale = staleAfter();
  const params = new URLSearchParams();
  if (journalFilter.user) params.set('user', journalFilter.user);
  if (journalFilter.kind) params.set('kind', journalFilter.kind);
  const filterQuery = params.toString();
  if (more && journalOldest !== null) params.set('before', String(journalOldest));
  const query = params.toString();
  if (!more) {
    byId('console-journal').setAttribute('aria-busy', 'true');
    for (const id of ['console-chain', 'console-recheck']) {
      byId(id).textContent = 'Checking…';
      byId(id).className = 'result muted';
    }
  }
  const [list, check] = await Promise.all([
    api('GET', `/v1/journal${query ? `?${query}` : ''}`),
    more ? null : api('GET', '/v1/journal/verify'),
  ]);
  if (stale()) return;
  if (check) {
    status(byId('console-chain'), check.status !== 200
      ? `The chain could not be checked: ${errorText(check)}`
      : check.body.intact
        ? `The host checked the whole chain: intact (${plural(check.body.entries, 'entry', 'entries')}).`
        : `The host's check found the chain broken at entry ${check.body.first_bad_seq}: ${visibleText(check.body.reason || '')}`,
    check.status === 200 && check.body.intact);
  }
  const result = byId('console-journal-result');
  if (list.status !== 200) {
    byId('console-journal').setAttribute('aria-busy', 'false');
    status(result, errorText(list), false);
    return;
  }
  result.textContent = '';
  const entries = list.body.entries;
  const bad = await recheck(entries);
  if (stale()) return;
  if (!more) {
    status(byId('console-recheck'), bad.length === 0
      ? `This browser recomputed the hash of each of the ${entries.length} entries shown: all hold.`
      : `This browser found entries that do not hold: ${bad.map((b) => b.why).join('; ')}`, bad.length === 0);
  }
  const badSeqs = new Set(bad.map((b) => b.seq));
  const items = entries.map((entry) => journalItem(entry, badSeqs.has(entry.seq), true));
  if (more) byId('console-journal').append(...items);
  else fill(byId('console-journal'), items.length ? items : h('li', { class: 'muted' }, 'No entry matches.'));
  if (entries.length) journalOldest = entries[entries.length - 1].seq;
  byId('console-journal-more').hidden = entries.length < 1000;
  // What the list shows, for whoever waits on it: the filter's query, and no longer busy.
  byId('console-journal').dataset.query = filterQuery;
  byId('console-journal').setAttribute('aria-busy', 'false');
}

// Host --------------------------------------------------------------------------------------

async function loadHost() {
  const stale = staleAfter();
  const [s, model] = await Promise.all([read('/v1/settings', 'console-host-result'), api('GET', '/api/model')]);
  if (!s || stale()) return;
  const ports = s.egress_loopback_ports.length ? s.egress_loopback_ports.join(', ') : 'none';
  const fact = (name, value) => h('div', {}, h('dt', {}, name), h('dd', {}, value));
  const m = model.body || {};
  const modelName = model.status !== 200 ? errorText(model)
    : m.status === 'ready' ? `${visibleText(m.name || '')}${m.context_limit ? `, a context of ${m.context_limit} tokens` : ''}`
      : m.status === 'failed' ? `failed to load: ${visibleText(m.message || '')}` : visibleText(m.status);
  fill(byId('console-host'), h('dl', { class: 'facts' },
    fact('Host name', visibleText(s.host_id)),
    fact('Database', s.database === 'postgresql' ? 'PostgreSQL (hosts may share it)' : 'SQLite (this host alone)'),
    fact('Agents run here', s.cells ? 'yes, each in its own cell' : 'no'),
    fact('Loopback ports opened to cells', ports),
    fact('Agents may propose tools', s.tool_propose.enabled ? 'yes' : `no${s.tool_propose.refused ? ` (${visibleText(s.tool_propose.refused)})` : ''}`),
    fact('Model', modelName)));
}

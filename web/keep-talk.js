// A person's agents and conversations on a Keep host (docs/keep/page.md): the agents in force
// with what each may reach in words, her conversations newest first, and one conversation —
// her messages and the agent's replies, and what it proposed or asked of the network where it
// happened, each decided in place. Everything an agent wrote is shown as text.

import { api, errorText } from './api.js';
import { byId, fill, h } from './dom.js';
import {
  act, approvalItem, otherProposalItem, reconcile, status, taintBadge, toolProposalItem,
  visibleText, when, whileSignedIn,
} from './keep.js';

/** The live sessions a person may have at once (docs/keep/sessions.md). */
const LIVE_MAX = 4;
/** The longest message, in bytes; a longer text goes as a file. */
const MESSAGE_BYTES_MAX = 64 << 10;
/** The longest file, in bytes of text. */
const FILE_BYTES_MAX = 128 << 10;

/** The session shown in the conversation view, if any. */
let shown = null;
/** Messages being answered, by session id: the conversation says "working". */
const working = new Set();

export function forgetTalk() {
  shown = null;
  working.clear();
  for (const id of ['keep-agents', 'keep-conversations', 'keep-conversation', 'keep-talk-composer']) fill(byId(id));
  for (const id of ['keep-agents-result', 'keep-conversations-result', 'keep-talk-title', 'keep-talk-state', 'keep-talk-result']) byId(id).textContent = '';
}

/** The session the conversation view shows. */
export function shownSession() {
  return shown;
}

// Agents ------------------------------------------------------------------------------------

export async function loadAgents() {
  const stale = whileSignedIn();
  const [agents, sessions] = await Promise.all([api('GET', '/v1/agents'), api('GET', '/v1/sessions')]);
  if (stale()) return;
  if (agents.status !== 200) {
    status(byId('keep-agents-result'), errorText(agents), false);
    return;
  }
  const live = sessions.status === 200 ? sessions.body.sessions.filter((session) => session.live).length : 0;
  byId('keep-agents-result').textContent = live >= LIVE_MAX
    ? `You have ${live} conversations running, the most at once: stop one in Conversations to start another.`
    : '';
  reconcile(byId('keep-agents'), agents.body.agents.length === 0
    ? [['empty', () => h('li', { class: 'muted' }, 'No agent is deployed on this host yet.')]]
    : agents.body.agents.map((agent) => [`${agent.name}@${agent.version}`, () => agentItem(agent)]));
}

function agentItem(agent) {
  const result = h('p', { class: 'result', role: 'status' });
  return h('li', { class: 'card agent' },
    h('h2', {}, `${visibleText(agent.name)} `, h('span', { class: 'muted' }, `version ${agent.version}`)),
    agent.description ? h('p', { class: 'text' }, visibleText(agent.description)) : null,
    h('h3', {}, 'What it may reach'),
    h('ul', { class: 'reach' }, reachInWords(agent.reach).map((line) => h('li', {}, line))),
    h('div', { class: 'actions' },
      h('button', { type: 'button', onclick: act(() => startConversation(agent.name, result), result) }, `Talk to ${visibleText(agent.name)}`)),
    result);
}

/**
 * What a manifest grants, one sentence per kind of reach, said to the person who talks to it;
 * `operator`: said of its people, for the operator's console.
 */
export function reachInWords(reach, operator = false) {
  if (!reach) return ['Not said by the host.'];
  const you = operator ? 'its person' : 'you';
  const your = operator ? "Its person's" : 'Your';
  const lines = [];
  const rules = reach.egress || [];
  if (reach.egress_mode === 'deny' || rules.length === 0) {
    lines.push('The network: nothing outside its cell.');
  } else {
    const how = reach.egress_mode === 'ask' ? `asking ${you} before each request` : `without asking ${you}`;
    lines.push(`The network, ${how}: ${rules.map(ruleInWords).join('; ')}.`);
  }
  lines.push(reach.credentials?.length
    ? `Credentials the host adds for it: ${reach.credentials.map(visibleText).join(', ')} (by name; it never sees their values).`
    : 'No credentials.');
  const accepted = operator ? 'the entries its person accepted from it' : 'the entries you accepted from it';
  lines.push({
    none: `${your} memory: none of it.`,
    read: `${your} memory: it reads ${accepted}.`,
    write: `${your} memory: it reads ${accepted} and proposes new ones.`,
  }[reach.memory] || `${your} memory: ${visibleText(reach.memory)}.`);
  lines.push(reach.model_socket ? "The host's model: it may ask it." : "The host's model: no.");
  if (reach.card) lines.push(`It may show ${you} cards (display only).`);
  const limits = reach.resources || {};
  lines.push(`Per message: at most ${limits.memory_mb} MiB of memory, ${seconds(limits.cpu_ms)} of CPU and ${seconds(limits.timeout_ms)} in all.`);
  return lines;
}

function ruleInWords(rule) {
  const port = (rule.scheme === 'https' && rule.port === 443) || (rule.scheme === 'http' && rule.port === 80) ? '' : `:${rule.port}`;
  const path = rule.path_prefix && rule.path_prefix !== '/' ? ` (paths under ${visibleText(rule.path_prefix)})` : '';
  return `${(rule.methods || []).join(', ')} ${rule.scheme}://${visibleText(rule.host)}${port}/${path}`;
}

function seconds(ms) {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

async function startConversation(agent, result) {
  const stale = whileSignedIn();
  const answer = await api('POST', '/v1/sessions', { agent });
  if (stale()) return;
  if (answer.status === 201) {
    location.hash = `#keep/conversation/${encodeURIComponent(answer.body.id)}`;
    return;
  }
  const full = answer.status === 409 && answer.body?.error?.code === 'conflict';
  status(result, full
    ? `You have ${LIVE_MAX} conversations running, the most at once: stop one in Conversations, then start this one.`
    : errorText(answer), false);
}

// Conversations -----------------------------------------------------------------------------

export async function loadConversations() {
  const stale = whileSignedIn();
  const answer = await api('GET', '/v1/sessions');
  if (stale()) return;
  const result = byId('keep-conversations-result');
  if (answer.status !== 200) {
    status(result, errorText(answer), false);
    return;
  }
  const sessions = answer.body.sessions;
  const live = sessions.filter((session) => session.live).length;
  result.className = 'muted';
  result.textContent = `${live} of ${LIVE_MAX} running at once.`;
  reconcile(byId('keep-conversations'), sessions.length === 0
    ? [['empty', () => h('li', { class: 'muted' }, 'No conversation yet: start one from Agents.')]]
    : sessions.map((session) => [`${session.id}:${session.live}:${session.end_reason}:${session.tainted}`, () => conversationItem(session)]));
}

function conversationItem(session) {
  const result = h('p', { class: 'result', role: 'status' });
  return h('li', { class: 'conversation-item', 'data-id': session.id },
    h('div', {},
      h('a', { href: `#keep/conversation/${encodeURIComponent(session.id)}` }, visibleText(session.title)),
      ' ', taintBadge(session.tainted),
      h('p', { class: 'muted' }, `${visibleText(session.agent)} version ${session.agent_version}, ${when(session.created_at_ms)}; ${stateInWords(session)}`)),
    h('div', { class: 'actions' },
      session.live ? h('button', { type: 'button', class: 'secondary', onclick: act(() => stop(session.id, result), result) }, 'Stop') : null,
      h('button', { type: 'button', class: 'secondary', onclick: act(() => remove(session, result), result) }, 'Delete')),
    result);
}

const END_REASONS = {
  stopped: 'stopped',
  host_restarted: 'the host restarted (a running agent does not survive a restart)',
  cpu_limit: 'it ran past its CPU limit',
  memory_limit: 'it ran past its memory limit',
  timeout: 'it ran past its time limit',
  trap: 'the agent crashed',
  host: 'the host failed it',
};

function stateInWords(session) {
  if (session.live) return 'running';
  if (session.end_reason) return `ended: ${END_REASONS[session.end_reason] || visibleText(session.end_reason)}`;
  return 'not running on this host';
}

async function stop(id, result) {
  const stale = whileSignedIn();
  const answer = await api('POST', `/v1/sessions/${encodeURIComponent(id)}/stop`);
  if (stale()) return;
  if (answer.status !== 200) status(result, errorText(answer), false);
  await reloadTalk();
}

async function remove(session, result) {
  if (!window.confirm(`Delete the conversation "${session.title}"? Its messages and replies are deleted for good; what it proposed stays in Proposals.`)) return;
  const stale = whileSignedIn();
  const answer = await api('DELETE', `/v1/sessions/${encodeURIComponent(session.id)}`);
  if (stale()) return;
  if (answer.status !== 204) {
    status(result, errorText(answer), false);
    return;
  }
  if (shown === session.id) location.hash = '#keep/conversations';
  else await loadConversations();
}

// One conversation --------------------------------------------------------------------------

export async function loadConversation(id) {
  shown = id;
  const stale = whileSignedIn();
  const [conversation, proposals, approvals] = await Promise.all([
    api('GET', `/v1/sessions/${encodeURIComponent(id)}/messages`),
    api('GET', '/v1/proposals'),
    api('GET', '/v1/approvals'),
  ]);
  if (stale() || shown !== id) return;
  if (conversation.status !== 200) {
    byId('keep-talk-title').textContent = 'Conversation';
    status(byId('keep-talk-result'), errorText(conversation), false);
    fill(byId('keep-conversation'));
    fill(byId('keep-talk-composer'));
    return;
  }
  const { session, entries } = conversation.body;
  byId('keep-talk-title').textContent = visibleText(session.title);
  byId('keep-talk-state').textContent = working.has(id) ? 'Working on your message…' : capitalised(stateInWords(session));
  showTaint(session);
  const ofSession = (item) => item.session_id === id;
  const items = [
    ...entries.map((entry) => [entry.at_ms, `e${entry.id}`, () => entryItem(entry, session.agent)]),
    ...(proposals.status === 200 ? proposals.body.proposals.filter(ofSession) : [])
      .map((proposal) => [proposal.created_at_ms, `${proposal.id}:${proposal.state}`, () => otherProposalItem(proposal)]),
    ...(proposals.status === 200 ? proposals.body.tools.filter((review) => review.origin.session_id === id) : [])
      .map((review) => [review.origin.created_at_ms, `${review.id}:${review.state}`, () => toolProposalItem(review)]),
    ...(approvals.status === 200 ? approvals.body.approvals.filter(ofSession) : [])
      .map((approval) => [approval.asked_at_ms, approval.id, () => approvalItem(approval)]),
  ].sort((a, b) => a[0] - b[0]);
  reconcile(byId('keep-conversation'), items.map(([, key, build]) => [key, build]));
  composer(session);
}

function capitalised(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function showTaint(session) {
  const banner = byId('keep-talk-taint');
  banner.hidden = !session.tainted;
  banner.textContent = session.tainted
    ? `This conversation is tainted since ${when(session.tainted_at_ms)}: ${visibleText(session.taint_source || 'it read untrusted content')}. What the agent proposes from now on may be steered by it, and is marked.`
    : '';
}

const ROLE_NAMES = { person: 'You', file: 'You handed it a file', error: 'What went wrong', network: 'The network' };

function entryItem(entry, agent) {
  const who = entry.role === 'agent' ? visibleText(agent) : ROLE_NAMES[entry.role] || entry.role;
  const text = entry.role === 'file'
    ? `${visibleText(entry.text)} (${entry.bytes} ${entry.bytes === 1 ? 'byte' : 'bytes'})`
    : visibleText(entry.text);
  const cut = entry.role !== 'file' && entry.bytes > new TextEncoder().encode(entry.text).length
    ? h('p', { class: 'muted' }, `Kept cut: it was ${entry.bytes} bytes.`) : null;
  return h('li', { class: `entry entry-${entry.role}` },
    h('p', { class: 'who' }, who, h('span', { class: 'muted' }, ` ${when(entry.at_ms)}`)),
    h('p', { class: 'text' }, text),
    cut);
}

function composer(session) {
  const place = byId('keep-talk-composer');
  if (!session.live) {
    fill(place, h('p', { class: 'muted' }, 'This conversation has ended: start a new one from Agents.'),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'secondary', onclick: act(() => remove(session, byId('keep-talk-result')), byId('keep-talk-result')) }, 'Delete this conversation')));
    return;
  }
  if (place.dataset.session === session.id && place.firstChild) return;
  place.dataset.session = session.id;
  const result = byId('keep-talk-result');
  const text = h('textarea', { id: 'keep-talk-text', rows: '3' });
  const file = h('input', { type: 'file', id: 'keep-talk-file', accept: 'text/*,.txt,.md,.csv,.json' });
  const send = act(() => sendMessage(session, text, result), result);
  text.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) send(event);
  });
  // Stop stays outside the message's form: it must work while a message runs.
  fill(place,
    h('form', { class: 'talk', onsubmit: send },
      h('label', { for: 'keep-talk-text' }, 'Your message'), text,
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Send'))),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: act(() => stop(session.id, result), result) }, 'Stop this conversation')),
    h('form', { class: 'talk-file', onsubmit: act(() => sendFile(session, file, result), result) },
      h('label', { for: 'keep-talk-file' }, 'Hand it a text file (this marks the conversation tainted: the file comes from outside)'),
      file,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'secondary' }, 'Upload'))));
}

async function sendMessage(session, text, result) {
  const message = text.value;
  if (!message.trim()) return;
  if (new TextEncoder().encode(message).length > MESSAGE_BYTES_MAX) {
    status(result, `A message is at most ${MESSAGE_BYTES_MAX >> 10} KiB: hand a longer text to the agent as a file (up to ${FILE_BYTES_MAX >> 10} KiB), or send it in parts.`, false);
    return;
  }
  // The message leaves the box as it is sent (it shows in the conversation); a refusal gives
  // it back.
  text.value = '';
  await running(session, result, async () => {
    const answer = await api('POST', `/v1/sessions/${encodeURIComponent(session.id)}/messages`, { text: message });
    if (answer.status !== 200 && !text.value) text.value = message;
    return answer;
  });
}

async function sendFile(session, input, result) {
  const chosen = input.files?.[0];
  if (!chosen) {
    status(result, 'Choose a file first.', false);
    return;
  }
  if (chosen.size > FILE_BYTES_MAX) {
    status(result, `A file is at most ${FILE_BYTES_MAX >> 10} KiB of text; this one is ${Math.ceil(chosen.size / 1024)} KiB.`, false);
    return;
  }
  const content = await chosen.text();
  await running(session, result, async () => {
    const answer = await api('POST', `/v1/sessions/${encodeURIComponent(session.id)}/files`, { name: chosen.name, text: content });
    if (answer.status === 200) input.value = '';
    return answer;
  });
}

/** Sends one message's request, saying "working" until it is answered. */
async function running(session, result, send) {
  const stale = whileSignedIn();
  working.add(session.id);
  byId('keep-talk-state').textContent = 'Working on your message…';
  status(result, '');
  try {
    const answer = await send();
    if (stale()) return;
    if (answer.status !== 200) status(result, errorText(answer), false);
  } finally {
    working.delete(session.id);
  }
  if (!stale()) await reloadTalk();
}

/** Reloads the view of conversations shown now (a live event, or an answer). */
export async function reloadTalk() {
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash.startsWith('keep/conversation/') && shown) await loadConversation(shown);
  else if (hash === 'keep/conversations') await loadConversations();
  else if (hash === 'keep/agents') await loadAgents();
}

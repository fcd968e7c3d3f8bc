// The chat view: one session's turns, rebuilt from the turn views and then kept live from the
// event stream (tokens, steps, tool calls and results, grounding, approval cards, queued
// prompts). With no session chosen it is ready to type: the first prompt creates the session.
// The model's text (answers, step text, rejected answers) is rendered as sanitised Markdown
// (markdown.js); the person's prompts, tool names, arguments and reasons stay text.

import { Unauthorized, api, errorText, onJsonEvents, openEvents } from './api.js';
import { byId, fill, h, plainArgs, splitThought } from './dom.js';
import { MarkdownStream, fillMarkdown } from './markdown.js';

/**
 * A tool step's call lines, shown as they are, never as Markdown: ``Using `name` {args}`` for a
 * call that ran, ``Served from the cache: `name` {args}`` for a repeat given the result the
 * turn already had, ``Not run: `name` {args} — reason`` for a call that never ran. The loop
 * writes them with `imurun_agent::CALL_LINE_STARTS`; a server test holds the two together.
 */
const CALL_LINE = /^(Using|Served from the cache:|Not run:) `([^`]+)`/;
/** The reason of a `Not run` line for a call the loop refused before any tool saw it. */
const EXAMPLE_VALUE_REASON = 'its value comes from the worked example, not from you';
/** The kind of a call line, as its class: `using`, `cached` or `not-run`. */
const CALL_LINE_CLASS = { 'Using': 'using', 'Served from the cache:': 'cached', 'Not run:': 'not-run' };

/** What the view shows: the session, its stream, its turns by id and its approval cards. */
const view = {
  sessionId: null,
  events: null,
  turns: new Map(),
  runningTurnId: null,
  cards: new Map(),
  // Bumped by each `showSession`, so an older load that answers late draws nothing.
  loads: 0,
  // True while a prompt (and the session it creates) is on its way: a second Enter waits.
  sending: false,
  onGlobalEvent: () => {},
  onSessionCreated: () => {},
  guard: (work) => work(),
};

/**
 * Wires the form and the Stop button. `onGlobalEvent` gets `session.*` and `permissions`;
 * `onSessionCreated` the session a first prompt created; `guard` runs the sending of a prompt
 * (it shows the token form on a 401).
 */
export function initChat({ onGlobalEvent, onSessionCreated, guard }) {
  view.onGlobalEvent = onGlobalEvent;
  view.onSessionCreated = onSessionCreated;
  view.guard = guard;
  byId('prompt-form').addEventListener('submit', (event) => {
    event.preventDefault();
    view.guard(sendPrompt);
  });
  byId('prompt').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      view.guard(sendPrompt);
    }
  });
  byId('stop').addEventListener('click', stopTurn);
  setInterval(tickCountdowns, 1000);
  setRunning(null);
}

/** Shows session `id` (null: none) and follows its events. */
export async function showSession(id, title) {
  stopChat();
  const load = view.loads;
  view.sessionId = id;
  byId('chat-heading').textContent = id ? title || 'Untitled session' : 'New session';
  setRunning(null);
  // Without a session the stream brings every event: the global ones (new and deleted
  // sessions), and those of the session a first prompt creates, from its first event on.
  follow(id);
  if (!id) return;
  const [detail, turns, approvals] = await Promise.all([
    api('GET', `/api/sessions/${id}`),
    api('GET', `/api/sessions/${id}/turns`),
    api('GET', '/api/tools/approvals'),
  ]);
  if (view.loads !== load) return;
  if (detail.status !== 200) {
    byId('chat-state').textContent = errorText(detail);
    return;
  }
  for (const turn of turns.body?.turns || []) renderTurnView(turn);
  setRunning(detail.body.running_turn_id);
  for (const pending of approvals.body?.pending || []) {
    if (pending.session_id !== id) continue;
    showCard({
      approval_id: pending.id,
      call_id: pending.call_id,
      name: pending.tool,
      args: pending.args,
      deadline_ms: pending.deadline,
      rememberable: pending.rememberable,
      depth: pending.depth,
      reason: pending.reason,
    });
  }
}

/** Stops following the session and forgets what the view shows (signing out). */
export function stopChat() {
  view.loads += 1;
  if (view.events) view.events.close();
  view.events = null;
  view.sessionId = null;
  view.turns.clear();
  view.cards.clear();
  fill(byId('transcript'));
  setRunning(null);
}

/** The session title shown in the heading (after a rename). */
export function setTitle(title) {
  byId('chat-heading').textContent = title || 'Untitled session';
}

export function currentSession() {
  return view.sessionId;
}

function follow(id) {
  const source = openEvents(id);
  view.events = source;
  onJsonEvents(source, () => view.events === source, onEvent);
  source.onerror = () => {
    if (view.events === source && source.readyState === EventSource.CLOSED) {
      byId('chat-state').textContent = 'The event stream closed; reload the page.';
    }
  };
}

function onEvent(event) {
  const type = event.type || '';
  if (type.startsWith('session.') || type === 'permissions' || type === 'grants.revoked') {
    view.onGlobalEvent(event);
    return;
  }
  if (type.startsWith('stream.')) {
    if (type !== 'stream.lagged' && view.sessionId) {
      // Events were missed: rebuild the view from the server's state.
      showSession(view.sessionId, byId('chat-heading').textContent);
    }
    return;
  }
  if (!view.sessionId || event.session_id !== view.sessionId) return;
  const handler = HANDLERS[type];
  if (handler) handler(event);
}

const HANDLERS = {
  'turn.start': (event) => {
    removeQueued(event.prompt);
    turnBox(event.turn_id, event.prompt);
    setRunning(event.turn_id);
  },
  token: (event) => {
    const turn = turnBox(event.turn_id);
    liveAnswer(turn);
    turn.segment.liveText += event.text;
    scheduleRender(turn.segment);
  },
  step: (event) => {
    const turn = turnBox(event.turn_id);
    endChecking(turn);
    if (event.kind === 'answer') finishAnswer(turn, event.text);
    else addStep(turn, event.kind, event.text, event.step);
  },
  'answer.checking': (event) => showChecking(turnBox(event.turn_id), event),
  'answer.grounding': (event) => addGrounding(turnBox(event.turn_id), event),
  'tool.call': (event) => {
    const turn = runningTurn();
    if (!turn || event.depth > 0) return;
    // A call made without a model step (a pre-fetch) has no thinking step yet.
    const panel = thinking(turn);
    // A model's call is shown in its step, which comes once the step's calls ended; a step
    // that calls is not an answer being checked.
    if (event.source === 'model') {
      panel.stepCalls.add(event.call_id);
      endChecking(turn);
    }
  },
  'tool.result': (event) => {
    const turn = runningTurn();
    if (!turn) return;
    const state = event.ok ? 'ok' : 'failed';
    thinking(turn).list.append(
      h('li', { class: `tool-result ${state}`, 'data-call-id': event.call_id },
        h('span', { class: 'tool-name' }, event.name),
        event.depth > 0 ? ` (sub-agent ${event.depth})` : '',
        ' — ',
        h('span', { class: 'badge' }, state)),
    );
    updateSummary(turn);
  },
  'tool.approval_needed': (event) => showCard(event),
  'tool.approved': (event) => settleCard(event.approval_id, 'approved',
    event.remember ? 'Approved for the rest of this session.' : 'Approved.'),
  'tool.denied': (event) => {
    if (event.approval_id) settleCard(event.approval_id, 'denied', denialText(event.reason));
    const turn = runningTurn();
    if (turn && !event.approval_id) {
      thinking(turn).list.append(h('li', { class: 'tool-result failed' },
        h('span', { class: 'tool-name' }, event.name), ' — ', h('span', { class: 'badge' }, 'refused')));
    }
  },
  'prompt.delivered': (event) => {
    const turn = turnBox(event.turn_id);
    removeQueued(event.text);
    turn.body.append(userMessage(event.text));
    turn.segment = {};
  },
  'turn.end': (event) => {
    const turn = turnBox(event.turn_id);
    endChecking(turn);
    if (turn.segment.live && !turn.segment.done) turn.segment.live.classList.remove('streaming');
    if (event.status !== 'done') {
      turn.body.append(h('p', { class: `turn-status ${event.status}` }, statusText(event)));
    }
    turn.el.dataset.status = event.status;
    if (view.runningTurnId === event.turn_id) setRunning(null);
  },
};

/** The turn's list item (made on first sight, with its prompt when known). */
function turnBox(turnId, prompt) {
  let turn = view.turns.get(turnId);
  if (turn) return turn;
  const body = h('div', { class: 'turn-body' });
  const el = h('li', { class: 'turn', 'data-turn-id': turnId }, body);
  turn = { el, body, segment: {} };
  view.turns.set(turnId, turn);
  if (prompt !== undefined) body.append(userMessage(prompt));
  byId('transcript').append(el);
  return turn;
}

function runningTurn() {
  return view.runningTurnId ? view.turns.get(view.runningTurnId) : null;
}

function userMessage(text, queued) {
  return h('div', { class: `msg user${queued ? ' queued' : ''}`, 'data-queued-text': queued ? text : null },
    h('span', { class: 'who' }, 'You'),
    queued ? h('span', { class: 'badge queued-badge' }, 'queued') : null,
    h('p', { class: 'text' }, text));
}

/** The segment's thinking panel, a collapsed `<details>`, made on first use. */
function thinking(turn) {
  const segment = turn.segment;
  if (!segment.thinking) {
    const summary = h('summary', {}, 'Thinking');
    const list = h('ol', { class: 'steps' });
    const details = h('details', { class: 'thinking' }, summary, list);
    segment.thinking = { details, summary, list, steps: 0, retries: 0, fallbacks: [], stepCalls: new Set() };
    if (segment.live) turn.body.insertBefore(details, segment.live);
    else turn.body.append(details);
  }
  return segment.thinking;
}

function updateSummary(turn) {
  const panel = thinking(turn);
  const results = panel.list.querySelectorAll('.tool-result').length;
  const parts = [`${panel.steps} step${panel.steps === 1 ? '' : 's'}`];
  if (results) parts.push(`${results} tool result${results === 1 ? '' : 's'}`);
  if (panel.retries) parts.push(panel.retries === 1 ? 'retried' : `retried ${panel.retries} times`);
  for (const tool of panel.fallbacks) parts.push(tool ? `answered from ${tool}'s result` : 'answer corrected');
  panel.summary.textContent = `Thinking (${parts.join(', ')})`;
}

/** The answer being streamed in this segment. */
function liveAnswer(turn) {
  const segment = turn.segment;
  if (!segment.live || segment.done) {
    if (segment.done) turn.segment = {};
    turn.segment.live = h('div', { class: 'msg assistant md streaming', 'aria-busy': 'true' });
    turn.segment.liveText = '';
    turn.segment.stream = new MarkdownStream(turn.segment.live);
    turn.body.append(turn.segment.live);
  }
  return turn.segment.live;
}

/**
 * Renders the streaming answer at the next animation frame, once however many tokens came
 * meanwhile; `MarkdownStream` renders again only its last blocks, so a frame's work follows
 * their size, not the answer's. The answer's `step` renders it whole (`finishAnswer`).
 */
function scheduleRender(segment) {
  if (segment.renderPending) return;
  segment.renderPending = true;
  requestAnimationFrame(() => {
    segment.renderPending = false;
    if (segment.done || !segment.live) return;
    segment.stream.update(segment.liveText);
  });
}

/**
 * An earlier step (a tool step, a retry, a nudge, a rejected answer): its text moves into the
 * thinking panel. A rejected answer (`correction`) goes before the grounding note of its step.
 */
function addStep(turn, kind, text, step) {
  const panel = thinking(turn);
  if (turn.segment.live && !turn.segment.done) {
    turn.segment.live.remove();
    turn.segment.live = null;
  }
  const { thought, rest } = splitThought(text);
  panel.steps += 1;
  const correction = kind === 'correction';
  const item = h('li', { class: `step ${kind}`, 'data-kind': kind, 'data-step': step ?? null },
    kind === 'tool' ? null : h('span', { class: 'badge' }, correction ? 'rejected answer' : kind),
    thought ? h('p', { class: 'thought' }, thought) : null,
    correction ? markdownBox('rejected md', rest) : stepText(rest));
  const note = correction && step !== undefined
    ? panel.list.querySelector(`li.grounding[data-step="${CSS.escape(String(step))}"]`)
    : null;
  // The results of the step's own calls came before it: the step goes above them.
  const firstResult = [...panel.list.querySelectorAll('li.tool-result')]
    .find((result) => panel.stepCalls.has(result.dataset.callId));
  if (note) note.before(item);
  else if (firstResult) firstResult.before(item);
  else panel.list.append(item);
  panel.stepCalls.clear();
  updateSummary(turn);
}

/**
 * `answer.checking`: the answer of this step is held until it is checked against what the
 * tools returned; the turn says so until the step ends.
 */
function showChecking(turn, event) {
  endChecking(turn);
  const tools = event.tools || [];
  const against = tools.length
    ? `what ${tools.map((tool) => `\`${tool}\``).join(' and ')} returned`
    : 'who the assistant is';
  turn.checking = h('p', { class: 'checking', role: 'status', 'data-step': event.step },
    `Checking the answer against ${against}…`);
  turn.body.append(turn.checking);
}

function endChecking(turn) {
  if (turn.checking) turn.checking.remove();
  turn.checking = null;
}

/** A step's text: what the model wrote as Markdown, then its call lines as they are. */
function stepText(text) {
  if (!text) return null;
  const lines = text.split('\n');
  const prose = lines.filter((line) => !CALL_LINE.test(line)).join('\n').trim();
  return h('div', { class: 'step-text' },
    prose ? markdownBox('md', prose) : null,
    lines.filter((line) => CALL_LINE.test(line))
      .map((line) => h('p', { class: CALL_LINE_CLASS[line.match(CALL_LINE)[1]] }, line)));
}

function markdownBox(className, text) {
  const box = h('div', { class: className });
  fillMarkdown(box, text);
  return box;
}

/**
 * `answer.grounding` (live, or from a stored view): a line in the thinking panel after the
 * rejected answer of its step, and a word in the panel's summary.
 */
function addGrounding(turn, grounding) {
  const panel = thinking(turn);
  const { step, action, tool, reason } = grounding;
  const text = action === 'retry'
    ? `Retried: ${reason}`
    : action === 'extract'
      ? `Answered with an extract of the file: ${reason}`
      : tool ? `Answered from ${tool}'s result: ${reason}` : `Answer corrected: ${reason}`;
  const item = h('li', { class: `grounding ${action}`, 'data-step': step, 'data-action': action, 'data-tool': tool },
    h('p', {}, text));
  const rejected = [...panel.list.querySelectorAll(`li.step[data-step="${CSS.escape(String(step))}"]`)].pop();
  if (rejected) rejected.after(item);
  else panel.list.append(item);
  if (action === 'retry') panel.retries += 1;
  else panel.fallbacks.push(tool);
  updateSummary(turn);
}

/** The last step: the answer, its thought (if any) into the panel. */
function finishAnswer(turn, text) {
  const { thought, rest } = splitThought(text);
  if (thought) {
    const panel = thinking(turn);
    panel.steps += 1;
    panel.list.append(h('li', { class: 'step thought-only' }, h('p', { class: 'thought' }, thought)));
    updateSummary(turn);
  }
  const live = liveAnswer(turn);
  fillMarkdown(live, rest || turn.segment.liveText);
  live.classList.remove('streaming');
  live.removeAttribute('aria-busy');
  live.classList.add('answer');
  turn.segment.done = true;
}

/** A finished or running turn from `GET /api/sessions/{id}/turns`. */
function renderTurnView(turnView) {
  const turn = turnBox(turnView.turn_id, turnView.prompt);
  const delivered = [...(turnView.delivered_prompts || [])];
  const results = [...(turnView.tool_calls || [])];
  const grounding = [...(turnView.grounding || [])];
  // Grounding notes in the order they were recorded, each once the steps up to its own are in.
  const noteUpTo = (step) => {
    while (grounding.length && grounding[0].step <= step) addGrounding(turn, grounding.shift());
  };
  for (const step of turnView.steps || []) {
    if (step.kind === 'answer') {
      noteUpTo(step.step);
      finishAnswer(turn, step.text);
      const next = delivered.shift();
      if (next !== undefined) {
        turn.body.append(userMessage(next));
        turn.segment = {};
      }
    } else {
      noteUpTo(step.step - 1);
      addStep(turn, step.kind, step.text, step.step);
      noteUpTo(step.step);
      // The calls of this step that reached a tool, in order: a `Using` or `Not run` line
      // each (a repeat served from the cache, or a call the loop refused, has no record;
      // records are matched by name).
      for (const line of step.text.split('\n')) {
        const match = line.match(CALL_LINE);
        // A repeat, and a call the loop refused for a worked example's value, reached no tool.
        if (!match || match[1] === 'Served from the cache:' || line.endsWith(EXAMPLE_VALUE_REASON)) continue;
        const at = results.findIndex((call) => call.name === match[2]);
        if (at < 0) continue;
        const [call] = results.splice(at, 1);
        const state = call.ok === undefined || call.ok === null ? 'running' : call.ok ? 'ok' : 'failed';
        thinking(turn).list.append(h('li', { class: `tool-result ${state}`, 'data-call-id': call.call_id },
          h('span', { class: 'tool-name' }, call.name), ' — ', h('span', { class: 'badge' }, state)));
      }
      updateSummary(turn);
    }
  }
  for (const note of grounding) addGrounding(turn, note);
  if (turnView.status !== 'running') {
    turn.el.dataset.status = turnView.status;
    if (turnView.status !== 'done') {
      turn.body.append(h('p', { class: `turn-status ${turnView.status}` }, statusText(turnView)));
    }
  }
}

function statusText(event) {
  switch (event.status) {
    case 'stopped': return 'Stopped.';
    case 'max-steps': return 'Stopped at the step limit.';
    case 'interrupted': return 'Interrupted: the server stopped while this turn ran.';
    case 'error': return `Failed${event.error ? `: ${event.error}` : '.'}`;
    default: return event.status;
  }
}

function setRunning(turnId) {
  view.runningTurnId = turnId;
  const stop = byId('stop');
  stop.disabled = !turnId;
  byId('chat-state').textContent = !view.sessionId
    ? 'Ready: your first prompt starts a new session.'
    : turnId ? 'Working…' : 'Ready.';
}

/**
 * Sends the prompt box's text, first creating a session when none is shown. The text leaves
 * the box only once the server accepted it: on any failure it stays, with the reason below.
 */
async function sendPrompt() {
  const input = byId('prompt');
  const error = byId('prompt-error');
  const text = input.value;
  if (view.sending || !text.trim()) return;
  error.textContent = '';
  view.sending = true;
  byId('send').disabled = true;
  try {
    await deliverPrompt(input, text);
  } catch (failure) {
    if (failure instanceof Unauthorized) throw failure;
    error.textContent = kept(`The server could not be reached (${failure.message})`);
  } finally {
    view.sending = false;
    byId('send').disabled = false;
  }
}

async function deliverPrompt(input, text) {
  const error = byId('prompt-error');
  if (!view.sessionId) {
    const created = await api('POST', '/api/sessions', {});
    if (created.status !== 201) {
      error.textContent = kept(`No session could be started: ${errorText(created)}`);
      return;
    }
    // The stream opened without a session already brings this one's events (see `showSession`).
    view.sessionId = created.body.id;
    setTitle(created.body.title);
    setRunning(null);
    view.onSessionCreated(created.body);
  }
  const answer = await api('POST', `/api/sessions/${view.sessionId}/prompts`, { prompt: text });
  if (answer.status !== 202) {
    error.textContent = kept(errorText(answer));
    return;
  }
  // Whatever was typed meanwhile stays.
  if (input.value === text) input.value = '';
  if (answer.body.queued) {
    // Shown as queued in the running turn until `prompt.delivered` (or the next `turn.start`).
    const turn = view.turns.get(answer.body.turn_id) || runningTurn();
    const el = userMessage(text, true);
    (turn ? turn.body : byId('transcript')).append(el);
  }
}

/** An error's message as a sentence, then that the prompt is still in the box. */
function kept(message) {
  const reason = message.replace(/[.\s]+$/, '');
  return `${reason.charAt(0).toUpperCase()}${reason.slice(1)}. Your prompt is kept; send it again.`;
}

function removeQueued(text) {
  for (const el of byId('transcript').querySelectorAll('.msg.queued')) {
    if (el.dataset.queuedText === text) {
      el.remove();
      return;
    }
  }
}

async function stopTurn() {
  if (!view.sessionId) return;
  const answer = await api('POST', `/api/sessions/${view.sessionId}/stop`);
  if (answer.status !== 200) byId('prompt-error').textContent = errorText(answer);
}

// Approval cards -------------------------------------------------------------------------

function showCard(event) {
  if (view.cards.has(event.approval_id)) return;
  const headingId = `approval-${event.approval_id}`;
  const countdown = h('p', { class: 'countdown', id: `${headingId}-countdown` });
  const outcome = h('p', { class: 'outcome', role: 'status' });
  const buttons = h('div', { class: 'actions' },
    h('button', { type: 'button', class: 'approve', onclick: () => decide(event.approval_id, true, false) }, 'Approve'),
    h('button', { type: 'button', class: 'deny secondary', onclick: () => decide(event.approval_id, false, false) }, 'Deny'),
    event.rememberable
      ? h('button', { type: 'button', class: 'remember secondary', onclick: () => decide(event.approval_id, true, true) }, 'Always for this session')
      : null);
  const el = h('section', {
    class: 'approval', tabindex: '-1', 'data-approval-id': event.approval_id, 'data-state': 'waiting',
    'aria-labelledby': headingId, 'aria-describedby': `${headingId}-countdown`,
  },
  h('h2', { id: headingId }, 'Allow ', h('code', {}, event.name), event.depth > 0 ? ` (sub-agent ${event.depth})` : '', '?'),
  event.reason ? h('p', { class: 'reason' }, `Why it asks: ${event.reason}.`) : null,
  h('p', { class: 'muted' }, 'Arguments'),
  h('pre', { class: 'args' }, plainArgs(event.args)),
  countdown, buttons, outcome);
  const card = { el, countdown, outcome, buttons, deadline: event.deadline_ms, settled: false };
  view.cards.set(event.approval_id, card);
  const turn = runningTurn();
  (turn ? turn.body : byId('transcript')).append(el);
  tickCountdown(card);
  el.scrollIntoView({ block: 'nearest' });
  el.focus();
}

async function decide(approvalId, approved, remember) {
  const card = view.cards.get(approvalId);
  if (!card || card.settled) return;
  for (const button of card.buttons.querySelectorAll('button')) button.disabled = true;
  const answer = await api('POST', `/api/tools/approvals/${approvalId}`, { approved, remember });
  if (answer.status === 200) {
    settleCard(approvalId, approved ? 'approved' : 'denied',
      approved ? (remember ? 'Approved for the rest of this session.' : 'Approved.') : 'Denied.');
  } else if (answer.status === 404) {
    settleCard(approvalId, 'gone', 'No longer waiting: answered elsewhere, timed out or stopped.');
  } else {
    for (const button of card.buttons.querySelectorAll('button')) button.disabled = false;
    card.outcome.textContent = errorText(answer);
  }
}

function settleCard(approvalId, state, text) {
  const card = view.cards.get(approvalId);
  if (!card || card.settled) return;
  card.settled = true;
  const hadFocus = card.el.contains(document.activeElement);
  card.el.dataset.state = state;
  card.buttons.remove();
  card.countdown.remove();
  card.el.removeAttribute('aria-describedby');
  card.outcome.textContent = text;
  if (hadFocus) byId('prompt').focus();
}

function denialText(reason) {
  switch (reason) {
    case 'user': return 'Denied.';
    case 'timeout': return 'Denied: nobody answered in time.';
    case 'stopped': return 'Denied: the turn was stopped.';
    case 'no_client': return 'Denied: no page was following this session.';
    case 'policy': return 'Refused by the permissions.';
    default: return `Denied (${reason}).`;
  }
}

function tickCountdowns() {
  for (const card of view.cards.values()) tickCountdown(card);
}

function tickCountdown(card) {
  if (card.settled) return;
  const seconds = Math.max(0, Math.ceil((card.deadline - Date.now()) / 1000));
  card.countdown.textContent = seconds > 0
    ? `Counts as denied in ${seconds} s.`
    : 'Time is up: it counts as denied.';
}

// The settings view: the model, permissions, the agent's step limit, remembered approvals,
// skills, and the MCP servers and connectors with their tools. Every field is read from and
// written to the API as docs/api.md describes it.

import { api, errorText } from './api.js';
import { byId, fill, h } from './dom.js';

const TOGGLES = ['readFiles', 'writeFiles', 'runShell', 'network'];

export function initSettings() {
  byId('permissions-form').addEventListener('submit', savePermissions);
  byId('agent-form').addEventListener('submit', saveAgent);
  byId('skill-form').addEventListener('submit', createSkill);
  byId('revoke-all').addEventListener('click', async () => {
    await report(api('DELETE', '/api/grants'));
    loadGrants();
  });
}

/** Reads everything the view shows. */
export async function loadSettings() {
  byId('settings-error').textContent = '';
  await Promise.all([loadModel(), loadPermissions(), loadAgent(), loadGrants(), loadSkills(), loadIntegrations()]);
}

/** The model line in the header and the model facts. */
export async function loadModel() {
  const answer = await api('GET', '/api/model');
  if (answer.status !== 200) return;
  const model = answer.body;
  const line = model.status === 'ready'
    ? `Model: ${model.name}`
    : model.status === 'failed' ? 'Model failed to load' : `Model: ${model.status}`;
  byId('model-status').textContent = line;
  fill(byId('model-info'),
    fact('Status', model.status),
    fact('Name', model.name ?? '—'),
    fact('Context', model.context_limit ? `${model.context_limit} tokens` : '—'),
    model.message ? fact('Problem', model.message) : null);
}

function fact(name, value) {
  const row = h('div', {}, h('dt', {}, name), h('dd', {}, String(value)));
  return row;
}

export function showPermissions(permissions) {
  const form = byId('permissions-form');
  form.elements.mode.value = permissions.mode;
  for (const toggle of TOGGLES) form.elements[toggle].checked = Boolean(permissions.toggles?.[toggle]);
  form.elements.approvalTimeout.value = permissions.approvalTimeout;
  byId('perm-facts').textContent =
    `Workspace: ${permissions.workspaceRoot}. Approvals wait ${permissions.approvalTimeoutInForce} s in this run.`;
  byId('perm-sandbox').textContent = describeSandbox(permissions.sandbox);
}

/** One sentence on the OS sandbox around shell commands, as `GET /api/permissions` reports it. */
export function describeSandbox(sandbox) {
  if (sandbox?.kind === 'landlock') {
    const parts = [];
    if (sandbox.filesystem) parts.push('writes only in the workspace and a private temporary folder');
    parts.push(sandbox.network ? 'no TCP while Network is off' : 'TCP not confined by this kernel');
    if (sandbox.scoped) parts.push('signals and abstract sockets kept inside');
    return `Sandbox: Landlock ABI ${sandbox.abi} (${parts.join('; ')}).`;
  }
  return `Sandbox: none. ${sandbox?.reason ?? 'The server did not say.'}`;
}

async function loadPermissions() {
  const answer = await api('GET', '/api/permissions');
  if (answer.status === 200) showPermissions(answer.body);
}

async function savePermissions(event) {
  event.preventDefault();
  const form = byId('permissions-form');
  const toggles = {};
  for (const toggle of TOGGLES) toggles[toggle] = form.elements[toggle].checked;
  const body = { mode: form.elements.mode.value, toggles, approvalTimeout: Number(form.elements.approvalTimeout.value) };
  const answer = await report(api('POST', '/api/permissions', body));
  if (answer.status === 200) {
    showPermissions(answer.body);
    byId('perm-saved').textContent = 'Saved.';
  }
}

async function loadAgent() {
  const answer = await api('GET', '/api/agent');
  if (answer.status === 200) byId('agent-max-steps').value = answer.body.maxSteps;
}

async function saveAgent(event) {
  event.preventDefault();
  const answer = await report(api('POST', '/api/agent', { maxSteps: Number(byId('agent-max-steps').value) }));
  if (answer.status === 200) {
    byId('agent-max-steps').value = answer.body.maxSteps;
    byId('agent-saved').textContent = 'Saved.';
  }
}

export async function loadGrants() {
  const answer = await api('GET', '/api/grants');
  if (answer.status !== 200) return;
  const grants = answer.body.grants;
  fill(byId('grant-list'), grants.length === 0
    ? h('li', { class: 'muted' }, 'None: every approval is asked again.')
    : grants.map((grant) => h('li', {},
      h('span', {}, `Session ${grant.session_id}: ${grant.tools.join(', ')}`),
      h('button', {
        type: 'button', class: 'secondary small', 'aria-label': `Revoke the approvals of session ${grant.session_id}`,
        onclick: async () => {
          await report(api('DELETE', `/api/grants/${grant.session_id}`));
          loadGrants();
        },
      }, 'Revoke'))));
  byId('revoke-all').disabled = grants.length === 0;
}

async function loadSkills() {
  const answer = await api('GET', '/api/skills');
  if (answer.status !== 200) return;
  const skills = answer.body.skills;
  fill(byId('skill-list'), skills.length === 0
    ? h('li', { class: 'muted' }, 'No skills yet. A prompt uses one with /its-id.')
    : skills.map((skill) => h('li', {},
      h('span', {}, h('code', {}, `/${skill.id}`), ` ${skill.name}`,
        skill.description ? h('span', { class: 'muted' }, ` — ${skill.description}`) : null),
      h('button', {
        type: 'button', class: 'secondary small', 'aria-label': `Delete the skill ${skill.name}`,
        onclick: async () => {
          await report(api('DELETE', `/api/skills/${skill.id}`));
          loadSkills();
        },
      }, 'Delete'))));
}

async function createSkill(event) {
  event.preventDefault();
  const body = {
    name: byId('skill-name').value,
    description: byId('skill-description').value,
    body: byId('skill-body').value,
  };
  const answer = await api('POST', '/api/skills', body);
  if (answer.status !== 201) {
    byId('skill-error').textContent = errorText(answer);
    return;
  }
  byId('skill-error').textContent = '';
  byId('skill-form').reset();
  loadSkills();
}

async function loadIntegrations() {
  const answer = await api('GET', '/api/integrations');
  if (answer.status !== 200) return;
  const { mcp_servers: servers, connectors } = answer.body;
  fill(byId('integrations'),
    h('h3', {}, 'MCP servers'),
    servers.length === 0 ? h('p', { class: 'muted' }, 'None configured.') : h('ul', { class: 'plain' },
      servers.map((server) => h('li', {},
        h('p', {}, h('strong', {}, server.name), ` (${server.transport}) — ${server.state}`),
        h('p', { class: 'muted wrap' }, server.target),
        server.error ? h('p', { class: 'error' }, server.error) : null,
        toolList(server.tools)))),
    h('h3', {}, 'Connectors'),
    connectors.length === 0 ? h('p', { class: 'muted' }, 'None.') : h('ul', { class: 'plain' },
      connectors.map((connector) => h('li', {},
        h('p', {}, h('strong', {}, connector.name), connector.connected
          ? ' — connected'
          : ` — not connected (set ${connector.credential_var})`),
        toolList(connector.tools)))));
}

function toolList(tools) {
  if (!tools || tools.length === 0) return h('p', { class: 'muted' }, 'No tools.');
  return h('ul', { class: 'tools' }, tools.map((tool) => h('li', {},
    h('code', {}, tool.name), ` ${tool.category}, `,
    tool.available ? 'available' : `unavailable${tool.unavailable_reason ? `: ${tool.unavailable_reason}` : ''}`)));
}

/** Shows an error answer in the view; passes the answer on. */
async function report(pending) {
  const answer = await pending;
  if (answer.status >= 400) byId('settings-error').textContent = errorText(answer);
  return answer;
}

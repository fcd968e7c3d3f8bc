// The operator, two people and an agent in the page (docs/keep/page.md, docs/keep/console.md):
// Debian's chromium driven by playwright-core against `imurun serve --keep` with the embedded
// model (crates/imurun/tests/all/keep_talk_page.rs sets it up and runs each phase in turn).
//
//   KEEP_OPERATOR=imk_... KEEP_PACK=FILE KEEP_CEILING=FILE KEEP_UPSTREAM_PORT=N KEEP_STATE=FILE
//   node web/tests/keep-talk-e2e.mjs <base url> <artifacts dir> console|before|revoke|after
//
// console: the operator adds alice and bob in the console (their tokens and alice's enrolment
// code are read from the page, into KEEP_STATE), deploys the example agent by uploading a pack
// signed offline, and puts alice's signed ceiling in force; the console offers no approval.
// before: alice reads what the agent may reach, starts a conversation in words, sees its reply,
// accepts the plan it proposed because she asked, approves the tool it proposed on her device,
// approves its network use in the conversation, hands it a file (the taint banner shows); bob
// sees none of it. revoke (after a restart): the operator revokes alice's tool in the console,
// and the journal shows each step, the operator's as the operator's. after: alice reads the
// whole conversation again, ended by the restart; a new conversation's use of the revoked tool
// shows the host's refusal.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { WAIT_MS, axe, check, fail, launch, noSidewaysScroll } from './browser.mjs';

const [baseUrl, artifacts, phase] = process.argv.slice(2);
const env = {};
for (const name of ['KEEP_OPERATOR', 'KEEP_PACK', 'KEEP_CEILING', 'KEEP_UPSTREAM_PORT', 'KEEP_STATE']) {
  env[name] = process.env[name];
  if (!env[name]) fail(`${name} is not set (crates/imurun/tests/all/keep_talk_page.rs sets it)`);
}
if (!baseUrl || !artifacts || !['console', 'before', 'revoke', 'after'].includes(phase)) {
  fail('usage: node keep-talk-e2e.mjs <base url> <artifacts dir> console|before|revoke|after');
}
const base = baseUrl.replace(/\/$/, '');
const address = `http://127.0.0.1:${env.KEEP_UPSTREAM_PORT}/weather`;
const problems = [];
/** The page the last step worked in: shot when a step fails. */
let lastPage = null;
/** Replies from the model take a while on a small machine. */
const REPLY_MS = 90000;

/** What the console phase read from the page, and what later phases add. */
function state() {
  return JSON.parse(readFileSync(env.KEEP_STATE, 'utf8'));
}

function saveState(more) {
  let known = {};
  try {
    known = state();
  } catch {
    // The first phase: nothing saved yet.
  }
  writeFileSync(env.KEEP_STATE, JSON.stringify({ ...known, ...more }));
}

async function openAs(token, who, view = 'keep-proposals-view') {
  const browser = await launch();
  const page = browser.context.pages()[0] || await browser.context.newPage();
  page.on('pageerror', (error) => problems.push(`${who}: page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of (400|401|404|409)/.test(message.text())) problems.push(`${who}: console: ${message.text()}`);
  });
  lastPage = page;
  await page.goto(base);
  await page.getByLabel('Token', { exact: true }).fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.locator(`#${view}:not([hidden])`).waitFor({ timeout: WAIT_MS });
  return { ...browser, page };
}

async function go(page, link, view) {
  await page.getByRole('link', { name: link, exact: true }).click();
  await page.locator(`#${view}:not([hidden])`).waitFor({ timeout: WAIT_MS });
}

async function shoot(page, name) {
  await page.screenshot({ path: join(artifacts, `keep-talk-${name}.png`), fullPage: true });
}

/** axe-core, 360 px without sideways scrolling, and a screenshot at both widths. */
async function inspect(page, name) {
  await axe(page, `the ${name} view`);
  await shoot(page, name);
  const size = page.viewportSize();
  await page.setViewportSize({ width: 360, height: 740 });
  await noSidewaysScroll(page, `the ${name} view`);
  await axe(page, `the ${name} view at 360 px`);
  await shoot(page, `${name}-360`);
  await page.setViewportSize(size);
}

const entries = (page, role) => page.locator(`#keep-conversation > li.entry-${role}`);

/** Sends `text` and waits until the conversation holds `replies` replies of the agent. */
async function send(page, text, replies) {
  await page.getByLabel('Your message').fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await entries(page, 'agent').nth(replies - 1).waitFor({ timeout: REPLY_MS });
}

async function step(name, work) {
  const started = Date.now();
  try {
    await work();
  } catch (error) {
    await lastPage?.screenshot({ path: join(artifacts, 'keep-talk-failed.png'), fullPage: true }).catch(() => {});
    const shown = await lastPage?.locator('main').innerText().catch(() => '') ?? '';
    fail(`${name}: ${error.message}\nthe page showed:\n${shown.slice(0, 3000)}\n${problems.join('\n')}`);
  }
  console.log(`ok ${name} (${Date.now() - started} ms)`);
}

/** The console's views hold no button that approves or accepts anything for a person. */
async function approvesNothing(page, view) {
  const deciding = await page.locator('main button:visible').filter({ hasText: /approve|accept|allow|deny|reject/i }).count();
  check(deciding === 0, `the console's ${view} view offers a decision that is a person's`);
}

async function consolePhase() {
  const operator = await openAs(env.KEEP_OPERATOR, 'operator', 'chat-view');
  const { page } = operator;
  let alice;
  let bob;
  let code;

  await step('the operator sees the console beside the assistant, and none of a person\'s views', async () => {
    for (const link of ['Chat', 'Settings', 'People', 'Agents', 'Ceilings', 'Tools', 'Journal', 'Host']) {
      check(await page.getByRole('link', { name: link, exact: true }).isVisible(), `no ${link} link`);
    }
    for (const link of ['Conversations', 'Proposals', 'Device']) {
      check(!(await page.getByRole('link', { name: link, exact: true }).isVisible()), `a person's ${link} shows`);
    }
  });

  await step('she adds alice and bob, and reads each token and code once', async () => {
    await go(page, 'People', 'console-people-view');
    await page.locator('#console-people > li.muted').waitFor({ timeout: WAIT_MS });
    const secrets = page.locator('#console-added .secret .copy');
    for (const name of ['alice', 'bob']) {
      await page.getByLabel('Name (a to z', { exact: false }).fill(name);
      await page.getByRole('button', { name: 'Add', exact: true }).click();
      await page.locator('#console-add-result.ok', { hasText: `Added ${name}.` }).waitFor({ timeout: WAIT_MS });
      await page.locator(`#console-people > li[data-user="${name}"]`).waitFor({ timeout: WAIT_MS });
      const [token, enrolCode] = await secrets.allTextContents();
      check(token.startsWith('imk_'), `${name}'s token: ${token}`);
      if (name === 'alice') {
        alice = token;
        code = enrolCode;
        await inspect(page, 'console-person-added');
      } else {
        bob = token;
      }
    }
    // An invalid name is refused with the host's reason, and nobody is added.
    await page.getByLabel('Name (a to z', { exact: false }).fill('Not A Name');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.locator('#console-add-result.error').waitFor({ timeout: WAIT_MS });
    check(await page.locator('#console-people > li[data-user]').count() === 2, 'the people listed');
    // Revoking says what it does before it is done.
    const card = page.locator('#console-people > li[data-user="bob"]');
    const said = await card.locator('.revoke-person').textContent();
    for (const words of ['her 1 working token stops working at once', 'enrolment codes not used yet are voided', 'no tool is revoked', 'she has no device to retire', 'conversations, proposals and journal entries stay']) {
      check(said.includes(words), `revoking bob does not say "${words}": ${said}`);
    }
    await inspect(page, 'console-people');
    await approvesNothing(page, 'People');
  });

  await step('she deploys the example agent by uploading its signed pack', async () => {
    await go(page, 'Agents', 'console-agents-view');
    await page.locator('#console-deploy-file').setInputFiles(env.KEEP_PACK);
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.locator('#console-deploy-result.ok', { hasText: 'Deployed helper version 1' }).waitFor({ timeout: WAIT_MS });
    const card = page.locator('#console-agents > li[data-agent="helper"]');
    await card.waitFor({ timeout: WAIT_MS });
    const text = await card.textContent();
    check(text.includes('in force') && text.includes('version 1') && text.includes("The host's model: it may ask it."), `the agent's card: ${text}`);
    // The same file again is refused: its version is not above the one in force.
    await page.locator('#console-deploy-file').setInputFiles(env.KEEP_PACK);
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.locator('#console-deploy-result.error').waitFor({ timeout: WAIT_MS });
    await inspect(page, 'console-agents');
    await approvesNothing(page, 'Agents');
  });

  await step('she puts alice\'s signed ceiling in force and sees its version', async () => {
    await go(page, 'Ceilings', 'console-ceilings-view');
    const card = page.locator('#console-ceilings > li[data-user="alice"]');
    await card.filter({ hasText: 'The empty ceiling applies' }).waitFor({ timeout: WAIT_MS });
    await card.locator('input[type="file"]').setInputFiles(env.KEEP_CEILING);
    await card.getByRole('button', { name: 'Put it in force for alice' }).click();
    await page.locator('#console-ceilings-result.ok', { hasText: "alice's ceiling version 1 is in force" }).waitFor({ timeout: WAIT_MS });
    await page.locator('#console-ceilings > li[data-user="alice"]', { hasText: 'Version 1 in force' }).waitFor({ timeout: WAIT_MS });
    await inspect(page, 'console-ceilings');
  });

  await step('the host\'s settings show read only', async () => {
    await go(page, 'Host', 'console-host-view');
    const facts = page.locator('#console-host');
    await facts.filter({ hasText: 'Loopback ports opened to cells' }).waitFor({ timeout: WAIT_MS });
    const text = await facts.textContent();
    check(text.includes(env.KEEP_UPSTREAM_PORT) && text.includes('SQLite'), `the host's settings: ${text}`);
    check(await page.locator('#console-host input, #console-host select, #console-host button').count() === 0, 'the settings can be changed here');
    await inspect(page, 'console-host');
  });

  saveState({ alice, bob, code });
  await operator.close();
}

async function revokePhase() {
  const operator = await openAs(env.KEEP_OPERATOR, 'operator', 'chat-view');
  const { page } = operator;

  await step('the operator sees alice\'s tool and revokes it in the console', async () => {
    await go(page, 'Tools', 'console-tools-view');
    const card = page.locator('#console-tools > li[data-tool="u/alice/fetch"]');
    await card.waitFor({ timeout: WAIT_MS });
    check((await card.textContent()).includes('Approved on her device “alice laptop”'), `the tool card: ${await card.textContent()}`);
    await approvesNothing(page, 'Tools');
    await inspect(page, 'console-tools');
    await card.getByRole('button', { name: 'Revoke u/alice/fetch' }).click();
    await page.locator('#console-tools-result.ok', { hasText: 'Revoked u/alice/fetch' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#console-tools > li[data-tool="u/alice/fetch"]', { hasText: 'revoked' }).waitFor({ timeout: WAIT_MS });
  });

  await step('the operator\'s journal shows each step, the console\'s as the operator\'s, and holds', async () => {
    await go(page, 'Journal', 'console-journal-view');
    await page.locator('#console-chain.ok').waitFor({ timeout: WAIT_MS });
    await page.locator('#console-recheck.ok').waitFor({ timeout: WAIT_MS });
    const byOperator = (kind, action) => page.locator(`#console-journal > li[data-kind="${kind}"][data-actor="operator"]${action ? `[data-action="${action}"]` : ''}`);
    for (const [kind, action] of [['token', null], ['enrol_code', null], ['deploy', null], ['ceiling', null], ['tool', 'revoke']]) {
      check(await byOperator(kind, action).count() > 0, `no ${kind}${action ? ` ${action}` : ''} entry by the operator`);
    }
    check(await page.locator('#console-journal > li[data-kind="deploy"]').count() >= 2, 'both deploys are not there');
    for (const kind of ['proposal', 'egress', 'session', 'device']) {
      check(await page.locator(`#console-journal > li[data-kind="${kind}"]`).count() > 0, `alice's ${kind} step is not there`);
    }
    await shoot(page, 'console-journal-all');
    // Filtered: what is about alice, of one kind.
    await page.getByLabel('About').fill('alice');
    await page.getByLabel('Kind').selectOption('tool');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    // The unfiltered list held these entries too: wait for the list drawn for this filter.
    await page.locator('#console-journal[data-query="user=alice&kind=tool"][aria-busy="false"]').waitFor({ timeout: WAIT_MS });
    check(await page.locator('#console-journal > li[data-kind="tool"][data-action="revoke"]').count() > 0, 'the filtered journal lacks the revoke');
    const kinds = await page.locator('#console-journal > li').evaluateAll((items) => items.map((item) => item.dataset.kind));
    check(kinds.length > 0 && kinds.every((kind) => kind === 'tool'), `the filtered journal: ${kinds}`);
    const text = await page.locator('#console-journal').textContent();
    check(!text.includes('please fetch') && !text.includes('notes.txt'), 'the journal holds words of her conversation');
    await inspect(page, 'console-journal');
  });

  await step('revoking bob needs its box ticked, and says what it did', async () => {
    await go(page, 'People', 'console-people-view');
    const card = page.locator('#console-people > li[data-user="bob"]');
    await card.getByRole('button', { name: 'Revoke bob' }).click();
    await card.locator('.result.error', { hasText: 'Tick' }).waitFor({ timeout: WAIT_MS });
    await card.getByLabel('I want bob revoked').check();
    await card.getByRole('button', { name: 'Revoke bob' }).click();
    await page.locator('#console-people-result.ok', { hasText: 'Revoked bob: 1 token' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#console-people > li[data-user="bob"]', { hasText: '0 tokens working, 1 revoked' }).waitFor({ timeout: WAIT_MS });
    const { bob } = state();
    const answer = await page.evaluate(async (token) => (await fetch('/v1/whoami', { headers: { Authorization: `Bearer ${token}` } })).status, bob);
    check(answer === 401, `bob's token answers ${answer} after he was revoked`);
  });
  await operator.close();
}

async function before() {
  const { alice: aliceToken, bob: bobToken, code } = state();
  env.KEEP_ALICE = aliceToken;
  env.KEEP_BOB = bobToken;
  env.KEEP_ALICE_CODE = code;
  const alice = await openAs(env.KEEP_ALICE, 'alice');
  const { page } = alice;
  let id;

  await step('a person sees her views and none of the assistant', async () => {
    for (const link of ['Agents', 'Conversations', 'Proposals', 'Tools', 'Journal', 'Device']) {
      check(await page.getByRole('link', { name: link, exact: true }).isVisible(), `no ${link} link`);
    }
    for (const link of ['Chat', 'Settings']) {
      check(!(await page.getByRole('link', { name: link, exact: true }).isVisible()), `the assistant's ${link} shows`);
    }
  });

  await step('the agents say what each may reach, in words', async () => {
    await go(page, 'Agents', 'keep-agents-view');
    const card = page.locator('#keep-agents > li', { hasText: 'helper' });
    await card.waitFor({ timeout: WAIT_MS });
    const text = await card.textContent();
    for (const words of ['The network: nothing outside its cell.', "The host's model: it may ask it.", 'No credentials.', 'Your memory: none of it.', 'Per message: at most 64 MiB']) {
      check(text.includes(words), `the agent's card lacks "${words}": ${text}`);
    }
    await inspect(page, 'agents');
  });

  await step('she starts a conversation and the agent answers through the host model', async () => {
    await page.getByRole('button', { name: 'Talk to helper' }).click();
    await page.locator('#keep-talk-view:not([hidden])').waitFor({ timeout: WAIT_MS });
    id = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
    check(id.startsWith('ks-'), `the conversation's address: ${page.url()}`);
    await page.getByLabel('Your message').fill('hello, what can you do for me?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.locator('#keep-talk-state', { hasText: 'Working on your message' }).waitFor({ timeout: WAIT_MS });
    await entries(page, 'agent').first().waitFor({ timeout: REPLY_MS });
    check((await entries(page, 'agent').first().textContent()).trim().length > 'helper'.length, 'the reply is empty');
    check((await page.locator('#keep-talk-title').textContent()).startsWith('helper: hello, what can you do'), 'the title is not the first words');
  });

  await step('a plan she asked for in words arrives in the conversation and she accepts it', async () => {
    await send(page, 'could you make me a plan for tidying the garage this weekend?', 2);
    const plan = page.locator('#keep-conversation > li[data-kind="plan"]');
    await plan.waitFor({ timeout: WAIT_MS });
    await plan.getByRole('button', { name: 'Accept' }).click();
    await page.locator('#keep-conversation > li[data-kind="plan"] .badge.state-accepted').waitFor({ timeout: WAIT_MS });
  });

  await step('a tool she asked for in words arrives with a link to its review', async () => {
    await send(page, `I need a tool that fetches ${address}`, 3);
    await page.locator('#keep-conversation a[href^="#keep/proposal/kt-"]').waitFor({ timeout: WAIT_MS });
    await inspect(page, 'conversation');
  });

  await step('she enrols this browser and approves the tool on it', async () => {
    await go(page, 'Device', 'keep-device-view');
    await page.locator('#device-label').fill('alice laptop');
    await page.locator('#enrol-code').fill(env.KEEP_ALICE_CODE);
    await page.getByRole('button', { name: 'Enrol this browser' }).click();
    await page.locator('#keep-device-result.ok').waitFor({ timeout: WAIT_MS });
    await page.goto(`${base}/#keep/conversation/${encodeURIComponent(id)}`);
    await page.locator('#keep-conversation a[href^="#keep/proposal/kt-"]').click();
    await page.getByRole('button', { name: 'Approve on this device' }).click();
    const result = page.locator('#keep-review-result');
    await result.filter({ hasText: 'deployed as u/alice/fetch' }).waitFor({ timeout: WAIT_MS });
    // Her tools name the device that approved it by its label.
    await go(page, 'Tools', 'keep-tools-view');
    await page.locator('#keep-tools > li', { hasText: 'approved on your device “alice laptop”' }).waitFor({ timeout: WAIT_MS });
  });

  await step('its network use waits in the conversation, names the tool, and goes out when approved', async () => {
    await page.goto(`${base}/#keep/conversation/${encodeURIComponent(id)}`);
    await page.getByLabel('Your message').fill(`please fetch ${address}`);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const waiting = page.locator('#keep-conversation > li.approval');
    await waiting.waitFor({ timeout: REPLY_MS });
    const text = await waiting.textContent();
    check(text.includes('Tool') && text.includes('u/alice/fetch'), `the waiting use does not name the tool: ${text}`);
    check(text.includes('no body'), `a use with no body does not say so: ${text}`);
    await shoot(page, 'waiting-use');
    await waiting.getByRole('button', { name: 'Approve' }).click();
    await entries(page, 'agent').nth(3).waitFor({ timeout: REPLY_MS });
    await entries(page, 'network').first().waitFor({ timeout: WAIT_MS });
    check((await entries(page, 'network').first().textContent()).includes('you approved it'), 'the network entry does not say she approved it');
  });

  await step('what the tool read taints the conversation, and the banner says when and why', async () => {
    const banner = page.locator('#keep-talk-taint');
    await banner.waitFor({ state: 'visible', timeout: WAIT_MS });
    const text = await banner.textContent();
    check(text.includes(`an egress answer from ${address}`) && text.includes('tainted since'), `the banner: ${text}`);
  });

  await step('she hands it a file from the page, and the conversation keeps its name and size', async () => {
    await page.locator('#keep-talk-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('one\ntwo\n') });
    await page.getByRole('button', { name: 'Upload' }).click();
    await entries(page, 'file').first().waitFor({ timeout: REPLY_MS });
    await entries(page, 'agent').nth(4).waitFor({ timeout: REPLY_MS });
    check((await entries(page, 'file').first().textContent()).includes('notes.txt (8 bytes)'), 'the file entry');
    await inspect(page, 'conversation-tainted');
  });

  await step('her conversations list it, newest first, with how many run', async () => {
    await go(page, 'Conversations', 'keep-conversations-view');
    await page.locator('#keep-conversations-result', { hasText: '1 of 4 running at once' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#keep-conversations > li', { hasText: 'helper: hello' }).waitFor({ timeout: WAIT_MS });
    check(await page.locator('#keep-conversations > li').count() === 1, 'the conversations listed');
    await inspect(page, 'conversations');
  });

  await step('bob sees none of it', async () => {
    const bob = await openAs(env.KEEP_BOB, 'bob');
    await go(bob.page, 'Conversations', 'keep-conversations-view');
    await bob.page.locator('#keep-conversations > li.muted').waitFor({ timeout: WAIT_MS });
    await bob.page.goto(`${base}/#keep/conversation/${encodeURIComponent(id)}`);
    await bob.page.locator('#keep-talk-result.error').waitFor({ timeout: WAIT_MS });
    check(await bob.page.locator('#keep-conversation > li').count() === 0, 'bob sees entries of alice\'s conversation');
    await go(bob.page, 'Proposals', 'keep-proposals-view');
    await bob.page.locator('#keep-approvals > li.muted').waitFor({ timeout: WAIT_MS });
    check(await bob.page.locator('#keep-tool-proposals a, #keep-other-proposals li[data-id]').count() === 0, 'bob sees alice\'s proposals');
    await bob.close();
  });

  saveState({ id });
  await alice.close();
}

async function after() {
  const { id, alice: aliceToken } = state();
  const alice = await openAs(aliceToken, 'alice');
  const { page } = alice;

  await step('after a restart she reads the whole conversation again', async () => {
    await page.goto(`${base}/#keep/conversation/${encodeURIComponent(id)}`);
    await entries(page, 'agent').nth(4).waitFor({ timeout: WAIT_MS });
    check(await entries(page, 'person').count() === 4, `her messages: ${await entries(page, 'person').count()}`);
    check(await entries(page, 'file').count() === 1, 'the file is not there');
    check(await entries(page, 'network').count() >= 1, 'the network use is not there');
    await page.locator('#keep-conversation > li[data-kind="plan"] .badge.state-accepted').waitFor({ timeout: WAIT_MS });
    await page.locator('#keep-conversation a[href^="#keep/proposal/kt-"]').waitFor({ timeout: WAIT_MS });
    check((await page.locator('#keep-talk-state').textContent()).includes('the host restarted'), `the end: ${await page.locator('#keep-talk-state').textContent()}`);
    check(await page.getByLabel('Your message').count() === 0, 'an ended conversation offers to send');
    await inspect(page, 'conversation-after-restart');
  });

  await step('the tool the operator revoked is refused in a new conversation, with the reason', async () => {
    await go(page, 'Agents', 'keep-agents-view');
    await page.getByRole('button', { name: 'Talk to helper' }).click();
    await page.locator('#keep-talk-view:not([hidden])').waitFor({ timeout: WAIT_MS });
    await send(page, `please fetch ${address}`, 1);
    const reply = await entries(page, 'agent').first().textContent();
    check(/refused|no tool/i.test(reply), `the reply does not say the tool was refused: ${reply}`);
    await shoot(page, 'revoked-tool');
  });
  await alice.close();
}

await ({ console: consolePhase, before, revoke: revokePhase, after }[phase])();
if (problems.length) fail(problems.join('\n'));
console.log(`the talk page's ${phase} checks passed`);
process.exit(0);

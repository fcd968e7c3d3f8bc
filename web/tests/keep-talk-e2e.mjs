// A person talking to an agent in the page (docs/keep/page.md): Debian's chromium driven by
// playwright-core against `imurun serve --keep` with the embedded model and the example agent
// `helper` deployed by `imurun keep deploy` (crates/imurun/tests/all/keep_talk_page.rs sets it
// up, runs this before the host restarts and again after).
//
//   KEEP_ALICE=imk_... KEEP_BOB=imk_... KEEP_ALICE_CODE=... KEEP_UPSTREAM_PORT=N KEEP_STATE=FILE
//   node web/tests/keep-talk-e2e.mjs <base url> <artifacts dir> before|after
//
// Before: alice reads what the agent may reach, starts a conversation in words, sees its reply,
// accepts the plan it proposed because she asked, approves the tool it proposed on her device,
// approves its network use in the conversation, hands it a file (the taint banner shows); bob
// sees none of it. After: alice reads the whole conversation again, ended by the restart; a new
// conversation's use of the tool, revoked meanwhile by the operator, shows the host's refusal.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { WAIT_MS, axe, check, fail, launch, noSidewaysScroll } from './browser.mjs';

const [baseUrl, artifacts, phase] = process.argv.slice(2);
const env = {};
for (const name of ['KEEP_ALICE', 'KEEP_BOB', 'KEEP_ALICE_CODE', 'KEEP_UPSTREAM_PORT', 'KEEP_STATE']) {
  env[name] = process.env[name];
  if (!env[name]) fail(`${name} is not set (crates/imurun/tests/all/keep_talk_page.rs sets it)`);
}
if (!baseUrl || !artifacts || !['before', 'after'].includes(phase)) {
  fail('usage: node keep-talk-e2e.mjs <base url> <artifacts dir> before|after');
}
const base = baseUrl.replace(/\/$/, '');
const address = `http://127.0.0.1:${env.KEEP_UPSTREAM_PORT}/weather`;
const problems = [];
/** The page the last step worked in: shot when a step fails. */
let lastPage = null;
/** Replies from the model take a while on a small machine. */
const REPLY_MS = 90000;

async function openAs(token, who) {
  const browser = await launch();
  const page = browser.context.pages()[0] || await browser.context.newPage();
  page.on('pageerror', (error) => problems.push(`${who}: page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of (401|404|409)/.test(message.text())) problems.push(`${who}: console: ${message.text()}`);
  });
  lastPage = page;
  await page.goto(base);
  await page.getByLabel('Token', { exact: true }).fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.locator('#keep-proposals-view:not([hidden])').waitFor({ timeout: WAIT_MS });
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

async function before() {
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

  writeFileSync(env.KEEP_STATE, JSON.stringify({ id }));
  await alice.close();
}

async function after() {
  const { id } = JSON.parse(readFileSync(env.KEEP_STATE, 'utf8'));
  const alice = await openAs(env.KEEP_ALICE, 'alice');
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

await (phase === 'before' ? before() : after());
if (problems.length) fail(problems.join('\n'));
console.log(`the talk page's ${phase} checks passed`);
process.exit(0);

// A Keep host's review screens in a real browser (docs/keep/page.md): Debian's chromium driven
// by playwright-core, against `imurun serve --keep` with users alice and bob and the scripted
// agent `maker` deployed (crates/imurun/tests/all/keep_page.rs sets it up and runs this).
//
//   IMURUN_BIN=... IMURUN_HOME=... KEEP_OPERATOR=imk_... KEEP_ALICE=imk_... KEEP_BOB=imk_... KEEP_ALICE_CODE=...
//   KEEP_TOOL_WASM=pure_tool.wasm KEEP_UPSTREAM_PORT=N KEEP_UPSTREAM_BODY=...
//   node web/tests/keep-e2e.mjs <base url> <artifacts dir>
//
// This script plays alice's agent through the API (sessions, messages, a file that taints one)
// and checks, in alice's and bob's browsers, what each page shows and what alice's device
// signs. Exits 1 with a message on the first failed check.

import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { WAIT_MS, axe, check, fail, launch, noSidewaysScroll } from './browser.mjs';

const [baseUrl, artifacts] = process.argv.slice(2);
const env = {};
for (const name of ['IMURUN_BIN', 'IMURUN_HOME', 'KEEP_OPERATOR', 'KEEP_ALICE', 'KEEP_BOB', 'KEEP_ALICE_CODE', 'KEEP_TOOL_WASM', 'KEEP_UPSTREAM_PORT', 'KEEP_UPSTREAM_BODY']) {
  env[name] = process.env[name];
  if (!env[name]) fail(`${name} is not set (crates/imurun/tests/all/keep_page.rs sets it)`);
}
if (!baseUrl || !artifacts) fail('usage: node keep-e2e.mjs <base url> <artifacts dir>');
const base = baseUrl.replace(/\/$/, '');
const work = mkdtempSync(join(tmpdir(), 'imurun-keep-page-'));
const upstream = `http://127.0.0.1:${env.KEEP_UPSTREAM_PORT}`;

// The agent's side, through the API --------------------------------------------------------

async function call(token, method, path, body) {
  const init = { method, headers: { Authorization: `Bearer ${token}` } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`${base}${path}`, init);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

async function expectStatus(answer, status, what) {
  const got = await answer;
  check(got.status === status, `${what}: ${got.status} ${JSON.stringify(got.body)}`);
  return got.body;
}

async function newSession() {
  return (await expectStatus(call(env.KEEP_ALICE, 'POST', '/v1/sessions', { agent: 'maker' }), 201, 'a session')).id;
}

/** One message to the scripted agent (docs in examples/keep/scripted-agent): its first reply. */
async function say(session, step) {
  const body = await expectStatus(
    call(env.KEEP_ALICE, 'POST', `/v1/sessions/${session}/messages`, { text: JSON.stringify(step) }),
    200, `the message ${JSON.stringify(step).slice(0, 80)}`);
  return body.replies[0];
}

const toolBundle = readFileSync(env.KEEP_TOOL_WASM).toString('base64');

/** The agent in `session` proposes a tool (the pure tool's component, sent in pieces). */
async function proposeTool(session, name, version, description, extra = {}) {
  for (let at = 0; at < toolBundle.length; at += 40000) await say(session, { buffer: toolBundle.slice(at, at + 40000) });
  const manifest = {
    name, version, resources: { memory_mb: 16, cpu_ms: 200, timeout_ms: 2000 }, approval_timeout_s: 30, ...extra,
  };
  const answer = await say(session, { emit: { type: 'tool.propose', name, description, bundle: '$buffer', manifest } });
  check(answer === 'emitted', `the proposal of ${name} was refused: ${answer}`);
}

/** Runs one SQL statement on the host's database behind its back (rows as tab-separated lines). */
function sql(statement, ...args) {
  return execFileSync('python3', ['-c', `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
cursor = db.execute(sys.argv[2], sys.argv[3:])
print("\\n".join("\\t".join(str(v) for v in row) for row in cursor.fetchall()))
db.commit()`, join(env.IMURUN_HOME, 'imurun.db'), statement, ...args]).toString().trim();
}

function imurun(...args) {
  return execFileSync(env.IMURUN_BIN, args, { env: { ...process.env, IMURUN_HOME: env.IMURUN_HOME } });
}

// The browser's side -----------------------------------------------------------------------

const problems = [];

/**
 * A browser signed in with `token`. Console errors fail the run, but for the 401 of the
 * health check before the token (the browser logs it) and those `expected` names.
 */
async function openAs(token, who, expected = [], first = '#keep-proposals-view', initScript = null) {
  const browser = await launch();
  const page = browser.context.pages()[0] || await browser.context.newPage();
  if (initScript) await page.addInitScript(initScript);
  const allowed = [/status of 401/, ...expected];
  page.on('pageerror', (error) => problems.push(`${who}: page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !allowed.some((pattern) => pattern.test(message.text()))) {
      problems.push(`${who}: console: ${message.text()}`);
    }
  });
  await page.goto(base);
  await page.getByLabel('Token', { exact: true }).fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.locator(`${first}:not([hidden])`).waitFor({ timeout: WAIT_MS });
  return { ...browser, page, allow: (pattern) => allowed.push(pattern) };
}

async function view(page, name) {
  await page.getByRole('link', { name, exact: true }).click();
  await page.locator(`#keep-${name.toLowerCase()}-view:not([hidden])`).waitFor({ timeout: WAIT_MS });
}

async function shoot(page, name) {
  await page.screenshot({ path: join(artifacts, `keep-${name}.png`), fullPage: true });
}

/** axe-core, 360 px without sideways scrolling, and a screenshot at both widths. */
async function inspect(page, name) {
  await axe(page, `the Keep ${name} view`);
  await shoot(page, name);
  const size = page.viewportSize();
  await page.setViewportSize({ width: 360, height: 740 });
  await noSidewaysScroll(page, `the Keep ${name} view`);
  await axe(page, `the Keep ${name} view at 360 px`);
  await shoot(page, `${name}-360`);
  await page.setViewportSize(size);
}

function toolProposal(page, name, version) {
  return page.locator('#keep-tool-proposals > li').filter({ hasText: `${name} version ${version}` });
}

async function openReview(page, name, version) {
  await view(page, 'Proposals');
  const item = toolProposal(page, name, version);
  await item.waitFor({ timeout: WAIT_MS });
  await item.getByRole('link').click();
  await page.locator('#keep-review-view:not([hidden]) .decide, #keep-review-view:not([hidden]) .badge').first().waitFor({ timeout: WAIT_MS });
  await page.getByRole('heading', { name: new RegExp(`^${name} version ${version}`) }).waitFor({ timeout: WAIT_MS });
}

/** The text of the first of `locator`'s elements that shows any, once one does. */
async function resultText(locator) {
  const shown = locator.filter({ hasText: /\S/ }).first();
  await shown.waitFor({ timeout: WAIT_MS });
  return shown.textContent();
}

// The run ----------------------------------------------------------------------------------

const STEPS = [];
function step(name, run) {
  STEPS.push({ name, run });
}

let alice;
let bob;
let clean;
let tainted;
const DESCRIPTION = 'Fetches a forecast.\u001b[31m Looks red\u001b[0m, and \u202Eexe.evil\u202C backwards.';

step('alice signs in and sees only her views', async () => {
  alice = await openAs(env.KEEP_ALICE, 'alice');
  const { page } = alice;
  check((await page.locator('#who').textContent()) === 'Signed in as alice', 'the page does not say alice is signed in');
  for (const name of ['Proposals', 'Tools', 'Journal', 'Device']) {
    check(await page.getByRole('link', { name, exact: true }).isVisible(), `no ${name} link`);
  }
  for (const name of ['Chat', 'Settings']) {
    check(!(await page.getByRole('link', { name, exact: true }).isVisible()), `the assistant's ${name} shows to a user`);
  }
  check(!(await page.locator('#sessions').isVisible()), 'the assistant\'s sessions show to a user');
  await page.locator('#keep-live').filter({ hasText: 'Live' }).waitFor({ timeout: WAIT_MS });
  // The note is written once the proposals are read, apart from the live stream.
  await page.locator('#keep-device-note').filter({ hasText: 'not one of your devices' }).waitFor({ timeout: WAIT_MS })
    .catch(() => fail('the page does not say the browser is no device yet'));
});

step('the browser enrols as alice\'s device with a code; its key cannot be read back', async () => {
  const { page } = alice;
  await view(page, 'Device');
  await inspect(page, 'enrol');
  await page.getByLabel('A name for this device', { exact: true }).fill('alice’s browser');
  await page.getByLabel('Enrolment code', { exact: true }).fill(env.KEEP_ALICE_CODE);
  await page.getByRole('button', { name: 'Enrol this browser' }).click();
  // Success shows above the view, a refusal under the forms.
  const text = await resultText(page.locator('#keep-device-result, #keep-enrol-result'));
  check(text.startsWith('Enrolled'), `not enrolled: ${text}`);
  const listed = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/devices'), 200, 'alice\'s devices');
  check(listed.devices.length === 1 && listed.devices[0].label === 'alice’s browser', `the host lists ${JSON.stringify(listed)}`);
  const key = await page.evaluate(() => new Promise((resolve, reject) => {
    const open = indexedDB.open('imurun-keep');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const get = open.result.transaction('devices').objectStore('devices').get('alice');
      get.onsuccess = async () => {
        const record = get.result;
        let exported = 'exported';
        try {
          await crypto.subtle.exportKey('pkcs8', record.privateKey);
        } catch (error) {
          exported = error.name;
        }
        resolve({ extractable: record.privateKey.extractable, algorithm: record.privateKey.algorithm.name, exported, key_id: record.key_id });
      };
    };
  }));
  check(key.algorithm === 'Ed25519' && key.extractable === false && key.exported === 'InvalidAccessError',
    `the device's private key is not a non-extractable Ed25519 key: ${JSON.stringify(key)}`);
  check(key.key_id === listed.devices[0].key_id, 'the browser keeps another key than the host enrolled');
  await inspect(page, 'device');
});

step('a second browser enrols as alice\'s device, approved from the first', async () => {
  const second = await openAs(env.KEEP_ALICE, 'alice\'s second browser');
  try {
    const page = second.page;
    await view(page, 'Device');
    await page.getByLabel('A name for this device', { exact: true }).fill('alice’s laptop');
    await page.getByRole('button', { name: 'Show this browser’s public key' }).click();
    const shown = await resultText(page.locator('#keep-new-key'));
    const publicKey = shown.replace('Public key: ', '').trim();
    check(/^[0-9a-f]{64}$/.test(publicKey), `the new browser shows no public key: ${shown}`);
    // The first browser signs the enrolment.
    await view(alice.page, 'Device');
    await alice.page.getByLabel('The new device’s public key (64 hexadecimal characters)').fill(publicKey);
    await alice.page.getByRole('button', { name: 'Sign its enrolment' }).click();
    const signed = await resultText(alice.page.locator('#keep-other-result'));
    check(signed.startsWith('Signed'), `the first browser did not sign: ${signed}`);
    const decision = await alice.page.locator('#other-decision').inputValue();
    check(JSON.parse(decision).signed.kind === 'enrol_device', `the first browser signed ${decision}`);
    await page.getByLabel('The signed decision', { exact: true }).fill(decision);
    await page.getByRole('button', { name: 'Enrol with the decision' }).click();
    const text = await resultText(page.locator('#keep-device-result, #keep-enrol-result'));
    check(text.startsWith('Enrolled'), `the second browser was not enrolled: ${text}`);
    const { devices } = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/devices'), 200, 'alice\'s devices');
    check(devices.map((d) => d.label).sort().join() === 'alice’s browser,alice’s laptop', `the host lists ${JSON.stringify(devices)}`);
    // The same decision cannot enrol anything again.
    const again = await call(env.KEEP_ALICE, 'POST', '/v1/devices', { public_key: publicKey, label: 'again', possession: '00'.repeat(64), decision: JSON.parse(decision) });
    check(again.status >= 400, `a used enrolment decision answered ${again.status}`);
  } finally {
    await second.close();
  }
});

step('a proposal appears for alice without a reload, and never for bob', async () => {
  const { page } = alice;
  await view(page, 'Proposals');
  // Bob's page is open before alice's agent proposes anything (and later sent to alice's
  // proposal: the host answers 404, which the browser logs).
  bob = await openAs(env.KEEP_BOB, 'bob', [/status of 404/]);
  check((await bob.page.locator('#who').textContent()) === 'Signed in as bob', 'bob is not signed in');
  await bob.page.locator('#keep-live').filter({ hasText: 'Live' }).waitFor({ timeout: WAIT_MS });
  clean = await newSession();
  await proposeTool(clean, 'weather', 1, DESCRIPTION, {
    egress: {
      mode: 'allow',
      rules: [
        { scheme: 'https', host: 'api.weather.example', port: 443, methods: ['GET'], path_prefix: '/' },
        { scheme: 'https', host: 'mail.example', port: 443, methods: ['POST'], path_prefix: '/send' },
        { scheme: 'https', host: 'evil.example', port: 443, methods: ['GET'], path_prefix: '/' },
      ],
    },
    credentials: [{ name: 'weather', bind: { host: 'api.weather.example', port: 443, methods: ['GET'], path_prefix: '/' }, header: 'X-Api-Key' }],
  });
  await toolProposal(page, 'weather', 1).waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('the proposal did not appear without a reload'); });
  const id = await toolProposal(page, 'weather', 1).getAttribute('data-id');
  // Whatever reached alice's page live had time to reach bob's too.
  await bob.page.waitForTimeout(500);
  await bob.page.locator('#keep-tool-proposals li').first().waitFor({ timeout: WAIT_MS });
  check((await bob.page.locator('#keep-tool-proposals').textContent()).includes('No tool has been proposed'), 'bob sees a tool proposal');
  check(!(await bob.page.content()).includes('weather'), 'bob\'s page mentions alice\'s tool');
  await expectStatus(call(env.KEEP_BOB, 'GET', `/v1/proposals/${id}`), 404, 'bob reading alice\'s proposal');
  await bob.page.goto(`${base}/#keep/proposal/${id}`);
  await bob.page.locator('#keep-review .error').waitFor({ timeout: WAIT_MS });
  check(!(await bob.page.locator('#keep-review').textContent()).includes('weather'), 'bob\'s review view shows alice\'s tool');
  await bob.close();
  bob = null;
});

step('the review shows each new host and credential, what the ceiling drops, and the description escaped', async () => {
  const { page } = alice;
  await openReview(page, 'weather', 1);
  const changes = await page.locator('.authority-diff li.change').evaluateAll((items) => items.map((item) => ({ class: item.dataset.class, text: item.textContent })));
  for (const host of ['api.weather.example', 'mail.example', 'evil.example']) {
    check(changes.some((change) => change.class === 'new_host' && change.text.includes(host)), `the diff does not show the new host ${host}: ${JSON.stringify(changes)}`);
  }
  check(changes.some((change) => change.class === 'credential_reach' && change.text.includes('weather')), `the diff does not show the credential: ${JSON.stringify(changes)}`);
  check(await page.locator('.authority-diff mark').count() === changes.length, 'a change is not highlighted');
  check(await page.locator('.no-new-authority').count() === 0, '"no new authority" shows beside a diff');
  check((await page.locator('.new-authority-block').textContent()).includes(`${changes.length} new authorities`), 'the count of new authorities is missing');
  check((await page.locator('ul.dropped').textContent()).includes('evil.example'), 'what the ceiling drops is not shown');
  check(!(await page.locator('pre.manifest').textContent()).includes('evil.example'), 'the clamped manifest keeps what the ceiling drops');
  const description = await page.locator('pre.description').textContent();
  check(description.includes('\\u{001B}[31m') && description.includes('\\u{202E}') && description.includes('\\u{202C}'),
    `the description's escapes are not shown: ${JSON.stringify(description)}`);
  const raw = await page.evaluate(() => document.body.innerText);
  check(!/[\u001b\u202a-\u202e\u2066-\u2069]/.test(raw), 'a control or bidi character reached the page as itself');
  await inspect(page, 'review');
  // A host (or anything between) that hides the new authority gets nothing signed: what the
  // review says about authority is hashed into the decision.
  await page.route('**/v1/proposals/kt-*', async (route) => {
    const answer = await route.fetch();
    const body = await answer.json();
    Object.assign(body, { authority_diff: [], granted_diff: [], dropped: [], no_new_authority: true });
    await route.fulfill({ response: answer, json: body });
  });
  await page.reload();
  await page.locator('#keep-review [role="alert"]').filter({ hasText: 'other hashes' }).waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('a review that hides its new authority is not refused'); });
  check(await page.getByRole('button', { name: 'Approve on this device' }).count() === 0, 'a review that hides its new authority offers Approve');
  await page.unroute('**/v1/proposals/kt-*');
  // A proposal the host refuses (its row edited in the database) can be denied, never approved.
  await page.route('**/v1/proposals/kt-*', async (route) => {
    const answer = await route.fetch();
    const body = await answer.json();
    body.refused = 'the stored tool proposal is not sealed by this host: it was edited in the database';
    await route.fulfill({ response: answer, json: body });
  });
  await page.reload();
  await page.locator('#keep-review [role="alert"]').filter({ hasText: 'The host refuses this proposal' }).waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('a proposal the host refuses does not say so'); });
  await page.getByRole('button', { name: 'Deny on this device' }).waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('a proposal the host refuses cannot be denied'); });
  check(await page.getByRole('button', { name: 'Approve on this device' }).count() === 0, 'a proposal the host refuses offers Approve');
  await page.unroute('**/v1/proposals/kt-*');
  await page.reload();
  await page.getByRole('button', { name: 'Approve on this device' }).waitFor({ timeout: WAIT_MS });
});

let decisionEnvelope;
let signedText;

step('Approve signs in the browser; the tool becomes callable', async () => {
  const { page } = alice;
  const request = page.waitForRequest((r) => r.url().endsWith('/decision') && r.method() === 'POST');
  await page.getByRole('button', { name: 'Approve on this device' }).click();
  decisionEnvelope = JSON.parse((await request).postData()).decision;
  const result = await resultText(page.locator('#keep-review-result'));
  check(result === 'Approved on this device: deployed as u/alice/weather version 1.', `the result shown: ${result}`);
  signedText = await page.locator('#keep-signed').textContent();
  check(signedText.length > 0 && await page.locator('details.signed').isVisible(), 'what the device signed is not shown');
  const answer = await say(clean, { tool: { name: 'weather', args: { city: 'Oslo' } } });
  check(answer === '{"echo":{"city":"Oslo"}}', `the approved tool did not answer: ${answer}`);
  await inspect(page, 'review-approved');
});

step('the browser\'s signature verifies with the host\'s verifier, and the command line signs the same bytes', async () => {
  const decision = decisionEnvelope.signed;
  check(decision.type === 'imurun.decision' && decision.kind === 'approve_proposal' && decision.user === 'alice', `an odd decision: ${JSON.stringify(decision)}`);
  const documentPath = join(work, 'decision.json');
  // Written with its members in another order and spaced: canonical JSON must not care.
  writeFileSync(documentPath, JSON.stringify(Object.fromEntries(Object.entries(decision).reverse()), null, 3));
  const cliCanonical = imurun('keep', 'canonical', documentPath);
  check(Buffer.compare(cliCanonical, Buffer.from(signedText, 'utf8')) === 0,
    `the command line's canonical JSON differs from the browser's:\n  cli:     ${cliCanonical}\n  browser: ${signedText}`);
  const { devices } = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/devices'), 200, 'alice\'s devices');
  const browserKey = devices.find((d) => d.key_id === decision.device_key_id).public_key;
  const envelopePath = join(work, 'envelope.json');
  writeFileSync(envelopePath, JSON.stringify(decisionEnvelope));
  const verified = JSON.parse(imurun('keep', 'verify', '--public-key', browserKey, envelopePath));
  check(verified.valid === true, `imurun keep verify refuses the browser's signature: ${JSON.stringify(verified)}`);
  // The command line signs the same decision with a key of its own: its signature covers
  // exactly the bytes the browser signed.
  const keyPath = join(work, 'cli.key');
  const cliKey = JSON.parse(imurun('keep', 'keygen', '--out', keyPath));
  const cliEnvelope = JSON.parse(imurun('keep', 'sign', '--key', keyPath, documentPath));
  const publicKey = createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(cliKey.public_key, 'hex')]),
    format: 'der', type: 'spki',
  });
  check(verify(null, Buffer.from(signedText, 'utf8'), publicKey, Buffer.from(cliEnvelope.signature.sig, 'hex')),
    'the command line signed other bytes than the browser for the same decision');
  check(cliEnvelope.signed.nonce === decision.nonce, 'the command line changed the decision');
});

/** Documents whose canonical text tests RFC 8785's corners (each signable: a `type` first). */
const TRICKY = [
  { type: 't', '\uFB33': 1, '\u{1F600}': 2, 'é': 3, e: 4, '': 5, a: { z: [], y: {} } },
  { type: 't', text: '\u001f\u007f\u2028\u2029 "quoted" \\ back\tslash\n\r\b\f', astral: '😀𝄞', cjk: '漢字' },
  { type: 't', numbers: [0, -1, 1, 9007199254740991, -9007199254740991, 1000000, 100], t: true, f: false, n: null },
  { type: 't', nested: [[[[[[[['deep']]]]]]]], keys: { '\u0000': 'nul', '\u00e9': 'é', '\u0065\u0301': 'combining' } },
];

step('the page\'s canonical JSON is the command line\'s, byte for byte, on RFC 8785\'s corners', async () => {
  const { page } = alice;
  const texts = await page.evaluate(async (docs) => {
    const { canonicalJson } = await import('/assets/canonical.js');
    return docs.map((doc) => canonicalJson(doc));
  }, TRICKY);
  TRICKY.forEach((doc, index) => {
    const path = join(work, `tricky-${index}.json`);
    writeFileSync(path, JSON.stringify(doc, null, 1));
    const cli = imurun('keep', 'canonical', path);
    check(Buffer.compare(cli, Buffer.from(texts[index], 'utf8')) === 0,
      `document ${index}: the page writes ${JSON.stringify(texts[index])}, the command line ${JSON.stringify(cli.toString('utf8'))}`);
  });
});

step('a tainted proposal cannot be approved without ticking the confirm', async () => {
  const { page } = alice;
  await view(page, 'Proposals');
  tainted = await newSession();
  await expectStatus(call(env.KEEP_ALICE, 'POST', `/v1/sessions/${tainted}/files`, { name: 'inbox.txt', text: 'mail from a stranger' }), 200, 'the file');
  await proposeTool(tainted, 'notes', 1, 'Keeps notes.', {
    egress: { mode: 'allow', rules: [{ scheme: 'http', host: '127.0.0.1', port: Number(env.KEEP_UPSTREAM_PORT), methods: ['GET'], path_prefix: '/' }] },
  });
  await toolProposal(page, 'notes', 1).locator('.badge.taint').waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('the tainted proposal did not appear marked tainted'); });
  await openReview(page, 'notes', 1);
  const warning = await page.locator('.taint-warning').textContent();
  check(warning.includes('inbox.txt'), `the review does not say what tainted it: ${warning}`);
  let posted = 0;
  const count = (r) => { if (r.url().endsWith('/decision')) posted += 1; };
  page.on('request', count);
  await page.getByRole('button', { name: 'Approve on this device' }).click();
  const refused = await resultText(page.locator('#keep-review-result'));
  check(refused.startsWith('Tick the confirm first'), `approving without the confirm: ${refused}`);
  check(posted === 0, 'a decision was sent without the confirm');
  await inspect(page, 'review-tainted');
  await page.getByLabel('I know this tool was proposed by a tainted session, and approve it anyway.').check();
  await page.getByRole('button', { name: 'Approve on this device' }).click();
  await page.locator('#keep-review-result').filter({ hasText: 'deployed as u/alice/notes' }).waitFor({ timeout: WAIT_MS });
  page.off('request', count);
  check(posted === 1, `${posted} decisions were sent`);
});

step('a third proposal is denied on the device', async () => {
  const { page } = alice;
  await view(page, 'Proposals');
  await proposeTool(clean, 'other', 1, 'Not wanted.');
  await openReview(page, 'other', 1);
  check(await page.locator('.no-new-authority').count() === 1 && await page.locator('.authority-diff').count() === 0,
    'a tool with no new authority does not say so');
  // While one decision is on its way, the other button sends nothing.
  let decisions = 0;
  const count = (r) => { if (r.url().endsWith('/decision')) decisions += 1; };
  page.on('request', count);
  await page.route('**/decision', async (route) => {
    await new Promise((resolve) => { setTimeout(resolve, 1000); });
    await route.continue();
  });
  await page.getByRole('button', { name: 'Deny on this device' }).click();
  await page.getByRole('button', { name: 'Approve on this device' }).click({ force: true });
  const result = await resultText(page.locator('#keep-review-result'));
  check(result === 'Denied on this device.', `the result shown: ${result}`);
  page.off('request', count);
  await page.unroute('**/decision');
  check(decisions === 1, `${decisions} decisions were sent for one review`);
  const { tools } = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/proposals?kind=tool'), 200, 'the tool proposals');
  check(tools.find((t) => t.name === 'other').state === 'denied', 'the host did not record the denial');
});

step('tools: the tainted one asks until its taint is cleared on the device', async () => {
  const { page } = alice;
  await view(page, 'Tools');
  const notes = page.locator('#keep-tools > li[data-name="notes"]');
  await notes.waitFor({ timeout: WAIT_MS });
  check(await notes.getAttribute('data-mode') === 'ask', `the tainted tool's egress is ${await notes.getAttribute('data-mode')}`);
  check(await page.locator('#keep-tools > li[data-name="weather"]').getAttribute('data-mode') === 'allow', 'the clean tool does not allow');
  await inspect(page, 'tools');
  await notes.getByRole('button', { name: 'Clear taint of notes' }).click();
  check((await resultText(notes.locator('.result'))).startsWith('Tick the confirm first'), 'the taint was cleared without the confirm');
  // A host (or anything between) naming other hashes than the tool shown gets nothing signed.
  let cleared = 0;
  const count = (r) => { if (r.url().endsWith('/clear-taint')) cleared += 1; };
  page.on('request', count);
  await page.route('**/v1/tools', async (route) => {
    const answer = await route.fetch();
    const body = await answer.json();
    for (const tool of body.tools) if (tool.clear_taint) tool.clear_taint.hashes.manifest = 'f'.repeat(64);
    await route.fulfill({ response: answer, json: body });
  });
  await page.reload();
  await page.getByRole('link', { name: 'Tools', exact: true }).click();
  const lying = page.locator('#keep-tools > li[data-name="notes"]');
  await lying.getByRole('checkbox').check();
  await lying.getByRole('button', { name: 'Clear taint of notes' }).click();
  check((await resultText(lying.locator('.result'))).includes('other hashes'), 'the page signed a clear_taint for hashes it does not show');
  await page.unroute('**/v1/tools');
  // A tool row the host refuses (edited in the database) says so, and offers no clear.
  await page.route('**/v1/tools', async (route) => {
    const answer = await route.fetch();
    const body = await answer.json();
    for (const tool of body.tools) if (tool.name === 'notes') tool.refused = 'the stored tool is not sealed by this host: it was edited in the database';
    await route.fulfill({ response: answer, json: body });
  });
  await page.reload();
  await page.getByRole('link', { name: 'Tools', exact: true }).click();
  const edited = page.locator('#keep-tools > li[data-name="notes"]');
  await edited.locator('[role="alert"]').filter({ hasText: 'The host refuses this tool' }).waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('a tool the host refuses does not say so'); });
  check(await edited.getByRole('button', { name: 'Clear taint of notes' }).count() === 0, 'a tool the host refuses offers to clear its taint');
  check(await edited.getByRole('button', { name: 'Revoke notes' }).count() === 1, 'a tool the host refuses cannot be revoked');
  await page.unroute('**/v1/tools');
  await page.reload();
  await page.getByRole('link', { name: 'Tools', exact: true }).click();
  const real = page.locator('#keep-tools > li[data-name="notes"]');
  await real.getByRole('checkbox').check();
  await real.getByRole('button', { name: 'Clear taint of notes' }).click();
  await page.locator('#keep-tools-result').filter({ hasText: 'Taint cleared' }).waitFor({ timeout: WAIT_MS });
  page.off('request', count);
  check(cleared === 1, `${cleared} clear-taint requests were sent`);
  await page.locator('#keep-tools > li[data-name="notes"][data-mode="allow"]').waitFor({ timeout: WAIT_MS });
});

step('Revoke makes the tool uncallable at once', async () => {
  const { page } = alice;
  await page.getByRole('button', { name: 'Revoke weather' }).click();
  await page.locator('#keep-tools-result').filter({ hasText: 'Revoked weather' }).waitFor({ timeout: WAIT_MS });
  await page.locator('#keep-tools > li[data-name="weather"][data-mode="revoked"]').waitFor({ timeout: WAIT_MS });
  const answer = await say(clean, { tool: { name: 'weather', args: { city: 'Oslo' } } });
  check(answer.startsWith('refused: no tool named'), `the revoked tool still answers: ${answer}`);
  // A revoke made elsewhere (another device, the command line) shows without a reload.
  await expectStatus(call(env.KEEP_ALICE, 'POST', '/v1/tools/notes/revoke'), 200, 'revoking notes elsewhere');
  await page.locator('#keep-tools > li[data-name="notes"][data-mode="revoked"]').waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('a revoke made elsewhere did not show without a reload'); });
});

step('plans, suggestions, memory entries and cards: listed, decided, cards display only', async () => {
  const { page } = alice;
  await view(page, 'Proposals');
  check(await say(tainted, { emit: { type: 'plan', title: 'Tidy the inbox', steps: ['Read the mail', 'Archive the old'] } }) === 'emitted', 'the plan');
  check(await say(clean, { emit: { type: 'suggestion', title: 'A walk', text: 'Go for a walk at noon.' } }) === 'emitted', 'the suggestion');
  check(await say(clean, { emit: { type: 'memory.propose', text: 'Alice likes rain.' } }) === 'emitted', 'the memory entry');
  check(await say(clean, { emit: { type: 'card.propose', title: 'Weather in Oslo', body: 'Rain <b>after</b> noon, see https://example.org', fields: [{ label: 'High', value: '9 °C' }] } }) === 'emitted', 'the card');
  const item = (kind) => page.locator(`#keep-other-proposals > li[data-kind="${kind}"]`);
  await item('card').waitFor({ timeout: WAIT_MS }).catch(() => { throw new Error('the proposals did not appear without a reload'); });
  const card = item('card').locator('.keep-card');
  check((await card.textContent()).includes('Rain <b>after</b> noon'), 'the card\'s body is not shown as text');
  check(await card.locator('a, button, input, b, img').count() === 0, 'the card holds something that acts');
  await inspect(page, 'proposals');
  const plan = item('plan');
  check(await plan.locator('.badge.taint').count() === 1, 'the tainted plan is not marked');
  await plan.getByRole('button', { name: 'Accept' }).click();
  check((await resultText(plan.locator('.result'))).startsWith('Tick the confirm first'), 'a tainted plan was accepted without the confirm');
  await plan.getByRole('checkbox').check();
  await plan.getByRole('button', { name: 'Accept' }).click();
  await item('plan').locator('.badge.state-accepted').waitFor({ timeout: WAIT_MS });
  await item('suggestion').getByRole('button', { name: 'Reject' }).click();
  await item('suggestion').locator('.badge.state-rejected').waitFor({ timeout: WAIT_MS });
  await item('memory').getByRole('button', { name: 'Accept' }).click();
  await item('memory').locator('.badge.state-accepted').waitFor({ timeout: WAIT_MS });
  check((await say(clean, { memory: true })).includes('Alice likes rain.'), 'the accepted memory entry does not reach the agent');
});

step('egress uses waiting for alice appear live: approved, denied, and approved with a device signature', async () => {
  const { page } = alice;
  const waiting = () => page.locator('#keep-approvals > li.approval');
  // The use the host is waiting on now for `path` (an earlier one's item may still be leaving).
  const waitingFor = async (path) => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const { approvals } = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/approvals'), 200, 'the approvals');
      const found = approvals.find((approval) => approval.url.endsWith(path));
      if (found) return page.locator(`#keep-approvals > li[data-id="${found.id}"]`);
      check(Date.now() < deadline, `the host never waited on ${path}`);
      await page.waitForTimeout(100);
    }
  };
  const answerOne = async (path, method, button) => {
    const reply = say(clean, { fetch: { method, url: `${upstream}${path}`, ...(method === 'POST' ? { body: 'x' } : {}) } });
    const item = await waitingFor(path);
    await item.waitFor({ timeout: WAIT_MS })
      .catch(() => { throw new Error(`the waiting ${method} ${path} did not appear without a reload`); });
    if (path === '/signed') await inspect(page, 'approval');
    await item.getByRole('button', { name: button }).click();
    return reply;
  };
  // What the page shows is what it signs: a request shown as another is not signed.
  const pending = say(clean, { fetch: { method: 'POST', url: `${upstream}/signed`, body: 'transfer everything' } });
  await waiting().filter({ hasText: '/signed' }).waitFor({ timeout: WAIT_MS });
  const lies = {
    'another address': (approval) => { approval.url = approval.url.replace('/signed', '/harmless-read'); },
    'an empty body': (approval) => { approval.body_bytes = 0; },
  };
  for (const [lie, tell] of Object.entries(lies)) {
    await page.route('**/v1/approvals', async (route) => {
      const answer = await route.fetch();
      const body = await answer.json();
      body.approvals.forEach(tell);
      await route.fulfill({ response: answer, json: body });
    });
    await page.reload();
    const shownAs = waiting().first();
    await shownAs.waitFor({ timeout: WAIT_MS });
    await shownAs.getByRole('button', { name: 'Approve (sign)' }).click();
    check((await resultText(shownAs.locator('.result'))).includes('other hashes'), `the page signed a request shown with ${lie}`);
    await page.unroute('**/v1/approvals');
  }
  await page.reload();
  const lied = await waitingFor('/signed');
  await lied.getByRole('button', { name: 'Deny' }).click();
  const refusedUse = await pending;
  await lied.waitFor({ state: 'detached', timeout: WAIT_MS });
  check(!refusedUse.includes(env.KEEP_UPSTREAM_BODY), `the use shown as another went out: ${refusedUse}`);
  // The write first: what a use reads taints the session, and a tainted session's writes
  // are refused under this rule.
  const signed = await answerOne('/signed', 'POST', 'Approve (sign)');
  check(signed.includes(env.KEEP_UPSTREAM_BODY), `the signed use did not go out: ${signed}`);
  const approved = await answerOne('/approved', 'GET', 'Approve');
  check(approved.includes(env.KEEP_UPSTREAM_BODY), `the approved use did not go out: ${approved}`);
  const denied = await answerOne('/denied', 'GET', 'Deny');
  check(!denied.includes(env.KEEP_UPSTREAM_BODY), `the denied use went out: ${denied}`);
  const { entries } = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/journal'), 200, 'the journal');
  check(entries.some((e) => e.kind === 'egress' && JSON.stringify(e.detail).includes('device')), 'the signed egress approval is not journaled with its device');
});

step('the journal lists proposal, approval, deploy and revoke, with the chain\'s check', async () => {
  const { page } = alice;
  await view(page, 'Journal');
  await page.locator('#keep-journal > li').first().waitFor({ timeout: WAIT_MS });
  const chain = await resultText(page.locator('#keep-chain').filter({ hasNotText: 'Checking' }));
  check(chain.includes('intact'), `the chain check: ${chain}`);
  const recheck = await resultText(page.locator('#keep-recheck').filter({ hasNotText: 'Checking' }));
  check(recheck.includes('all hold'), `the browser's recheck: ${recheck}`);
  const entries = await page.locator('#keep-journal > li').evaluateAll((items) => items.map((item) => `${item.dataset.kind}:${item.dataset.action || ''}`));
  for (const wanted of ['proposal:propose', 'proposal:approve', 'proposal:deny', 'tool:deploy', 'tool:revoke']) {
    check(entries.includes(wanted), `the journal view lacks ${wanted}: ${entries.join(', ')}`);
  }
  const seqs = await page.locator('#keep-journal > li').evaluateAll((items) => items.map((item) => Number(item.dataset.seq)));
  check(seqs.every((seq, i) => i === 0 || seq < seqs[i - 1]), 'the journal is not newest first');
  await inspect(page, 'journal');
});

step('an entry edited in the database is caught by the browser\'s own check and by the host\'s', async () => {
  const { page } = alice;
  const [seq, subject] = sql("SELECT seq, subject FROM keep_journal WHERE user_name = 'alice' AND kind = 'tool' ORDER BY seq LIMIT 1").split('\t');
  sql('UPDATE keep_journal SET subject = ? WHERE seq = ?', 'tool:u/alice/edited', seq);
  try {
    // The host's answer to a person may be up to two seconds old: look again until it moves.
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      await view(page, 'Tools');
      await view(page, 'Journal');
      // Both checks of this load, not of an earlier one.
      const done = page.locator('#keep-recheck').filter({ hasNotText: 'Checking' }).filter({ hasText: /\S/ });
      await done.waitFor({ timeout: WAIT_MS });
      const recheck = await done.textContent();
      check(recheck.includes(`entry ${seq}'s hash does not match its content`), `the browser's check missed the edit: ${recheck}`);
      check(await page.locator('#keep-journal > li.bad').evaluateAll((items) => items.map((item) => item.dataset.seq).join()) === seq,
        'the edited entry is not the one marked in the list');
      const chain = await page.locator('#keep-chain').textContent();
      if (chain.includes(`broken at entry ${seq}`)) break;
      check(Date.now() < deadline, `the host's check did not find the edit: ${chain}`);
      await page.waitForTimeout(500);
    }
    await shoot(page, 'journal-broken');
  } finally {
    sql('UPDATE keep_journal SET subject = ? WHERE seq = ?', subject, seq);
  }
});

step('a proposal edited in the database (its taint lifted) is shown refused, with nothing to approve', async () => {
  const { page } = alice;
  await view(page, 'Proposals');
  await proposeTool(tainted, 'lifted', 1, 'Its taint will be lifted behind the host\'s back.');
  await toolProposal(page, 'lifted', 1).waitFor({ timeout: WAIT_MS });
  const id = await toolProposal(page, 'lifted', 1).getAttribute('data-id');
  sql('UPDATE keep_tool_proposals SET tainted = 0, taint_source = NULL WHERE id = ?', id);
  await openReview(page, 'lifted', 1);
  const alert = await resultText(page.locator('#keep-review [role="alert"]'));
  check(alert.startsWith('The host refuses this proposal'), `the review does not say it is refused: ${alert}`);
  check(await page.getByRole('button', { name: 'Approve on this device' }).count() === 0, 'a refused proposal offers Approve');
  await shoot(page, 'review-refused');
});

step('the operator\'s token shows the assistant, not a person\'s views', async () => {
  const browser = await openAs(env.KEEP_OPERATOR, 'the operator', [], '#chat-view');
  try {
    const { page } = browser;
    check((await page.locator('#who').textContent()) === 'Signed in as the operator', 'the page does not say the operator is signed in');
    check(!(await page.getByRole('link', { name: 'Proposals', exact: true }).isVisible()), 'the operator sees a person\'s views');
  } finally {
    await browser.close();
  }
});

step('Sign out forgets the token; a revoked token shows the sign-in again at the next request', async () => {
  const { token } = JSON.parse(imurun('keep', 'token', 'create', '--user', 'bob'));
  const browser = await openAs(token, 'bob (signing out)');
  try {
    const { page } = browser;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#token-view:not([hidden])').waitFor({ timeout: WAIT_MS });
    check(await page.evaluate(() => sessionStorage.length) === 0, 'the token stays in the tab after signing out');
    check(!(await page.locator('#who').isVisible()) || (await page.locator('#who').textContent()) === '', 'the page still says who is signed in');
    await page.getByLabel('Token', { exact: true }).fill(token);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.locator('#keep-proposals-view:not([hidden])').waitFor({ timeout: WAIT_MS });
    await view(page, 'Device');
    const id = createHash('sha256').update(token).digest('hex').slice(0, 12);
    imurun('keep', 'token', 'revoke', id);
    // No navigation: the next request meets the refusal, whichever comes first, a button's
    // or the event stream's (the host ends a revoked token's stream).
    const signIn = page.locator('#token-view:not([hidden])');
    await Promise.race([
      signIn.waitFor({ timeout: WAIT_MS }).catch(() => {}),
      (async () => {
        await page.getByLabel('Enrolment code', { exact: true }).fill('not-a-code', { timeout: WAIT_MS });
        await page.getByRole('button', { name: 'Enrol this browser' }).click({ timeout: WAIT_MS });
      })().catch(() => {}),
    ]);
    await signIn.waitFor({ timeout: WAIT_MS })
      .catch(() => { throw new Error('a revoked token kept the page signed in'); });
    check((await page.locator('#token-error').textContent()).includes('not accepted'), 'the sign-in does not say the token was refused');
    check(!(await page.locator('#keep-device-view').isVisible()), 'a view shows beside the sign-in');
  } finally {
    await browser.close();
  }
});

step('after alice signs out, bob signing in the same tab sees nothing of hers', async () => {
  const { page } = alice;
  await view(page, 'Tools');
  await page.locator('#keep-tools > li[data-name="weather"]').waitFor({ timeout: WAIT_MS });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#token-view:not([hidden])').waitFor({ timeout: WAIT_MS });
  // Bob's tools answer slowly: nothing of alice's may show meanwhile.
  await page.route('**/v1/tools', async (route) => {
    await new Promise((resolve) => { setTimeout(resolve, 1500); });
    await route.continue();
  });
  await page.getByLabel('Token', { exact: true }).fill(env.KEEP_BOB);
  await page.getByRole('button', { name: 'Use token' }).click();
  // The address still names the Tools view: it opens there.
  await page.locator('#keep-tools-view:not([hidden])').waitFor({ timeout: WAIT_MS });
  const shown = await page.evaluate(() => document.body.innerText);
  for (const hers of ['weather', 'u/alice', 'Revoked', 'Enrolled', 'alice']) {
    check(!shown.includes(hers), `bob's page shows alice's "${hers}" while his tools load: ${shown}`);
  }
  await page.locator('#keep-tools li').first().waitFor({ timeout: WAIT_MS });
  await page.unroute('**/v1/tools');
  check((await page.locator('#who').textContent()) === 'Signed in as bob', 'the tab does not say bob is signed in');
  // And back to alice, for what follows.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Token', { exact: true }).fill(env.KEEP_ALICE);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.locator('#who').filter({ hasText: 'Signed in as alice' }).waitFor({ timeout: WAIT_MS });
});

step('an answer that arrives after alice signed out is not drawn for bob', async () => {
  const { page } = alice;
  await view(page, 'Proposals');
  await proposeTool(clean, 'late', 1, 'Decided just before a sign-out.');
  // Bob's page opens at the review alice left: the host answers his 404, which the browser logs.
  alice.allow(/status of 404/);
  await openReview(page, 'late', 1);
  await page.route('**/decision', async (route) => {
    await new Promise((resolve) => { setTimeout(resolve, 2000); });
    await route.continue();
  });
  const sent = page.waitForRequest((r) => r.url().endsWith('/decision'));
  await page.getByRole('button', { name: 'Deny on this device' }).click();
  await sent;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Token', { exact: true }).fill(env.KEEP_BOB);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.locator('#who').filter({ hasText: 'Signed in as bob' }).waitFor({ timeout: WAIT_MS });
  await page.locator('#keep-review .error').waitFor({ timeout: WAIT_MS });
  await page.waitForTimeout(2500);
  // Hidden or shown, nothing of alice's answer is drawn anywhere in bob's page.
  const drawn = await page.evaluate(() => document.body.textContent);
  check(!drawn.includes('Decided just before') && !drawn.includes('u/alice'), `bob's page holds alice's late answer: ${drawn.slice(0, 400)}`);
  await page.unroute('**/decision');
  const { tools } = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/proposals?kind=tool'), 200, 'the tool proposals');
  check(tools.find((t) => t.name === 'late').state === 'denied', 'alice\'s decision did not reach the host');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Token', { exact: true }).fill(env.KEEP_ALICE);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.locator('#who').filter({ hasText: 'Signed in as alice' }).waitFor({ timeout: WAIT_MS });
});

step('the refusal of a token signed out of, arriving late, signs nobody out', async () => {
  const { token } = JSON.parse(imurun('keep', 'token', 'create', '--user', 'alice'));
  const browser = await openAs(token, 'alice (a late refusal)');
  try {
    const { page } = browser;
    await page.route('**/v1/tools', async (route) => {
      await new Promise((resolve) => { setTimeout(resolve, 2500); });
      await route.continue();
    });
    const asked = page.waitForRequest((r) => r.url().endsWith('/v1/tools'));
    await page.getByRole('link', { name: 'Tools', exact: true }).click();
    await asked;
    imurun('keep', 'token', 'revoke', createHash('sha256').update(token).digest('hex').slice(0, 12));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token', { exact: true }).fill(env.KEEP_BOB);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.locator('#who').filter({ hasText: 'Signed in as bob' }).waitFor({ timeout: WAIT_MS });
    // The revoked token's request answers 401 now: it was not bob's.
    await page.waitForTimeout(3000);
    check(await page.locator('#token-view').isHidden(), 'a late refusal of the token signed out of signed bob out');
    check((await page.locator('#who').textContent()) === 'Signed in as bob', 'bob is no longer signed in');
    await page.unroute('**/v1/tools');
  } finally {
    await browser.close();
  }
});

step('a token revoked while its page is open: the stream sends nothing more, and the page signs in again', async () => {
  const driver = JSON.parse(imurun('keep', 'token', 'create', '--user', 'bob')).token;
  const watched = JSON.parse(imurun('keep', 'token', 'create', '--user', 'bob')).token;
  const browser = await openAs(watched, 'bob (revoked while open)');
  try {
    const { page } = browser;
    await page.locator('#keep-live').filter({ hasText: 'Live' }).waitFor({ timeout: WAIT_MS });
    // A second reader of the same stream, outside the browser.
    const stream = await fetch(`${base}/v1/events?access_token=${watched}`);
    check(stream.status === 200, `the event stream answered ${stream.status}`);
    imurun('keep', 'token', 'revoke', createHash('sha256').update(watched).digest('hex').slice(0, 12));
    const session = (await expectStatus(call(driver, 'POST', '/v1/sessions', { agent: 'maker' }), 201, 'bob\'s session')).id;
    const emitted = await expectStatus(call(driver, 'POST', `/v1/sessions/${session}/messages`,
      { text: JSON.stringify({ emit: { type: 'suggestion', title: 'secret after the revoke', text: 'for bob only' } }) }), 200, 'the emit');
    check(emitted.replies[0] === 'emitted', `the emit: ${emitted.replies[0]}`);
    let received = '';
    const reader = stream.body.getReader();
    const ended = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return true;
        received += Buffer.from(value).toString('utf8');
      }
    })();
    const finished = await Promise.race([ended, new Promise((resolve) => { setTimeout(() => resolve(false), WAIT_MS); })]);
    check(finished, 'the revoked token\'s stream stayed open after an event');
    check(!received.includes('secret after the revoke'), 'the revoked token\'s stream received the event');
    await page.locator('#token-view:not([hidden])').waitFor({ timeout: WAIT_MS })
      .catch(() => { throw new Error('the page of a revoked token did not go back to the sign-in'); });
    check(!(await page.evaluate(() => document.body.innerText)).includes('secret after the revoke'), 'the page shows what came after the revoke');
  } finally {
    await browser.close();
  }
});

step('a browser without Ed25519 in WebCrypto is told so, and signs nothing', async () => {
  const browser = await openAs(env.KEEP_ALICE, 'a browser without Ed25519', [], '#keep-proposals-view', () => {
    const generate = crypto.subtle.generateKey.bind(crypto.subtle);
    crypto.subtle.generateKey = (algorithm, ...rest) => (algorithm?.name === 'Ed25519'
      ? Promise.reject(new DOMException('Algorithm: Unrecognized name', 'NotSupportedError'))
      : generate(algorithm, ...rest));
  });
  const { page } = browser;
  await page.locator('#keep-device-note').filter({ hasText: 'cannot make Ed25519 keys' }).waitFor({ timeout: WAIT_MS })
    .catch(() => { throw new Error('the proposals view does not say the browser cannot sign'); });
  await page.getByRole('link', { name: 'Device', exact: true }).click();
  await page.locator('#keep-device-problem').filter({ hasText: 'NotSupportedError' }).waitFor({ timeout: WAIT_MS });
  check(await page.getByRole('button', { name: 'Enrol this browser' }).count() === 0, 'a browser without Ed25519 offers to enrol');
  await shoot(page, 'no-ed25519');
  await browser.close();
});

step('alice retires her laptop from this browser, then this browser itself, each signed here; her token alone retires nothing', async () => {
  const { page } = alice;
  await view(page, 'Device');
  const before = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/devices'), 200, 'alice\'s devices');
  const laptop = before.devices.find((d) => d.label === 'alice’s laptop');
  const unsigned = await call(env.KEEP_ALICE, 'DELETE', `/v1/devices/${laptop.key_id}`);
  check(unsigned.status === 405, `a token alone answered ${unsigned.status} to retiring a device`);
  const bare = await call(env.KEEP_ALICE, 'POST', `/v1/devices/${laptop.key_id}/retire`, {});
  check(bare.status === 400, `a retirement without a decision answered ${bare.status}`);
  await page.getByRole('button', { name: 'Retire alice’s laptop' }).click();
  const other = await resultText(page.locator('#keep-device-result'));
  check(other.startsWith('Retired “alice’s laptop”'), `the laptop was not retired: ${other}`);
  const between = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/devices'), 200, 'alice\'s devices');
  check(between.devices.find((d) => d.key_id === laptop.key_id)?.retired_at_ms, `the host does not list the laptop retired: ${JSON.stringify(between.devices)}`);
  check(!between.devices.find((d) => d.label === 'alice’s browser')?.retired_at_ms, 'this browser was retired with the laptop');
  // Now her only device: the page says what retiring it closes.
  await page.locator('#keep-last-device').filter({ hasText: 'closes the proposals waiting' }).waitFor({ timeout: WAIT_MS });
  await page.getByRole('button', { name: 'Retire this browser as a device' }).click();
  await page.locator('#keep-device-result').filter({ hasText: /Retired: this browser|Not retired/ }).waitFor({ timeout: WAIT_MS });
  const text = await page.locator('#keep-device-result').textContent();
  check(text.startsWith('Retired: this browser'), `not retired: ${text}`);
  const { devices } = await expectStatus(call(env.KEEP_ALICE, 'GET', '/v1/devices'), 200, 'alice\'s devices');
  check(devices.find((d) => d.label === 'alice’s browser')?.retired_at_ms, `the host does not list the browser retired: ${JSON.stringify(devices)}`);
  const kept = await page.evaluate(() => new Promise((resolve) => {
    const open = indexedDB.open('imurun-keep');
    open.onsuccess = () => {
      const get = open.result.transaction('devices').objectStore('devices').get('alice');
      get.onsuccess = () => resolve(get.result !== undefined);
    };
  }));
  check(!kept, 'the retired key is still kept in the browser');
  await page.getByRole('button', { name: 'Enrol this browser' }).waitFor({ timeout: WAIT_MS });
});

// Run ---------------------------------------------------------------------------------------

mkdirSync(artifacts, { recursive: true });
for (const old of readdirSync(artifacts)) if (old.startsWith('keep-failed')) rmSync(join(artifacts, old));
const started = Date.now();
let failure = null;
try {
  for (const { name, run } of STEPS) {
    const begun = Date.now();
    try {
      await run();
    } catch (error) {
      failure = `${name}: ${error.message}`;
      await alice?.page.screenshot({ path: join(artifacts, 'keep-failed.png'), fullPage: true }).catch(() => {});
      break;
    }
    if (problems.length) {
      failure = `${name}: ${problems.join('; ')}`;
      break;
    }
    console.log(`ok ${name} (${Date.now() - begun} ms)`);
  }
} finally {
  await bob?.close();
  await alice?.close();
  rmSync(work, { recursive: true, force: true });
}
if (failure) fail(failure);
console.log(`all ${STEPS.length} Keep checks passed in ${Date.now() - started} ms; screenshots in ${artifacts}`);

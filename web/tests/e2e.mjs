// The page's end-to-end checks in a real browser: Debian's chromium driven by playwright-core.
//
//   node web/tests/e2e.mjs <base url> <artifacts dir> [scenario ...]
//   IMURUN_PAGE_TOKEN=<token> node web/tests/e2e.mjs <base url> <artifacts dir> token
//   node web/tests/e2e.mjs <base url> <artifacts dir> grounding
//
// The server must be scripted for the scenarios in the order below (crates/imurun-server/
// tests/all/page.rs starts one): every scenario sends its prompts and the server's test model
// answers them in turn, so scenarios run in this order, and a named subset only against a
// server scripted for that subset. Exits 1 with a message on the first failed check.

import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { WAIT_MS, axe, check, fail, launch, noSidewaysScroll } from './browser.mjs';

const [baseUrl, artifacts, ...wanted] = process.argv.slice(2);
if (!baseUrl || !artifacts) {
  console.error('usage: node e2e.mjs <base url> <artifacts dir> [scenario ...]');
  process.exit(2);
}

// Scenarios -------------------------------------------------------------------------------

/** What a script the page runs may set if the model's text ever became live code. */
async function pwned(page) {
  return page.evaluate(() => window.__pwned);
}

/** The attributes the sanitised Markdown may carry (markdown.js), on any element under `root`. */
const SAFE_ATTRIBUTES = new Set(['href', 'title', 'start', 'align', 'target', 'rel']);

/**
 * Checks that nothing under `locator` can act: no script, image, frame, form or style
 * element; no attribute beyond the few allowed (so no `on*` handler, no `style`, no `src`);
 * every link an http(s) or mailto address that opens a new tab without opener or referrer.
 */
async function checkInert(locator, where) {
  const found = await locator.evaluateAll((roots, safe) => {
    const bad = [];
    for (const root of roots) {
      for (const el of root.querySelectorAll('script, img, iframe, object, embed, form, input, style, svg, math, video, audio')) {
        bad.push(`a <${el.localName}> element`);
      }
      for (const el of root.querySelectorAll('.md *, .md')) {
        for (const attr of el.attributes) {
          if (el.classList.contains('md') && attr.name === 'class') continue;
          if (!safe.includes(attr.name)) bad.push(`${attr.name}="${attr.value}" on <${el.localName}>`);
        }
        if (el.localName === 'a' && el.hasAttribute('href')) {
          if (!/^(https?:|mailto:)/i.test(el.getAttribute('href'))) bad.push(`a link to ${el.getAttribute('href')}`);
          if (el.target !== '_blank' || !/noopener/.test(el.rel) || !/noreferrer/.test(el.rel)) {
            bad.push(`a link without target=_blank rel="noopener noreferrer": ${el.outerHTML}`);
          }
        }
      }
    }
    return bad;
  }, [...SAFE_ATTRIBUTES]);
  check(found.length === 0, `${where} is not inert: ${found.join('; ')}`);
}

/** Sends `text` from the chat view and waits for the 202. */
/** The turn the last prompt sent started: `turnEnded` waits for that one, not an older one. */
let sentTurnId = null;

async function send(page, text) {
  await page.getByLabel('Prompt', { exact: true }).fill(text);
  const accepted = page.waitForResponse((r) => r.url().endsWith('/prompts') && r.request().method() === 'POST');
  await page.getByRole('button', { name: 'Send' }).click();
  const response = await accepted;
  check(response.status() === 202, `the prompt was not accepted: ${response.status()} ${await response.text()}`);
  sentTurnId = (await response.json()).turn_id || null;
}

/** The last turn's list item. */
function lastTurn(page) {
  return page.locator('#transcript > li.turn').last();
}

/** The status of the turn the last prompt started, once it ended. */
async function turnEnded(page) {
  const turn = sentTurnId
    ? page.locator(`#transcript > li.turn[data-turn-id="${sentTurnId}"][data-status]`)
    : lastTurn(page).and(page.locator('[data-status]'));
  await turn.waitFor({ timeout: WAIT_MS });
  return turn.getAttribute('data-status');
}

async function waitForCard(page) {
  const card = page.locator('section.approval[data-state="waiting"]').last();
  await card.waitFor({ timeout: WAIT_MS });
  return card;
}

const SCENARIOS = {
  /** The page loads under its CSP: modules from the server run, an inline script does not. */
  async csp(page) {
    const ran = await page.evaluate(() => {
      const script = document.createElement('script');
      script.textContent = 'window.__inline = true';
      document.head.append(script);
      return window.__inline === true;
    });
    check(!ran, 'an inline script ran: the Content-Security-Policy is not in force');
  },

  /**
   * A new user: the page opens with the prompt box focused and no session. A first prompt
   * whose session cannot be made keeps its text and says why; sent again, it makes the
   * session and its answer streams as Markdown, rendered while it streams (the answer holds
   * back its second half until this scenario creates a session titled "open the stream"),
   * then whole: a list, a heading, a numbered list, a table, a code block and a link.
   */
  async first(page) {
    await page.waitForFunction(() => document.activeElement?.id === 'prompt', null, { timeout: WAIT_MS })
      .catch(() => { throw new Error('the page did not open with the prompt box focused'); });
    check(await page.locator('#session-list a').count() === 0, 'a new user already has a session');
    check(!(await page.locator('#send').isDisabled()), 'Send is disabled before any session exists');
    const text = 'Show me some Markdown';
    // The server's store is full: the session cannot be made.
    await page.route('**/api/sessions', (route) => (route.request().method() === 'POST'
      ? route.fulfill({
        status: 507, contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'store_full', message: 'the database holds its most sessions' } }),
      })
      : route.continue()));
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
    const error = page.locator('#prompt-error');
    await error.filter({ hasText: 'No session could be started' }).waitFor({ timeout: WAIT_MS });
    check((await error.textContent()).includes('the database holds its most sessions'), `the error reads ${await error.textContent()}`);
    check(await page.getByLabel('Prompt', { exact: true }).inputValue() === text, 'the prompt was lost when the session failed');
    check(await page.locator('#session-list a').count() === 0, 'a session is listed though none was made');
    await page.unroute('**/api/sessions');
    // Sent again (Enter, the focus is still in the box): the session, then the prompt.
    const created = page.waitForResponse((r) => r.url().endsWith('/api/sessions') && r.request().method() === 'POST');
    const accepted = page.waitForResponse((r) => r.url().endsWith('/prompts') && r.request().method() === 'POST');
    await page.keyboard.press('Enter');
    check((await created).status() === 201, 'the session was not created');
    check((await accepted).status() === 202, 'the first prompt was not accepted');
    check(await error.textContent() === '', `an error is still shown: ${await error.textContent()}`);
    check(await page.getByLabel('Prompt', { exact: true }).inputValue() === '', 'the sent prompt is still in the box');
    await page.locator('#session-list a[aria-current="true"]').waitFor({ timeout: WAIT_MS });
    check(/^#chat\/.+/.test(await page.evaluate(() => location.hash)), 'the address does not name the new session');
    // While it streams, what arrived is already Markdown.
    const streaming = lastTurn(page).locator('.msg.assistant.streaming');
    await streaming.locator('ul > li').nth(1).waitFor({ timeout: WAIT_MS });
    check(await streaming.locator('strong').textContent() === 'what you asked', 'the streaming answer has no strong text');
    await page.evaluate(() => fetch('/api/sessions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ title: 'open the stream' }),
    }));
    check(await turnEnded(page) === 'done', 'the first turn did not end done');
    const answer = lastTurn(page).locator('.msg.assistant.answer');
    check(await answer.locator('em').textContent() === 'emphasis', 'no emphasis');
    check(await answer.locator('ul > li').count() === 2, 'the list does not have its two items');
    check(await answer.locator('h4').textContent() === 'Steps', 'the "## Steps" heading is not an h4');
    check(await answer.locator('ol > li').count() === 2, 'the numbered list does not have its two items');
    check(await answer.locator('ol code').textContent() === 'make', 'no inline code in the numbered list');
    check(await answer.locator('table th').count() === 2 && await answer.locator('table td').count() === 4,
      'the table does not have 2 headers and 4 cells');
    check(await answer.locator('table th').nth(1).getAttribute('align') === 'right', 'the table lost its column alignment');
    const code = await answer.locator('pre > code').textContent();
    check(code.includes('fn main() { println!("<b>hi</b>"); }'), `the code block reads ${JSON.stringify(code)}`);
    check(await answer.locator('pre b').count() === 0, 'HTML inside the code block became an element');
    const link = answer.getByRole('link', { name: 'the docs' });
    check(await link.getAttribute('href') === 'https://example.org/docs', 'the link lost its address');
    await checkInert(answer, 'the Markdown answer');
    const prompt = await lastTurn(page).locator('.msg.user .text').textContent();
    check(prompt === text, `the prompt is shown as ${JSON.stringify(prompt)}`);
    await axe(page, 'a Markdown answer');
    await page.screenshot({ path: join(artifacts, 'markdown.png'), fullPage: true });
    await page.setViewportSize({ width: 360, height: 740 });
    await noSidewaysScroll(page, 'a Markdown answer with a table');
    await page.setViewportSize({ width: 1100, height: 800 });
  },

  async session(page) {
    // The session shown before is marked current too: wait for the mark to move.
    const old = await page.locator('#session-list a[aria-current="true"]').getAttribute('href').catch(() => null);
    await page.getByRole('button', { name: 'New session' }).click();
    const moved = old ? `:not([href="${old}"])` : '';
    await page.locator(`#session-list a[aria-current="true"]${moved}`).waitFor({ timeout: WAIT_MS });
    check(await page.getByLabel('Prompt', { exact: true }).isVisible(), 'no prompt box after New session');
  },

  async stream(page) {
    await send(page, 'Say hello');
    const answer = lastTurn(page).locator('.msg.assistant.answer');
    await answer.waitFor({ timeout: WAIT_MS });
    const text = await answer.textContent();
    check(text.includes('Hello from the page test.'), `the answer is ${JSON.stringify(text)}`);
    check(await turnEnded(page) === 'done', 'the answer turn did not end done');
  },

  async tool(page) {
    await send(page, 'What do my notes say?');
    check(await turnEnded(page) === 'done', 'the tool turn did not end done');
    const turn = lastTurn(page);
    const panel = turn.locator('details.thinking');
    check(await panel.count() === 1, 'no thinking panel for the tool turn');
    await panel.locator('summary').click();
    const step = await panel.locator('.step.tool').first().textContent();
    check(step.includes('Using `file_read`'), `the tool step reads ${JSON.stringify(step)}`);
    const thought = await panel.locator('.step.tool .thought').first().textContent();
    check(thought === 'The notes are in notes.txt.', `the step's thought reads ${JSON.stringify(thought)}`);
    const result = panel.locator('.tool-result').first();
    check((await result.textContent()).includes('file_read') && await result.evaluate((el) => el.classList.contains('ok')),
      `the tool result is ${await result.textContent()}`);
    const answer = await turn.locator('.msg.answer').textContent();
    check(answer.includes('remember the milk'), `the tool turn's answer is ${JSON.stringify(answer)}`);
  },

  /**
   * The model's text never becomes live HTML: an answer holding a script, an image with an
   * error handler, a javascript: link, raw HTML with handlers, a frame and a remote image
   * renders inert, and the raw HTML reads as text; nothing is requested from elsewhere. A
   * tool step's text in the thinking panel is rendered the same way.
   */
  async inert(page) {
    const elsewhere = [];
    const watch = (request) => {
      if (!request.url().startsWith(baseUrl)) elsewhere.push(request.url());
    };
    page.on('request', watch);
    await send(page, 'Show me something tricky');
    check(await turnEnded(page) === 'done', 'the tricky turn did not end done');
    const answer = lastTurn(page).locator('.msg.assistant.answer');
    await checkInert(answer, 'the tricky answer');
    const text = await answer.textContent();
    for (const shown of ['<script>', '<img src=x onerror=', '<b onclick=', '<iframe', 'raw link']) {
      check(text.includes(shown), `the raw HTML ${shown} is not shown as text: ${JSON.stringify(text)}`);
    }
    const js = answer.getByText('click me', { exact: true });
    check(await js.evaluate((el) => el.localName === 'a' && !el.hasAttribute('href')), 'the javascript: link kept an address');
    await js.click();
    const image = answer.getByRole('link', { name: 'Image: a picture' });
    check(await image.getAttribute('href') === 'https://example.org/picture.png', 'the image is not a link to its address');
    check(await answer.locator('strong').textContent() === 'still Markdown', 'Markdown around the HTML was not rendered');

    await send(page, 'Look at my notes, carefully');
    check(await turnEnded(page) === 'done', 'the careful tool turn did not end done');
    const panel = lastTurn(page).locator('details.thinking');
    await panel.locator('summary').click();
    const step = panel.locator('.step.tool').first();
    await checkInert(step, 'the tool step in the thinking panel');
    check(await step.locator('.step-text strong').textContent() === 'carefully', 'the step text is not Markdown');
    check((await step.textContent()).includes('<img src=x onerror='), 'the step\'s raw HTML is not shown as text');
    check((await step.locator('.using').textContent()).startsWith('Using `file_read`'), 'the call line is not shown as it is');
    page.off('request', watch);
    check(await pwned(page) === undefined, `the model's text ran as code: window.__pwned = ${await pwned(page)}`);
    check(elsewhere.length === 0, `the page asked another origin for ${elsewhere.join(', ')}`);
  },

  /**
   * A streaming answer rendered block by block (markdown.js's `MarkdownStream`, which keeps
   * the blocks the text has moved past) reads exactly as the whole text rendered at once, at
   * every length it passes through, for text that turns paragraphs into headings, lists into
   * loose lists, rows into tables and opens code fences with blank lines inside.
   */
  async incremental(page) {
    const differences = await page.evaluate(async () => {
      const { MarkdownStream, renderMarkdown } = await import('/assets/markdown.js');
      const text = [
        'A title', '=======', '', 'Some *emphasis that goes', 'on* and `code`.', '',
        '- one', '- two', '', '- three, loose', '  - nested', '', '3. third', '4. fourth', '',
        '> quoted', 'lazy line', '', '| a | b |', '| :-- | --: |', '| 1 | 2 |', '| 3 | 4 |', '',
        '```python', 'def f():', '', '    return 1', '```', '', '    indented code', '', '***', '',
        '<div onclick="x()">raw</div>', '', 'Last <b>line</b> with [a link](https://example.org/).',
      ].join('\n');
      const render = (markdown) => {
        const box = document.createElement('div');
        box.append(renderMarkdown(markdown));
        return box.innerHTML;
      };
      const streamed = document.createElement('div');
      const stream = new MarkdownStream(streamed);
      const found = [];
      for (let length = 1; length <= text.length; length += 3) {
        stream.update(text.slice(0, length));
        if (streamed.innerHTML !== render(text.slice(0, length))) {
          found.push(`at ${length}: ${JSON.stringify(streamed.innerHTML)} vs ${JSON.stringify(render(text.slice(0, length)))}`);
        }
      }
      stream.update(text);
      if (streamed.innerHTML !== render(text)) found.push('the whole text');
      return found;
    });
    check(differences.length === 0, `block by block differs from whole:\n  ${differences.slice(0, 3).join('\n  ')}`);
  },

  /** The mode is set to "ask" in settings and is still "ask" after a reload. */
  async settings(page) {
    await page.getByRole('link', { name: 'Settings' }).click();
    const mode = page.getByLabel('Mode', { exact: true });
    await page.locator('#perm-facts:not(:empty)').waitFor({ timeout: WAIT_MS });
    // The server reports Landlock ABI 6 with every part in force.
    const sandbox = await page.locator('#perm-sandbox').textContent();
    check(sandbox.startsWith('Sandbox: Landlock ABI 6 (writes only in the workspace'), `the sandbox line says: ${sandbox}`);
    await mode.selectOption('ask');
    await page.getByRole('button', { name: 'Save permissions' }).click();
    await page.getByText('Saved.').first().waitFor({ timeout: WAIT_MS });
    await page.reload();
    await page.locator('#perm-facts:not(:empty)').waitFor({ timeout: WAIT_MS });
    check(await mode.inputValue() === 'ask', `after a reload the mode is ${await mode.inputValue()}`);
    // A skill is created and listed, then deleted.
    await page.getByLabel('Name', { exact: true }).fill('Page Skill');
    await page.getByLabel('Description', { exact: true }).fill('Made by the page test');
    await page.getByLabel('Instructions', { exact: true }).fill('Answer briefly.');
    await page.getByRole('button', { name: 'Create skill' }).click();
    const skill = page.locator('#skill-list li', { hasText: '/page-skill' });
    await skill.waitFor({ timeout: WAIT_MS });
    await axe(page, 'the settings view');
    await page.screenshot({ path: join(artifacts, 'settings.png'), fullPage: true });
    await skill.getByRole('button', { name: 'Delete the skill Page Skill' }).click();
    await page.locator('#skill-list li', { hasText: 'No skills yet' }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByLabel('Prompt', { exact: true }).waitFor({ timeout: WAIT_MS });
  },

  /** In ask mode a read waits for a card; a click on Approve runs it. */
  async approve(page) {
    await send(page, 'Read my notes, with approval');
    const card = await waitForCard(page);
    const focused = await card.evaluate((el) => el === document.activeElement);
    check(focused, 'the approval card did not take the focus');
    const args = await card.locator('pre.args').textContent();
    check(args.includes('path: notes.txt'), `the card shows the arguments as ${JSON.stringify(args)}`);
    check(/Counts as denied in \d+ s/.test(await card.locator('.countdown').textContent()), 'no countdown');
    const reason = await card.locator('p.reason').textContent();
    check(reason === 'Why it asks: file reads ask first in ask mode.', `the card gives the reason as ${JSON.stringify(reason)}`);
    check(await card.getByRole('button', { name: 'Always for this session' }).count() === 1,
      'a read is rememberable but the card has no "Always for this session"');
    await axe(page, 'the chat view with an approval card');
    await card.screenshot({ path: join(artifacts, 'approval-card.png') });
    await page.screenshot({ path: join(artifacts, 'chat-approval.png'), fullPage: true });
    await card.getByRole('button', { name: 'Approve' }).click();
    await page.locator('section.approval[data-state="approved"]').last().waitFor({ timeout: WAIT_MS });
    check(await turnEnded(page) === 'done', 'the approved turn did not end done');
    const result = lastTurn(page).locator('.tool-result.ok');
    check(await result.count() === 1, 'the approved tool has no ok result');
  },

  /** A click on Deny: the tool does not run, the card says so, and the turn ends there. */
  async deny(page) {
    await send(page, 'Read my notes, but I will say no');
    const card = await waitForCard(page);
    await card.getByRole('button', { name: 'Deny' }).click();
    await page.locator('section.approval[data-state="denied"]').last().waitFor({ timeout: WAIT_MS });
    check(await turnEnded(page) === 'done', 'the denied turn did not end done');
    check(await lastTurn(page).locator('.tool-result.ok').count() === 0, 'a denied tool has an ok result');
    const answer = await lastTurn(page).locator('.msg.answer').textContent();
    check(answer.includes('file_read was declined'), `the denied turn's answer is ${JSON.stringify(answer)}`);
  },

  /** The keyboard alone: the card has the focus, Tab reaches Approve, Enter presses it. */
  async keyboard(page) {
    await send(page, 'Read my notes, approved by keyboard');
    const id = await (await waitForCard(page)).getAttribute('data-approval-id');
    await page.keyboard.press('Tab');
    const name = await page.evaluate(() => document.activeElement?.textContent);
    check(name === 'Approve', `Tab from the card reached ${JSON.stringify(name)}, not Approve`);
    await page.keyboard.press('Enter');
    await page.locator(`section.approval[data-approval-id="${id}"][data-state="approved"]`).waitFor({ timeout: WAIT_MS });
    check(await turnEnded(page) === 'done', 'the keyboard-approved turn did not end done');
  },

  /**
   * "Always for this session": the next read runs without a card, settings list the grant,
   * and Revoke forgets it.
   */
  async remember(page) {
    await send(page, 'Read my notes, and always may');
    const card = await waitForCard(page);
    const id = await card.getAttribute('data-approval-id');
    await card.getByRole('button', { name: 'Always for this session' }).click();
    await page.locator(`section.approval[data-approval-id="${id}"][data-state="approved"]`).waitFor({ timeout: WAIT_MS });
    check(await turnEnded(page) === 'done', 'the remembered turn did not end done');
    const cards = await page.locator('section.approval').count();
    await send(page, 'Read them again');
    check(await turnEnded(page) === 'done', 'the second read did not end done');
    check(await page.locator('section.approval').count() === cards, 'a remembered read still asked');
    check(await lastTurn(page).locator('.tool-result.ok').count() === 1, 'the remembered read has no ok result');
    await page.getByRole('link', { name: 'Settings' }).click();
    const grant = page.locator('#grant-list li', { hasText: 'file_read' });
    await grant.waitFor({ timeout: WAIT_MS });
    await grant.getByRole('button', { name: /^Revoke the approvals/ }).click();
    await page.locator('#grant-list li', { hasText: 'None' }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByLabel('Prompt', { exact: true }).waitFor({ timeout: WAIT_MS });
  },

  /**
   * A prompt sent while a turn runs shows as queued until it is delivered. The turn's first
   * answer is held back until this scenario creates a session titled "open the gate" (the
   * server's test watches for it), so the queued state is seen for sure.
   */
  async queued(page) {
    await send(page, 'Take your time');
    await page.waitForFunction(() => !document.getElementById('stop').disabled, null, { timeout: WAIT_MS });
    await send(page, 'Then do this');
    const queued = lastTurn(page).locator('.msg.user.queued');
    await queued.waitFor({ timeout: WAIT_MS });
    check((await queued.textContent()).includes('queued'), 'the queued prompt has no "queued" badge');
    await page.evaluate(() => fetch('/api/sessions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ title: 'open the gate' }),
    }));
    check(await turnEnded(page) === 'done', 'the turn with a queued prompt did not end done');
    check(await page.locator('.msg.queued').count() === 0, 'a delivered prompt still shows as queued');
    const messages = await lastTurn(page).locator('.msg').allTextContents();
    const order = ['Take your time', 'First things first.', 'Then do this', 'And now the second.'];
    const seen = order.map((text) => messages.findIndex((m) => m.includes(text)));
    check(seen.every((index, i) => index >= 0 && (i === 0 || index > seen[i - 1])),
      `the turn reads ${JSON.stringify(messages)}`);
  },

  /** A reply that never comes until Stop: the button ends the turn. */
  async stop(page) {
    await send(page, 'Think for a long time');
    const stop = page.getByRole('button', { name: 'Stop' });
    await page.waitForFunction(() => !document.getElementById('stop').disabled, null, { timeout: WAIT_MS });
    await stop.click();
    check(await turnEnded(page) === 'stopped', 'Stop did not end the turn as stopped');
    check((await lastTurn(page).locator('.turn-status').textContent()).includes('Stopped'), 'no Stopped line');
  },

  /** Rename the session (a prompt dialog), then a new session deleted (a confirm dialog). */
  async sessions(page) {
    page.once('dialog', (dialog) => dialog.accept('Page test'));
    await page.locator('#session-list li', { has: page.locator('[aria-current="true"]') })
      .getByRole('button', { name: /^Rename/ }).click();
    await page.locator('#chat-heading', { hasText: 'Page test' }).waitFor({ timeout: WAIT_MS });
    const before = await page.locator('#session-list li').count();
    await page.getByRole('button', { name: 'New session' }).click();
    await page.locator('#session-list li').nth(before).waitFor({ timeout: WAIT_MS });
    // The new session is drawn before the current mark moves to it: wait for the mark.
    await page.locator('#session-list a[aria-current="true"]', { hasNotText: 'Page test' }).waitFor({ timeout: WAIT_MS });
    page.once('dialog', (dialog) => dialog.accept());
    await page.locator('#session-list li', { has: page.locator('[aria-current="true"]') })
      .getByRole('button', { name: /^Delete/ }).click();
    await page.waitForFunction((count) => document.querySelectorAll('#session-list li').length === count, before,
      { timeout: WAIT_MS });
    await page.locator('#session-list a', { hasText: 'Page test' }).click();
    await page.locator('#chat-heading', { hasText: 'Page test' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#transcript > li.turn').nth(5).waitFor({ timeout: WAIT_MS });
  },

  /** The chat view: axe, a screenshot, and no sideways scrolling at 360 px anywhere. */
  async layout(page) {
    await axe(page, 'the chat view');
    await page.screenshot({ path: join(artifacts, 'chat.png'), fullPage: true });
    await page.setViewportSize({ width: 360, height: 740 });
    await noSidewaysScroll(page, 'the chat view');
    await page.screenshot({ path: join(artifacts, 'chat-360.png'), fullPage: true });
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.locator('#perm-facts:not(:empty)').waitFor({ timeout: WAIT_MS });
    await noSidewaysScroll(page, 'the settings view');
    await page.screenshot({ path: join(artifacts, 'settings-360.png'), fullPage: true });
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.setViewportSize({ width: 1100, height: 800 });
  },
};

/**
 * Only against a server scripted for it, so never in the default run: a turn that calls
 * `get_time` and answers twice without the time, the first time slowly (the page says the
 * answer is being checked while it is held). The agent asks again once (`answer.grounding`
 * `retry`), then answers from the tool's result (`fallback`): the thinking panel shows both
 * rejected answers and both notes, its summary says so, the answer is neither rejected text,
 * and a reload (the stored turn view) shows the same panel.
 */
const GROUNDING_SCENARIOS = {
  async grounding(page) {
    await send(page, 'Use get_time for me');
    // The first answer comes slowly (the server's model waits before it): while it is held
    // for checking, the turn says so.
    const checking = lastTurn(page).locator('p.checking[role="status"]');
    await checking.waitFor({ timeout: WAIT_MS })
      .catch((error) => { throw new Error(`no "checking" notice while the answer was held (${error.message.split('\n')[0]})`); });
    const notice = await checking.textContent();
    check(notice === 'Checking the answer against what `get_time` returned…', `the notice reads ${JSON.stringify(notice)}`);
    check(await turnEnded(page) === 'done', 'the grounded turn did not end done');
    check(await lastTurn(page).locator('p.checking').count() === 0, 'the "checking" notice stayed after the turn ended');
    const panelText = async () => {
      const panel = lastTurn(page).locator('details.thinking');
      await panel.waitFor({ timeout: WAIT_MS });
      const items = await panel.locator('ol.steps > li').evaluateAll((lis) => lis.map((li) => {
        const kind = li.classList.contains('grounding') ? `grounding ${li.dataset.action}` : li.className;
        return `${kind}: ${li.textContent.trim()}`;
      }));
      return { summary: await panel.locator('summary').textContent(), items };
    };
    const live = await panelText();
    const { summary, items } = live;
    check(summary.includes('retried') && summary.includes("answered from get_time's result"),
      `the summary reads ${JSON.stringify(summary)}`);
    const kinds = items.map((item) => item.split(':')[0]);
    const rejected = kinds.indexOf('step correction');
    check(rejected >= 0 && kinds[rejected + 1] === 'grounding retry'
      && kinds[rejected + 2] === 'step correction' && kinds[rejected + 3] === 'grounding fallback',
    `the panel reads ${JSON.stringify(items)}`);
    check(items[rejected].includes('It is lunchtime.') && items[rejected + 2].includes('Still lunchtime'),
      `the rejected answers read ${JSON.stringify(items)}`);
    check(items[rejected + 1].includes('Retried: ') && items[rejected + 3].includes("Answered from get_time's result: "),
      `the grounding notes read ${JSON.stringify(items)}`);
    const answer = await lastTurn(page).locator('.msg.answer').textContent();
    check(!answer.includes('lunchtime'), `a rejected answer is shown as the answer: ${JSON.stringify(answer)}`);
    check(await page.locator('.msg.answer').count() === 1, 'more than one answer is shown');
    await checkInert(lastTurn(page), 'the grounded turn');
    await axe(page, 'the chat view with a grounded answer');
    await lastTurn(page).locator('details.thinking summary').click();
    await page.screenshot({ path: join(artifacts, 'grounding.png'), fullPage: true });
    await page.reload();
    await page.locator('#transcript .msg.answer').first().waitFor({ timeout: WAIT_MS });
    const stored = await panelText();
    check(JSON.stringify(stored) === JSON.stringify(live),
      `after a reload the panel reads ${JSON.stringify(stored)}, live it read ${JSON.stringify(live)}`);
  },
};

/**
 * Only against a server with an API token (`IMURUN_PAGE_TOKEN`), so never in the default run:
 * the page asks for the token, refuses a wrong one, then streams an answer with the right one
 * (the event stream takes it as `?access_token=`), and keeps it over a reload.
 */
const TOKEN_SCENARIOS = {
  async token(page) {
    const token = process.env.IMURUN_PAGE_TOKEN;
    check(token, 'IMURUN_PAGE_TOKEN is not set');
    const input = page.getByLabel('Token', { exact: true });
    await input.waitFor({ timeout: WAIT_MS });
    await input.fill(`${token}-wrong`);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByText('That token was not accepted.').waitFor({ timeout: WAIT_MS });
    await input.fill(token);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.locator('#chat-view:not([hidden])').waitFor({ timeout: WAIT_MS });
    await SCENARIOS.session(page);
    await send(page, 'Say hello with a token');
    await lastTurn(page).locator('.msg.answer').waitFor({ timeout: WAIT_MS });
    check(await turnEnded(page) === 'done', 'the turn behind a token did not end done');
    await page.reload();
    await page.locator('#chat-view:not([hidden])').waitFor({ timeout: WAIT_MS });
    // The session's turns load after the view shows: wait for the answer, then count.
    await page.locator('#transcript .msg.answer').first().waitFor({ timeout: WAIT_MS })
      .catch((error) => { throw new Error(`after a reload the answer is not shown (${error.message.split('\n')[0]})`); });
    check(await page.locator('#transcript .msg.answer').count() === 1, 'after a reload the answer is shown more than once');
  },
};

// Run ---------------------------------------------------------------------------------------

Object.assign(SCENARIOS, TOKEN_SCENARIOS, GROUNDING_SCENARIOS);
const names = wanted.length
  ? wanted
  : Object.keys(SCENARIOS).filter((name) => !(name in TOKEN_SCENARIOS) && !(name in GROUNDING_SCENARIOS));
for (const name of names) if (!SCENARIOS[name]) fail(`no scenario ${name}; there are ${Object.keys(SCENARIOS).join(', ')}`);
mkdirSync(artifacts, { recursive: true });
for (const old of readdirSync(artifacts)) if (old.startsWith('failed-')) rmSync(join(artifacts, old));
const started = Date.now();
const { context, close } = await launch();
const page = context.pages()[0] || await context.newPage();
const problems = [];
// Console errors the checks cause on purpose: the CSP refusing the `csp` check's inline
// script, the browser logging the refused session of the `first` check, and each request
// refused before the `token` check's token.
const expectedConsole = [/inline script/];
if (names.includes('first')) expectedConsole.push(/status of 507/);
if (names.includes('token')) expectedConsole.push(/status of 401/);
page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
page.on('console', (message) => {
  const text = message.text();
  if (message.type() === 'error' && !expectedConsole.some((pattern) => pattern.test(text))) problems.push(`console: ${text}`);
});
let failure = null;
try {
  await page.goto(baseUrl);
  const first = names.includes('token') ? '#token-view' : '#chat-view';
  await page.locator(`${first}:not([hidden])`).waitFor({ timeout: WAIT_MS });
  for (const name of names) {
    const begun = Date.now();
    try {
      await SCENARIOS[name](page);
    } catch (error) {
      failure = `scenario ${name}: ${error.message}`;
      await page.screenshot({ path: join(artifacts, `failed-${name}.png`), fullPage: true }).catch(() => {});
      break;
    }
    console.log(`ok ${name} (${Date.now() - begun} ms)`);
    if (problems.length) {
      failure = `scenario ${name}: ${problems.join('; ')}`;
      break;
    }
  }
} finally {
  await close();
}
if (failure) fail(failure);
console.log(`all ${names.length} scenarios passed in ${Date.now() - started} ms; screenshots in ${artifacts}`);

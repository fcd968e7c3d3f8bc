// What rendering a streaming answer as Markdown costs in a real browser, by the answer's
// length. While an answer streams, the page updates it at most once per animation frame with
// `MarkdownStream` (web/markdown.js), which renders again only the answer's last blocks; when
// it ends, the whole answer is rendered once. A benchmark, not a test: it prints medians and
// asserts nothing.
//
//   node web/tests/bench-markdown.mjs [samples]
//
// Serves web/ itself on 127.0.0.1 (the files the server embeds, under the same names) and
// drives Debian's chromium with playwright-core, as e2e.mjs does. Each sample is the mean of
// 10 operations, each followed by a layout (as a frame would): setting the answer as plain
// text (the baseline: what the page did before it rendered Markdown), one stream update after
// 20 more characters, and one whole render.

import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const web = join(dirname(fileURLToPath(import.meta.url)), '..');
const samples = Number(process.argv[2] || 21);
const LENGTHS = [1000, 4000, 16000, 32000, 64000];

const server = createServer((request, response) => {
  const name = request.url === '/' ? null : request.url.replace(/^\/assets\//, '');
  const candidates = name === null ? [] : [join(web, name), join(web, 'vendor', name)];
  for (const path of candidates) {
    if (name.includes('/') || name.includes('..')) break;
    try {
      const bytes = readFileSync(path);
      response.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8' });
      response.end(bytes);
      return;
    } catch {
      // Not there: the next place, or the page below.
    }
  }
  response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  response.end('<!doctype html><title>bench</title><div id="out"></div>');
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}/`;

const profile = mkdtempSync(join(tmpdir(), 'imurun-bench-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  const page = context.pages()[0] || await context.newPage();
  await page.goto(base);
  const rows = await page.evaluate(async ({ lengths, samples }) => {
    const { MarkdownStream, renderMarkdown } = await import('/assets/markdown.js');
    // An answer as a model writes one: paragraphs with emphasis and code, lists, a table and
    // a code block, repeated to the length wanted.
    const block = 'Here is **a point** with `code` and [a link](https://example.org/).\n\n'
      + '- one item\n- another item with *emphasis*\n\n'
      + '| name | value |\n| --- | ---: |\n| alpha | 1 |\n| beta | 2 |\n\n'
      + '```js\nconst x = 1; // <b>not html</b>\n```\n\n';
    const out = document.getElementById('out');
    const BATCH = 10;
    const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
    // `step(i)` is one operation; the median over samples of the mean of BATCH operations.
    const time = (step) => {
      const means = [];
      for (let sample = 0; sample < samples; sample += 1) {
        const started = performance.now();
        for (let i = 0; i < BATCH; i += 1) {
          step(sample * BATCH + i);
          void out.offsetHeight;
        }
        means.push((performance.now() - started) / BATCH);
      }
      return median(means);
    };
    return lengths.map((length) => {
      const text = block.repeat(Math.ceil(length / block.length) + 20);
      const plain = time((i) => { out.textContent = text.slice(0, length + 20 * i); });
      out.replaceChildren();
      const stream = new MarkdownStream(out);
      const update = time((i) => stream.update(text.slice(0, length + 20 * i)));
      const whole = time((i) => out.replaceChildren(renderMarkdown(text.slice(0, length + 20 * i))));
      return { length, plain, update, whole };
    });
  }, { lengths: LENGTHS, samples });
  console.log(`median of ${samples} samples (each the mean of 10 operations and their layout), in ms`);
  console.log('characters  plain text  stream update  ratio  whole render  ratio');
  for (const { length, plain, update, whole } of rows) {
    const ratio = (value) => (value / plain).toFixed(1).padStart(5);
    console.log(`${String(length).padStart(10)}  ${plain.toFixed(3).padStart(10)}  ${update.toFixed(3).padStart(13)}  ${ratio(update)}  ${whole.toFixed(3).padStart(12)}  ${ratio(whole)}`);
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  server.close();
}

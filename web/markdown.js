// A model's text as Markdown: parsed by marked, then cleaned by DOMPurify, so that whatever
// the model writes becomes only the few inert elements listed below. Both libraries are
// vendored (web/vendor/README.md). The person's own prompts never come here: they stay text.
//
// What the model's text can become:
// - paragraphs, line breaks, rules, emphasis, strong, strikethrough, inline code, code blocks,
//   block quotes, ordered and unordered lists, tables (with their column alignment), and
//   headings, moved down two levels (`#` is an h3) so an answer never outranks the page's
//   own headings;
// - links, only to `http:`, `https:` and `mailto:` addresses, opening in a new tab with no
//   opener and no referrer; a link to anything else (`javascript:`, `data:`, a relative path)
//   keeps its text and loses its address;
// - task-list boxes as the characters ☑ and ☐.
// Nothing else: raw HTML in the text is shown as the text it is (`<b>` reads "<b>"); images
// are never loaded, each becomes a link "Image: <alt>" to its address, which the person may
// open; no `id`, `class`, `style`, `data-*`, event handler or any other attribute survives.
// The page's CSP (scripts from 'self' only, no inline script or style) is the second wall.

import { Marked } from './marked.esm.js';
import DOMPurify from './purify.es.mjs';

/** The elements an answer may hold; everything else is removed (its text kept). */
const ALLOWED_TAGS = [
  'p', 'br', 'hr', 'h3', 'h4', 'h5', 'h6', 'em', 'strong', 'del', 'code', 'pre', 'blockquote',
  'ul', 'ol', 'li', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
];

/** The attributes they may keep: a link's address and title, a list's start, a column's alignment. */
const ALLOWED_ATTR = ['href', 'title', 'start', 'align'];

/** The addresses a link may have. */
const ALLOWED_URI_REGEXP = /^(?:https?:|mailto:)/i;

const SANITISE = {
  ALLOWED_TAGS,
  ALLOWED_ATTR,
  ALLOWED_URI_REGEXP,
  // DOMPurify holds every attribute not known to be URI-safe to ALLOWED_URI_REGEXP; these two
  // hold a number or a word, never an address.
  ADD_URI_SAFE_ATTR: ['start', 'align'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  ALLOW_UNKNOWN_PROTOCOLS: false,
  KEEP_CONTENT: true,
  RETURN_DOM_FRAGMENT: true,
};

// Links leave the page: a new tab, no `window.opener`, no referrer.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.nodeName !== 'A') return;
  if (node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    // Raw HTML in the model's text is shown, not interpreted.
    html({ text, block }) {
      return block ? `<p>${escapeHtml(text.trim()).replaceAll('\n', '<br>')}</p>\n` : escapeHtml(text);
    },
    heading({ tokens, depth }) {
      const level = Math.min(depth + 2, 6);
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    // An image would load from wherever the model points; a link lets the person decide.
    image({ href, text }) {
      const label = escapeHtml(`Image: ${text || href}`);
      return `<a href="${escapeHtml(href)}">${label}</a>`;
    },
    checkbox({ checked }) {
      return checked ? '☑ ' : '☐ ';
    },
  },
});

/** `text` (Markdown) as a sanitised DocumentFragment, ready to insert. */
export function renderMarkdown(text) {
  const html = marked.parse(text || '');
  return DOMPurify.sanitize(html, SANITISE);
}

/** Replaces the children of `el` with `text` rendered as Markdown. */
export function fillMarkdown(el, text) {
  el.replaceChildren(renderMarkdown(text));
}

/**
 * The last blocks of a growing text that may still change: text appended to a Markdown text
 * can only extend or reshape its last block (a list item, a table row, a code fence's body,
 * a paragraph that turns out to be a heading). One more is kept open for safety.
 */
const OPEN_BLOCKS = 2;

/**
 * Past this many characters the open blocks of a stream are shown as plain text until it
 * ends (one code block a model never closes, say): rendering them again per frame would cost
 * more than a frame.
 */
const OPEN_CHARS_MAX = 16000;

/**
 * A text that grows (a streaming answer) rendered into `el` as it grows. Each `update` lexes
 * only the text after the blocks already settled, renders and keeps for good each block the
 * text has moved past, and renders again only the last `OPEN_BLOCKS`: the cost of an update
 * follows the size of those blocks, not of the whole answer, and settled blocks are never
 * replaced (no flicker, a selection in them stays). When the stream ends, `fillMarkdown`
 * renders the whole text once, so that what stays is exactly the answer's rendering.
 */
export class MarkdownStream {
  constructor(el) {
    this.el = el;
    // The text of the settled blocks, and the nodes of the open ones.
    this.settled = '';
    this.open = [];
  }

  update(text) {
    const whole = text.replace(/\r\n?/g, '\n');
    if (!whole.startsWith(this.settled)) {
      // Not the same text grown: start again.
      this.el.replaceChildren();
      this.settled = '';
      this.open = [];
    }
    for (const node of this.open) node.remove();
    const tokens = marked.lexer(whole.slice(this.settled.length));
    const blocks = tokens.flatMap((token, index) => (token.type === 'space' ? [] : [index]));
    const firstOpen = blocks.length > OPEN_BLOCKS ? blocks[blocks.length - OPEN_BLOCKS] : 0;
    if (firstOpen > 0) {
      this.el.append(this.render(tokens, 0, firstOpen));
      this.settled += tokens.slice(0, firstOpen).map((token) => token.raw).join('');
    }
    const rest = whole.slice(this.settled.length);
    let open;
    if (rest.length > OPEN_CHARS_MAX) {
      open = document.createElement('p');
      open.className = 'stream-tail';
      open.textContent = rest;
    } else {
      open = this.render(tokens, firstOpen, tokens.length);
    }
    this.open = open instanceof DocumentFragment ? [...open.childNodes] : [open];
    this.el.append(open);
  }

  /** Tokens `from..to` of one lexing, rendered and sanitised. */
  render(tokens, from, to) {
    const part = tokens.slice(from, to);
    part.links = tokens.links;
    return DOMPurify.sanitize(marked.parser(part), SANITISE);
  }
}

function escapeHtml(text) {
  return String(text)
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

// Building the page's elements. Text always goes in as text (never as HTML): a model's answer
// or a tool's arguments can hold anything, and the page must show it, not run it.

/** An element `tag` with attributes (`class`, `on*` handlers, booleans) and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'class') {
      el.className = value;
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** The element with this id (the page's static skeleton always has it). */
export function byId(id) {
  return document.getElementById(id);
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const child of children.flat()) {
    if (child !== undefined && child !== null && child !== false) el.append(child);
  }
}

/** JSON arguments as readable text: `{"path": "a.txt"}` over lines, strings unquoted when alone. */
export function plainArgs(args) {
  if (args === undefined || args === null) return '';
  if (typeof args !== 'object') return String(args);
  const entries = Object.entries(args);
  if (entries.length === 0) return '(no arguments)';
  return entries
    .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join('\n');
}

/** Splits `<think>…</think>` out of a step's text: `{thought, rest}`. */
export function splitThought(text) {
  const thoughts = [];
  const rest = (text || '').replace(/<think>([\s\S]*?)(<\/think>|$)/g, (_, inner) => {
    thoughts.push(inner.trim());
    return '';
  });
  return { thought: thoughts.filter(Boolean).join('\n\n'), rest: rest.trim() };
}

/** Marks the link `current` (an id among `ids`) as the page's current one, and no other. */
export function markCurrent(ids, current) {
  for (const id of ids) {
    if (id === current) byId(id).setAttribute('aria-current', 'page');
    else byId(id).removeAttribute('aria-current');
  }
}

// The page's only way to make elements: every string the bridge or the agent wrote is set through
// textContent (a text node), never as HTML.
import { Num } from './canon.js';

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  return node;
}

export const text = (v) => (v instanceof Num ? v.text : v === null || v === undefined ? '' : String(v));

// Control, bidi and invisible characters written out, as the terminal companion does.
export function visible(s) {
  // eslint-disable-next-line no-control-regex -- finding control characters is this function's job
  return text(s).replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

// A labelled input: the label is a real <label for>, so screen readers and axe find it.
let fieldSeq = 0;
export function labelled(labelText, input, hint) {
  if (!input.id) input.id = `field-${++fieldSeq}`;
  const hintNode = hint ? el('span', { class: 'hint', id: `${input.id}-hint` }, hint) : null;
  if (hintNode) input.setAttribute('aria-describedby', hintNode.id);
  return el('div', { class: 'field' }, el('label', { for: input.id }, labelText), input, hintNode);
}

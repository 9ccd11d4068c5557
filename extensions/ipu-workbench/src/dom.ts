/**
 * DOM builders. Every string from the IR reaches the page through `textContent` or an attribute
 * value, never through HTML parsing, so a name like `<img onerror=...>` is shown, not run.
 */

export const SVG_NS = 'http://www.w3.org/2000/svg';

type Child = Node | string;

/** An HTML element with `className` and children (strings become text nodes). */
export function el<K extends keyof HTMLElementTagNameMap>(
  doc: Document,
  tag: K,
  className = '',
  children: Child[] = []
): HTMLElementTagNameMap[K] {
  const node = doc.createElement(tag);
  if (className) {
    node.className = className;
  }
  append(node, children);
  return node;
}

/** An SVG element with attributes (values set as plain attribute strings). */
export function svg(doc: Document, tag: string, attrs: Record<string, string | number> = {}, children: Child[] = []): SVGElement {
  const node = doc.createElementNS(SVG_NS, tag) as SVGElement;
  for (const [key, value] of Object.entries(attrs)) {
    node.setAttribute(key, String(value));
  }
  append(node, children);
  return node;
}

export function append(node: Node, children: Child[]): void {
  for (const child of children) {
    node.appendChild(typeof child === 'string' ? node.ownerDocument!.createTextNode(child) : child);
  }
}

export function clear(node: Node): void {
  while (node.firstChild) {
    node.removeChild(node.firstChild);
  }
}

/** A button that runs `onClick`. */
export function button(doc: Document, label: string, className: string, onClick: () => void): HTMLButtonElement {
  const node = el(doc, 'button', className, [label]);
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

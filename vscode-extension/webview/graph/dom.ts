/**
 * Building DOM from untrusted strings: every text of a bundle (names, opcodes, code) goes in
 * as a text node or a plain attribute, never as markup (no innerHTML anywhere in the app).
 */
const SVG = 'http://www.w3.org/2000/svg';

type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    e.setAttribute(k, v);
  }
  append(e, children);
  return e;
}

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    e.setAttribute(k, String(v));
  }
  append(e, children);
  return e;
}

function append(e: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) {
      continue;
    }
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
}

/** ``text`` cut to ``n`` characters with an ellipsis. */
export function cut(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/**
 * Text from the server (names, opcodes, kernel names, numerics summaries: bundle strings, so
 * untrusted) made safe to put into Markdown: the ONE escaping function of the extension, the
 * counterpart of the server's navigation/markdown.py. A kernel named `` `x` [a](command:...) ``
 * must show as that text, never as a command link, a remote image or HTML.
 *
 * No `vscode` import here: tests/e2e/markdown.test.mjs runs it under plain node.
 */

const PUNCTUATION = /([\\`*_{}[\]()<>#+\-.!|~:&"'=$%^@;,/?])/g;
// eslint-disable-next-line no-control-regex -- the vertical tab and form feed break lines too
const LINE_BREAKS = /[\r\n\u2028\u2029\u000b\u000c\u0085]+/g;
// A lone surrogate (half of a UTF-16 pair) cannot be rendered: shown as U+FFFD.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function oneLine(value: unknown): string {
  return String(value).replace(LONE_SURROGATE, '\ufffd').replace(LINE_BREAKS, ' ');
}

/** `value` as literal Markdown text: every ASCII punctuation mark backslash-escaped, line
 * breaks as spaces, so no link, image, HTML, emphasis or block can start inside it. */
export function text(value: unknown): string {
  return oneLine(value).replace(PUNCTUATION, '\\$1');
}

/** `value` as an inline code span: fenced with one backtick more than its longest run of
 * backticks, on one line (nothing inside a code span is interpreted). */
export function code(value: unknown): string {
  let body = oneLine(value);
  const longest = Math.max(0, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  if (!body.trim() || body.startsWith('`') || body.endsWith('`')) {
    body = ` ${body} `;
  }
  return `${fence}${body}${fence}`;
}

/** `value` for a notification (`showInformationMessage` and the like), which renders
 * `[label](target)` as a link, `command:` targets included: every `](` is broken by an
 * invisible zero-width space, so text from a bundle or a CLI message never becomes a link. */
export function plain(value: unknown): string {
  return String(value)
    .replace(LONE_SURROGATE, '\ufffd')
    .replace(/\]\s*\(/g, ']\u200b(');
}

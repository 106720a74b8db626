import * as vscode from 'vscode';

/** A Markdown tooltip built with markdown.ts's `text`/`code` from server strings: never trusted
 * (no `command:` links run), no HTML, no theme icons from the text. */
export function untrustedMarkdown(value: string): vscode.MarkdownString {
  const md = new vscode.MarkdownString(value, false);
  md.isTrusted = false;
  md.supportHtml = false;
  return md;
}

"""``textDocument/semanticTokens/range``: the colors of generated C and CUDA, and of machine code
(SASS), for the lines the editor shows (navigation/c_tokens.py says why not a TextMate grammar)."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.shared import Session, uri_to_path
from tvm_explorer.navigation.c_tokens import KINDS, CommentMap, is_code_path, range_tokens
from tvm_explorer.navigation.positions import code_units
from tvm_explorer.navigation.sass_tokens import is_sass_path, sass_range_tokens

LEGEND = types.SemanticTokensLegend(token_types=list(KINDS), token_modifiers=[])
# The documents these tokens are for: the extension's language for generated code, and any
# client's C/CUDA (and SASS) files in a bundle's code/ folder.
OPTIONS = types.SemanticTokensRegistrationOptions(
    legend=LEGEND,
    range=True,
    full=False,
    document_selector=[
        types.TextDocumentFilterLanguage(language="tvm-generated-c"),
        types.TextDocumentFilterLanguage(language="tvm-sass"),
        types.TextDocumentFilterPattern(pattern="**/code/*.{c,cu,h,cc,cpp,sass}"),
    ],
)


class SemanticTokens:
    """Tokens of the open generated-code documents, lexed per requested range."""

    def __init__(self, session: Session):
        self.session = session
        self._comments: dict[object, tuple[str, CommentMap]] = {}  # per open document: its text's

    def range(self, params: types.SemanticTokensRangeParams) -> types.SemanticTokens | None:
        """The tokens of the lines ``params.range`` spans, in the negotiated encoding."""
        path = uri_to_path(params.text_document.uri)
        opened = self.session.open.get(path) if path is not None else None
        name = path.name if path else ""
        if opened is None or not (is_code_path(name) or is_sass_path(name)):
            return None
        text = opened.text
        known = self._comments.get(path)
        if known is None or known[0] is not text:  # the text is one object until an edit
            for gone in [p for p in self._comments if p not in self.session.open]:
                del self._comments[gone]
            known = self._comments[path] = (text, CommentMap(text))
        lines = opened.document.lines
        first, last = params.range.start.line, params.range.end.line
        data: list[int] = []
        prev_line = prev_start = 0
        encoding = self.session.encoding
        # Columns in code units, counted along each line from the previous token (converting
        # each token's whole prefix would cost the square of a long line's length).
        unit_line, unit_at, units = -1, 0, 0
        tokens = (
            sass_range_tokens(lines, first, last) if is_sass_path(name) else range_tokens(lines, first, last, known[1])
        )
        for token in tokens:
            line = lines[token.line]
            start, length = token.start, token.length
            if encoding != "utf-32" and not line.isascii():
                if unit_line != token.line:
                    unit_line, unit_at, units = token.line, 0, 0
                units += code_units(line[unit_at:start], encoding)
                length = code_units(line[start : start + length], encoding)
                unit_at, start = token.start + token.length, units
                units += length
            delta_line = token.line - prev_line
            data += (delta_line, start - prev_start if delta_line == 0 else start, length, token.kind, 0)
            prev_line, prev_start = token.line, start
        return types.SemanticTokens(data=data)

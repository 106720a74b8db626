"""``tvm-explorer``: compile a TFLite model into a bundle, query it, or serve it over LSP."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from . import __version__
from .errors import ExplorerError

EXIT_ERROR = 2
EXIT_CRASH = 3
EXIT_INTERRUPTED = 130


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"tvm-explorer: error: {message}", file=sys.stderr)
    return code


# -- compile ------------------------------------------------------------------------------
def _compile_in_this_process(args) -> int:
    from .capture.api import compile_model

    def terminate(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, terminate)
    try:
        result = compile_model(
            args.model, args.output, args.target,
            exact_origins=args.exact_origins, schedule_records=not args.no_schedule_records,
        )
    except ExplorerError as err:
        return _fail(str(err))
    except KeyboardInterrupt:
        return _fail("interrupted; no bundle was written (a previous bundle is unchanged)",
                     EXIT_INTERRUPTED)
    bundle = result.bundle
    print(f"Bundle written: {bundle}")
    print(f"  {result.passes} passes recorded, {result.documents} documents")
    for kind, cov in sorted(result.coverage.items()):
        print(f"  generated {kind}: {cov['attributed']}/{cov['units']} computing lines attributed")
    print("Open it in an editor with the TVM Explorer language server (VS Code: docs/vscode.md):")
    print(f"  code {bundle}")
    code = {"c": "code/module.c", "cuda": "code/device.cu"}.get(args.target)
    if code:
        print(f"Ask where a line came from:\n  tvm-explorer origins {bundle} {code}:LINE")
    return 0


def _run_compile(args) -> int:
    """Compile in a child process so that a crash inside TVM is reported, not inherited."""
    if args.in_process or not hasattr(os, "fork"):
        return _compile_in_this_process(args)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            code = _compile_in_this_process(args)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    forward = lambda signum, _frame: os.kill(pid, signum)  # noqa: E731
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child gets Ctrl-C from the terminal
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        _remove_partial(args.output, pid)
        return _fail(f"{args.model}: TVM crashed ({sig}) while compiling for {args.target}; "
                     "no bundle was written", EXIT_CRASH)
    return os.WEXITSTATUS(status)


def _remove_partial(output: str, pid: int) -> None:
    import shutil
    from pathlib import Path

    dest = Path(output).absolute()
    shutil.rmtree(dest.parent / f".{dest.name}.tmp-{pid}", ignore_errors=True)


# -- queries ------------------------------------------------------------------------------
def _load(bundle: str):
    from .bundle.reader import Bundle

    return Bundle(bundle)


def _run_coverage(args) -> int:
    try:
        b = _load(args.bundle)
    except ExplorerError as err:
        return _fail(str(err))
    rows = [
        {k: p.get(k) for k in ("index", "name", "stage", "units", "attributed", "changed")}
        | {k: p[k] for k in ("tir_units", "tir_attributed", "note") if k in p}
        for p in b.manifest["passes"]
    ]
    if args.json:
        print(json.dumps({"passes": rows}, indent=1))
        return 0
    print(f"{'#':>4}  {'stage':6} {'pass':45} {'units':>7} {'attributed':>10}   %")
    for r in rows:
        pct = 100.0 * r["attributed"] / r["units"] if r["units"] else 100.0
        mark = "" if r.get("changed") else "  (unchanged)"
        print(f"{r['index']:>4}  {r['stage']:6} {r['name'][:45]:45} {r['units']:>7} "
              f"{r['attributed']:>10} {pct:6.1f}{mark}")
    return 0


def _parse_position(text: str) -> tuple[str, int, int | None]:
    parts = text.rsplit(":", 2)
    try:
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            return parts[0], int(parts[1]), int(parts[2])
        path, line = text.rsplit(":", 1)
        return path, int(line), None
    except ValueError:
        raise ExplorerError(f"{text!r}: expected FILE:LINE[:COL] (1-based line and column)") from None


def _run_origins(args) -> int:
    try:
        b = _load(args.bundle)
        path, line, col = _parse_position(args.position)
        if b.document(path) is None:
            raise ExplorerError(f"{path}: not a document of bundle {args.bundle}")
        if line < 1:
            raise ExplorerError(f"{args.position}: lines start at 1")
        text_line = b.text(path).split("\n")[line - 1] if line <= len(b.text(path).split("\n")) else None
        if text_line is None:
            raise ExplorerError(f"{path}: line {line} is past the end of the document")
        column = (col - 1) if col else len(text_line) - len(text_line.lstrip())
        offset = b.offset_of(path, line - 1, column)
        origins = b.origins_at(path, offset)
    except ExplorerError as err:
        return _fail(str(err))
    if args.json:
        print(json.dumps({"origins": [o.to_json() for o in origins]}, indent=1))
        return 0
    if not origins:
        print(f"{path}:{line}: no origin recorded here")
    for o in origins:
        role = "layer output" if o.is_output else "part of layer"
        where = f"subgraph {o.layer.subgraph} " if o.layer.subgraph else ""
        print(f"{where}op {o.layer.op_index} {o.layer.opcode} ({role}) -> {', '.join(o.layer.outputs)}")
    return 0


# -- entry --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="tvm-explorer", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tvm-explorer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="compile a TFLite model into an explorer bundle")
    p.add_argument("model", help="the .tflite model")
    p.add_argument("-o", "--output", required=True, help="bundle directory to write")
    p.add_argument("--target", default="c", help="c (default), llvm or cuda")
    p.add_argument("--exact-origins", action="store_true",
                   help="one PrimFunc per call site, so every statement has exactly one origin")
    p.add_argument("--no-schedule-records", action="store_true",
                   help="do not record GPU schedule traces")
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(run=_run_compile)

    p = sub.add_parser("coverage", help="per pass: units and how many have origins")
    p.add_argument("bundle")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_run_coverage)

    p = sub.add_parser("origins", help="origin layers of a position in a bundle document")
    p.add_argument("bundle")
    p.add_argument("position", help="FILE:LINE[:COL], FILE relative to the bundle, 1-based")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_run_origins)

    try:
        from .lsp.cli import add_serve_parser
    except ImportError:
        add_serve_parser = None
    if add_serve_parser is not None:
        add_serve_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    run = getattr(args, "run", None) or args.func
    try:
        return run(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""One probe of ``reduce``, run as a child process (``python -m tvm_explorer.reduce.probe
SPEC``): import the model with the product's importer (its failures name the operator), then
build it with TVM's pipeline (or ``--pipeline``). What happens goes to stdout as JSON lines —
``{"stage": …}``, ``{"enter": pass}``/``{"leave": pass}`` while passes run, and finally one
``{"outcome": …}`` — so that a parent that sees the child die of a signal or time out still
knows the stage and the innermost pass running."""

from __future__ import annotations

import json
import sys


def _say(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def _die_with_parent() -> None:
    """A probe never outlives the reducer (Linux: the kernel kills it when the parent dies)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _error_class(err: BaseException) -> str:
    """The class of what TVM raised: the cause of our one-message error when there is one."""
    inner = err.__cause__ or err.__context__
    return type(inner).__name__ if inner is not None else type(err).__name__


def run(spec: dict) -> int:
    from tvm_explorer.supervise import memlimit

    memlimit.apply(spec.get("memory_limit") or 0)
    stage = "import"
    passes: list[str] = []
    try:
        _say(stage="load")
        from tvm_explorer.frontends import import_any, load_any
        from tvm_explorer.provenance import OriginTable

        model = load_any(spec["model"])
        _say(stage="import")
        mod = import_any(model, OriginTable())
        if spec.get("until") == "import":
            _say(outcome="ok", stage="import")
            return 0
        stage = "compile"
        _say(stage="compile")
        import tvm

        from tvm_explorer.capture.pipeline import build, make_target

        user = None
        if spec.get("pipeline"):
            from tvm_explorer.capture.custom_pipeline import make_pipeline

            user = make_pipeline(spec["pipeline"], make_target(spec["target"]))

        @tvm.ir.instrument.pass_instrument
        class _Where:
            def run_before_pass(self, _mod, info):
                passes.append(info.name)
                _say(enter=info.name)

            def run_after_pass(self, _mod, info):
                if passes:
                    passes.pop()
                _say(leave=info.name)

        build(mod, spec["target"], [_Where()], user)
    except BaseException as err:  # noqa: BLE001 - every failure is an outcome to compare
        if isinstance(err, KeyboardInterrupt):
            raise
        text = " ".join(str(err).split()) or type(err).__name__
        kind = "oom" if memlimit.hit_limit(err, spec.get("memory_limit") or 0) else "error"
        _say(
            outcome=kind,
            stage=stage,
            error_class=_error_class(err),
            message=text[:2000],
            pass_name=passes[-1] if passes else None,
        )
        return 0
    _say(outcome="ok", stage=stage)
    return 0


def main() -> int:
    _die_with_parent()
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())

"""One probe of ``reduce``, run as a child process (``python -m tvm_explorer.reduce.probe
SPEC``): import the model with the product's importer (its failures name the operator), then
build it with TVM's pipeline (or ``--pipeline``). What happens goes to stdout as JSON lines —
``{"stage": …}``, ``{"enter": pass}``/``{"leave": pass}`` while passes run, and finally one
``{"outcome": …}`` — so that a parent that sees the child die of a signal or time out still
knows the stage and the innermost pass running."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping


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

        if spec.get("until") == "diverge":
            return _diverge(spec, model, _Where(), user)
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


def _diverge(spec: dict, model, where, user) -> int:
    """``--until diverge``: build as ``compile --numerics --numerics-unfused`` does (the
    capture session keeps the last Relax module and provenance), run the sub-model and the
    reference engine on it (or on ``spec["reference"]``, the reference cut the same way) and
    say the first divergent layer: ``{"outcome": "diverge", "opcode": …}``, or ``ok``."""
    import tvm

    from tvm_explorer.capture.compile_recorder import CaptureSession
    from tvm_explorer.capture.pipeline import make_target, relax_pipeline
    from tvm_explorer.frontends import import_any
    from tvm_explorer.numerics.run import NumericsOptions, check_request, run_numerics
    from tvm_explorer.provenance import OriginTable

    options = NumericsOptions(reference=spec.get("reference"), unfused=True, pipeline=spec.get("pipeline"))
    check_request(model, spec["target"], options)
    origins = OriginTable()
    session = CaptureSession(model, None, origins)
    mod = import_any(model, origins)
    session.record("import", mod, "relax")
    target = make_target(spec["target"])
    with tvm.transform.PassContext(opt_level=3, instruments=[session.instrument(), where]):
        executable = tvm.compile(mod, target, relax_pipeline=user or relax_pipeline(spec["target"], target))
    _say(stage="numerics")
    data = run_numerics(model, spec["target"], executable, session.final_relax, origins, options)
    # the unfused build sees each layer; a fault only the fused build shows (in fusion) counts too
    first = data.get("first_divergence") or data.get("fused_first_divergence")
    if first is None:
        _say(outcome="ok", stage="numerics")
        return 0
    layer = next(e for e in data["layers"] if (e["subgraph"], e["op_index"]) == (first["subgraph"], first["op_index"]))
    figures: Mapping[str, object] = (
        layer if layer.get("observed") and layer.get("diverges") else layer.get("fused") or layer
    )
    error = ", ".join(
        f"{label} {figures[key]:.4g}"
        for key, label in (("max_abs", "max abs error"), ("cosine", "cosine"))
        if isinstance(figures.get(key), float)
    )
    if figures.get("steps") is not None:
        error += f", {figures['steps']} steps"
    _say(
        outcome="diverge",
        stage="numerics",
        opcode=layer["opcode"],
        op_index=layer["op_index"],
        message=f"first divergent layer: {layer['opcode']} {layer['name']} ({error}) against the {data['reference']}",
    )
    return 0


def main() -> int:
    _die_with_parent()
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())

"""tvm.relax.frontend.nn models (TVM's own model API): every op the module emits is a node
with its module path and the exact line of the nn.Module code that called it, through every
pass (Capture.from_nn and ``compile FILE.py:FACTORY``). The model is written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tvm.relax.frontend import nn

# The CLI test runs this file as the user's model file (FILE.py:FACTORY): the test helpers
# are imported inside the tests, where pytest's paths reach them.

HERE = Path(__file__).resolve()
D = 16


class MLP(nn.Module):
    def __init__(self, d: int, hidden: int):
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = nn.op.silu(self.up(x))  # LINE mlp.up
        return self.down(h)  # LINE mlp.down


class Attention(nn.Module):
    def __init__(self, d: int):
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.scale = d**-0.5

    def forward(self, x):
        q = self.q_proj(x)  # LINE attn.q_proj
        k = self.k_proj(x)  # LINE attn.k_proj
        v = self.v_proj(x)  # LINE attn.v_proj
        scores = nn.op.matmul(q, nn.op.permute_dims(k, [0, 2, 1])) * self.scale  # LINE attn.scores
        return nn.op.matmul(nn.op.softmax(scores, axis=-1), v)  # LINE attn.out


class Block(nn.Module):
    def __init__(self, d: int):
        self.attn = Attention(d)
        self.mlp = MLP(d, 2 * d)

    def forward(self, x):
        x = x + self.attn(x)  # LINE block.attn
        return x + self.mlp(x)  # LINE block.mlp


class TinyNet(nn.Module):
    def __init__(self, d: int = D, n: int = 2):
        self.layers = nn.ModuleList([Block(d) for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)  # LINE net.layer
        return x


def make_net():
    """The CLI's FACTORY: the module and its export spec."""
    return TinyNet(), {"forward": {"x": nn.spec.Tensor([1, 4, D], "float32")}}


LINES = {
    line.split("# LINE ", 1)[1].strip(): n
    for n, line in enumerate(HERE.read_text().splitlines(), 1)
    if "# LINE " in line and not line.lstrip().startswith(("line", "if"))
}


@pytest.fixture(scope="session")
def nn_bundle(tmp_path_factory) -> Path:
    """TinyNet through the Python API, built for llvm."""
    import tvm

    from tvm_explorer import Capture

    out = tmp_path_factory.mktemp("nn") / "tiny.bundle"
    module, spec = make_net()
    with Capture.from_nn(module, spec, out, profile=2) as cap:
        ex = tvm.compile(cap.module, "llvm", relax_pipeline=cap.pipeline("llvm"))
        cap.add_executable(ex)
    return out


def test_every_op_knows_its_module_path_and_exact_line(nn_bundle):
    from tvm_explorer.bundle.reader import Bundle

    b = Bundle(nn_bundle)
    assert b.manifest["model"]["kind"] == "nn"
    by_name = {lay.name: lay for lay in b.layers}
    expected = {
        "layers.0.attn.q_proj/matmul": ("Linear", "attn.q_proj"),
        "layers.1.attn.k_proj/matmul": ("Linear", "attn.k_proj"),
        "layers.0.attn.v_proj/permute_dims": ("Linear", "attn.v_proj"),
        "layers.1.mlp.up/matmul": ("Linear", "mlp.up"),
        "layers.0.mlp/silu": ("MLP", "mlp.up"),
        "layers.1.mlp.down/matmul": ("Linear", "mlp.down"),
        "layers.0.attn/softmax": ("Attention", "attn.out"),
        "layers.0.attn/mul": ("Attention", "attn.scores"),
        "layers.1/add": ("Block", "block.attn"),
        "layers.1/add_1": ("Block", "block.mlp"),
    }
    for name, (cls, line) in expected.items():
        lay = by_name[name]
        assert lay.module_class == cls, (name, lay.module_class)
        assert lay.source == (str(HERE), LINES[line]), (name, lay.source, LINES[line])
    # the whole stack, from the spec's method inward: this file's frames, then TVM's nn.Linear
    q = by_name["layers.0.attn.q_proj/matmul"]
    ours = [(line, fn) for file, line, fn in q.stack if file == str(HERE)]
    assert ours == [
        (LINES["net.layer"], "forward"),
        (LINES["block.attn"], "forward"),
        (LINES["attn.q_proj"], "forward"),
    ]
    assert q.stack[0][0] == str(HERE) and "tvm/relax/frontend/nn/" in q.stack[-1][0], q.stack
    # every op emitted inside the module has a source line in this file
    assert all(lay.source and lay.source[0] == str(HERE) for lay in b.layers)
    document = (nn_bundle / "model.nngraph").read_text()
    assert "module tree" in document and "q_proj (Linear): 2 op(s)" in document
    assert f"source frontends/test_nn.py:{LINES['attn.q_proj']}" in document


def test_origins_survive_every_pass(nn_bundle):
    from conftest import run_cli
    from frontends.bundle_checks import assert_full_coverage, lines_matching, origins

    assert_full_coverage(nn_bundle)
    cov = json.loads(run_cli("coverage", nn_bundle, "--json", check=True).stdout)
    relax_passes = [p for p in cov["passes"] if p["stage"] == "relax"]
    assert relax_passes and all(p["attributed"] == p["units"] for p in relax_passes)
    # the final TIR: a kernel of layer 1's q_proj reaches its line of forward()
    tir = sorted(p for p in (nn_bundle / "tir").iterdir())[-1].relative_to(nn_bundle)
    line = lines_matching(nn_bundle, str(tir), r"    def matmul\(")[0]  # the projections' kernel
    found = origins(nn_bundle, f"{tir}:{line}")
    q = [o for o in found if o["name"] == "layers.1.attn.q_proj/matmul"]
    assert q and q[0]["source"]["line"] == LINES["attn.q_proj"], found
    costs = json.loads((nn_bundle / "costs.json").read_text())
    assert costs["profile"]["status"] == "measured" and costs["total_ms"] > 0


def test_cli_compiles_file_factory(tmp_path):
    from conftest import run_cli
    from frontends.bundle_checks import lines_matching, origins

    out = tmp_path / "cli.bundle"
    proc = run_cli("compile", f"{HERE}:make_net", "-o", out, "--target", "c", check=True)
    assert "generated c:" in proc.stdout
    from tvm_explorer.bundle.reader import Bundle

    b = Bundle(out)
    assert b.manifest["model"]["file"] == "test_nn.py:make_net"
    q = next(lay for lay in b.layers if lay.name == "layers.0.attn.q_proj/matmul")
    assert q.source == (str(HERE), LINES["attn.q_proj"])
    c_line = lines_matching(out, "code/module.c", r"matmul_intermediate_ptr\[cse_v1\] = \(")[0]
    assert origins(out, f"code/module.c:{c_line}")


def test_bad_factories_are_one_message(tmp_path):
    from conftest import run_cli

    bad = tmp_path / "bad.py"
    bad.write_text("def make():\n    return 42\n\ndef boom():\n    raise RuntimeError('no weights here')\n")
    for factory, words in (
        ("make", "make() must return (nn.Module, spec), not int"),
        ("boom", "running it failed: RuntimeError: no weights here"),
    ):
        proc = run_cli("compile", f"{bad}:{factory}", "-o", tmp_path / "b.bundle")
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        assert words in proc.stderr, proc.stderr
    assert not (tmp_path / "b.bundle").exists()
    proc = run_cli("compile", f"{HERE}:make_net", "-o", tmp_path / "n.bundle", "--numerics")
    assert proc.returncode != 0 and "a tvm.relax.frontend.nn module has none besides TVM" in proc.stderr, proc.stderr
    assert not (tmp_path / "n.bundle").exists()  # refused before compiling

"""A 32-layer Llama-style model (issue 32): capture against a stock TVM compile, side by side.

The model is Hugging Face ``LlamaForCausalLM`` built from a config with random weights
(nothing downloaded; hidden 512, 32 decoder layers, 8 heads, MLP 1024, vocabulary 4096:
88 M parameters, 336 MiB of float32 weights), wrapped to return logits without a KV cache and
exported with ``torch.export`` on 16 token ids, then saved as a ``.pt2``. Each compile runs
in a fresh process (``_worker.py compile``): ``stock`` is a plain import and compile with no
provenance (``--no-spans``), ``capture`` writes the whole bundle. Then the language server
opens the bundle (``server_scaling.py``: a fresh ``tvm-explorer serve`` per run, hover at an
indexed position of the last TIR document until it answers; median of ``--reps``) and its
memory is read.

    nice .venv/bin/python bench/llm_scale.py [--target c] [--reps 3] [--layers 32] [--json FILE]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
import server_scaling  # noqa: E402

SEQ = 16


def export_llama(path: Path, layers: int) -> dict:
    """Save the model at ``path``; what it is."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    class Logits(torch.nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, ids):
            return self.lm(input_ids=ids, use_cache=False).logits

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=4096,
        hidden_size=512,
        intermediate_size=1024,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=8,
        max_position_embeddings=256,
    )
    model = Logits(LlamaForCausalLM(config)).eval()
    params = sum(p.numel() for p in model.parameters())
    ids = torch.randint(0, config.vocab_size, (1, SEQ))
    t0 = time.perf_counter()
    program = torch.export.export(model, (ids,))
    export_s = time.perf_counter() - t0
    torch.export.save(program, path)
    nodes = sum(1 for n in program.graph.nodes if n.op == "call_function")
    return {
        "layers": layers,
        "parameters": params,
        "weights_bytes": params * 4,
        "export_s": export_s,
        "fx_nodes": nodes,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="c")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3, help="fresh servers for the first answer (median)")
    ap.add_argument("--json")
    args = ap.parse_args()
    print(bl.machine_note(), flush=True)
    work = Path(tempfile.mkdtemp(prefix="tvmx-llm-bench-"))
    try:
        model = work / "llama.pt2"
        info = export_llama(model, args.layers)
        print(
            f"model: {info['layers']} layers, {info['parameters'] / 1e6:.1f} M parameters "
            f"({bl.mib(info['weights_bytes'])}), {info['fx_nodes']} FX nodes, .pt2 {bl.mib(model.stat().st_size)}",
            flush=True,
        )
        runs = {}
        for variant in ("stock", "capture"):
            out = work / f"llama.{variant}.bundle"
            runs[variant] = bl.run_worker(
                "compile", model=str(model), target=args.target, variant=variant, out=str(out), keep=True
            )
            r = runs[variant]
            print(
                f"  {variant:8s} wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, peak RSS {bl.mib(r['peak'])}", flush=True
            )
        bundle = work / "llama.capture.bundle"
        server = server_scaling.measure(bundle, [1], work, reps=args.reps)[0]
        stock, cap = runs["stock"], runs["capture"]
        rows = [
            ["compile wall s", f"{stock['wall']:.1f}", f"{cap['wall']:.1f}", f"{cap['wall'] / stock['wall']:.2f}×"],
            ["compile CPU s", f"{stock['cpu']:.1f}", f"{cap['cpu']:.1f}", f"{cap['cpu'] / stock['cpu']:.2f}×"],
            ["peak RSS", bl.mib(stock["peak"]), bl.mib(cap["peak"]), f"{cap['peak'] / stock['peak']:.2f}×"],
            ["bundle", "—", bl.mib(cap["bundle_bytes"]), f"{cap['bundle_files']} files"],
            [
                "server first answer s",
                "—",
                f"{server['first_answer_s']:.2f}" if server["first_answer_s"] is not None else "no answer",
                "of " + ", ".join(f"{x:.2f}" for x in server["first_answers"] if x is not None),
            ],
            ["server RSS at first answer", "—", bl.mib(server["rss_at_first"]), f"peak {bl.mib(server['hwm'])}"],
        ]
        print()
        print(bl.table(["32-layer Llama (" + args.target + ")", "stock TVM", "capture", "ratio / note"], rows))
        bl.save_json(args.json, {"model": info, "target": args.target, "runs": runs, "server": server})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tiny Hugging Face language models (Llama, GPT-2, BERT) built from a config with seeded
random weights (nothing downloaded), wrapped the way a user exports them, and exported with
``torch.export``. The wrapper's ``forward`` is the entry frame of every node's stack.
"""

from __future__ import annotations

from pathlib import Path

import torch

SEQ = 8
VOCAB = 128


class Wrapper(torch.nn.Module):
    """What a user writes to export a Hugging Face model: token ids in, logits out."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, ids):
        return self.m(input_ids=ids).logits  # the entry frame: WRAPPER_LINE


WRAPPER_LINE = 24


def _config(name: str):
    import transformers

    if name == "llama":
        return transformers.LlamaForCausalLM, transformers.LlamaConfig(
            vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    if name == "gpt2":
        return transformers.GPT2LMHeadModel, transformers.GPT2Config(
            vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64, use_cache=False,
            bos_token_id=0, eos_token_id=0)
    if name == "bert":
        return transformers.BertForMaskedLM, transformers.BertConfig(
            vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=64)
    raise KeyError(name)


def export(name: str, path: Path, dynamic_seq: bool = False) -> Path:
    """Export the tiny ``name`` model (seeded random weights) to ``path`` (.pt2);
    ``dynamic_seq``: the sequence length a ``torch.export.Dim``."""
    cls, config = _config(name)
    torch.manual_seed(0)
    model = Wrapper(cls(config).eval()).eval()
    ids = torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(0))
    shapes = {"ids": {1: torch.export.Dim("seq", min=2, max=32)}} if dynamic_seq else None
    torch.export.save(torch.export.export(model, (ids,), dynamic_shapes=shapes), path)
    return path

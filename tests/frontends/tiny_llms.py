"""Tiny Hugging Face language models (Llama, GPT-2) built from a config with random weights
(nothing downloaded) and exported with the real ``torch.export``: the workload of issue 32,
small enough for tests (2 layers, hidden 32, vocabulary 128, 8 tokens)."""

from __future__ import annotations

from pathlib import Path

import torch

SEQ = 8
VOCAB = 128


class Logits(torch.nn.Module):
    """A causal LM as a user exports it: token ids in, logits out, no KV cache."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, ids):
        return self.lm(input_ids=ids, use_cache=False).logits


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return Logits(LlamaForCausalLM(config)).eval()


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0)
    return Logits(GPT2LMHeadModel(config)).eval()


def export(model, path: Path, dynamic_seq: bool = False) -> Path:
    """Save ``model`` exported on 8 token ids (``dynamic_seq``: the sequence length a
    ``torch.export.Dim``)."""
    ids = torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(0))
    shapes = {"ids": {1: torch.export.Dim("seq", min=2, max=32)}} if dynamic_seq else None
    torch.export.save(torch.export.export(model, (ids,), dynamic_shapes=shapes), path)
    return path

"""Save a tiny random Hugging Face causal LM and its tokenizer to a folder, for
``examples/token_hf.toml`` (``task = "hf"``). Nothing is downloaded. Needs the hf extra:

    python examples/tiny_hf_model.py models/tiny-llama
    ppo train --config examples/token_hf.toml

The tokenizer knows the digit-sum prompts' tokens (``0``..``9``, ``+``, ``=``); the Z tokens
and ``<ANSWER>`` are added tokens, as they would be added to a real checkpoint's tokenizer.
Any causal LM folder works the same way: add the tokens, resize the embeddings, save.
"""

from __future__ import annotations

import sys

from telemetry.integrations import missing_extra

try:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
except ImportError as exc:
    missing_extra("hf", "the tiny model", exc)

Z_TOKENS = [f"Z{d}" for d in range(10)]
TINY = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}
"""A 2-layer Llama of hidden size 32 (LlamaConfig's defaults otherwise, 4 heads)."""
SHAPE = {"num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 64}


def save_tiny_model(folder: str, seed: int = 0) -> None:
    """A 2-layer Llama of hidden size 32 and its word-level tokenizer, saved to ``folder``."""
    words = ["<pad>", "</s>", *"0123456789", "+", "="]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="</s>"
    )
    tokenizer.add_tokens([*Z_TOKENS, "<ANSWER>"])
    torch.manual_seed(seed)
    ids = {"pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}
    config = LlamaConfig(vocab_size=len(tokenizer), **TINY, **SHAPE, **ids)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python examples/tiny_hf_model.py FOLDER", file=sys.stderr)
        raise SystemExit(2)
    save_tiny_model(sys.argv[1])
    print(f"saved a tiny Llama and its tokenizer to {sys.argv[1]}")

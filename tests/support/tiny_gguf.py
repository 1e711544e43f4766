"""A tiny Gemma 3 GGUF file in the real format: the layout of ``gemma-3-270m-q4_k_m.gguf``
(llama.cpp's ``gemma3`` metadata, tensor names and ``norm + 1`` weights; a SentencePiece BPE
vocabulary with control, user-defined and byte pieces, and merge ranks as scores), with a
randomly initialised 2-layer ``Gemma3ForCausalLM`` in float32 and a vocabulary learnt from a
few captions. :mod:`clapcap.captioning.gemma3` converts it as it converts the real file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import torch

SPECIAL = [("<pad>", 3), ("<eos>", 3), ("<bos>", 3), ("<unk>", 3), ("<mask>", 3), ("<start_of_turn>", 3),
           ("<end_of_turn>", 3), ("\n", 4), ("\n\n", 4), ("  ", 4)]  # (piece, SentencePiece type)
BYTES = [(f"<0x{b:02X}>", 6) for b in range(256)]


def learn_bpe(captions: list[str], merges: int) -> tuple[list[str], list[str]]:
    """A SentencePiece-style BPE on ``captions``: merged pieces in merge order, then characters.

    A piece never spans a word start (``▁`` begins a word), as in SentencePiece.
    """
    words = Counter()
    for caption in captions:
        for word in caption.replace(" ", " ▁").split(" "):
            if word:
                words[tuple(word)] += 1
    chars = sorted({c for w in words for c in w})
    merged: list[str] = []
    for _ in range(merges):
        pairs = Counter()
        for word, n in words.items():
            for a, b in zip(word, word[1:], strict=False):
                pairs[a, b] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merged.append(a + b)
        new = Counter()
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == (a, b):
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            new[tuple(out)] += n
        words = new
    return merged, chars


def tiny_gemma3_config(vocab_size: int):
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=128,
                            sliding_window=16, pad_token_id=0, eos_token_id=1, bos_token_id=2)


def write_tiny_gemma3_gguf(path: Path, captions: list[str], *, merges: int = 60, seed: int = 0):
    """Write the tiny GGUF file at ``path``.

    Returns:
        ``(pieces, model)``: the vocabulary as ``(piece, score, type)`` rows, and the float32
        ``Gemma3ForCausalLM`` whose weights the file holds.
    """
    import gguf
    from transformers import Gemma3ForCausalLM

    merged, chars = learn_bpe(captions, merges)
    # Gemma's order: special and user-defined pieces, bytes, merges by rank, characters last.
    pieces = [(p, -1000.0, t) for p, t in SPECIAL] + [(p, 0.0, t) for p, t in BYTES]
    pieces += [(p, -float(i), 1) for i, p in enumerate(merged)]
    pieces += [(p, -float(len(merged) + i), 1) for i, p in enumerate(chars)]
    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(tiny_gemma3_config(len(pieces))).float().eval()
    cfg = model.config
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_name("tiny gemma3")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_sliding_window(cfg.sliding_window)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list([p for p, _, _ in pieces])
    w.add_token_scores([s for _, s, _ in pieces])
    w.add_token_types([t for _, _, t in pieces])
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA3, cfg.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":  # tied to the embeddings, as in the real file
            continue
        base, suffix = name.rsplit(".", 1)
        value = tensor.detach().float().numpy()
        if name.endswith("norm.weight"):
            value = value + 1.0  # llama.cpp stores Gemma's RMSNorm scale as 1 + w
        w.add_tensor(f"{names.get_name(base)}.{suffix}", value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return pieces, model


def split_file(path: Path, n: int) -> list[Path]:
    """Split ``path`` into ``n`` files ``<name>.part00`` ... beside it, as the PyPI parts are."""
    data = path.read_bytes()
    size = -(-len(data) // n)
    parts = []
    for i in range(n):
        part = path.with_name(f"{path.name}.part{i:02d}")
        part.write_bytes(data[i * size:(i + 1) * size])
        parts.append(part)
    return parts

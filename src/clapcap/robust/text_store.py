"""The base CLAP's frozen text layers for every RobustCLAP fine-tune, computed once.

RobustCLAP on the MiniLM CLAP fine-tunes with a frozen text tower (``text_trainable_layers:
0``), so a text's tower output is the same in every epoch and in every fine-tune of the same
base: RobustCLAP, its captions-only control and each seed of the seed study. Each of them
used to compute the tower for the same 12,000 captions and views (85-97 s of 2-core CPU
apiece, the largest part of a fine-tune). The ``robust_text_store`` stage computes them once
into ``out_dir`` (:func:`clapcap.clap.frozen_text.fill_store`), and the fine-tunes
read it (``robust_train.text_store``, read only: it is this stage's output).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap.robust.config import RobustTextStoreParams
from clapcap.robust.data import VIEW_COLUMNS, valid_text
from clapcap.utils.skip import skip_if_inputs_skipped

logger = logging.getLogger(__name__)


def store_texts(paraphrase_dir: str | Path, splits: list[str]) -> list[str]:
    """Every caption and view text of ``splits`` in the paraphrase manifest, and "" (the text
    a missing view is tokenized as), in manifest order, duplicates removed.

    Raises:
        ValueError: when a split has no clips or a view column is missing.
    """
    from clapcap.data.prepare import load_dataset

    manifest = load_dataset(paraphrase_dir).manifest
    missing = [c for c in VIEW_COLUMNS.values() if c not in manifest.columns]
    if missing:
        raise ValueError(f"{paraphrase_dir}: the manifest has no view column(s) {missing} (run robust_paraphrase)")
    texts: dict[str, None] = {"": None}
    for split in splits:
        rows = manifest[manifest["split"] == split]
        if rows.empty:
            raise ValueError(f"{paraphrase_dir}: no clips in split {split!r}")
        for col in ("captions", *VIEW_COLUMNS.values()):
            for values in rows[col]:
                for text in values if isinstance(values, list) else []:
                    if valid_text(text):
                        texts[text] = None
    return list(texts)


def build_text_store(params: RobustTextStoreParams, *, progress: bool = True) -> dict[str, Any]:
    """Fill ``params.out_dir`` with the base model's frozen-text store for each
    ``text_trainable_layers`` value; write ``out_dir/store.json`` (what it holds).

    Returns:
        The ``store.json`` record: ``files`` (store file -> texts) and ``n_texts``.
    """
    from clapcap.clap.frozen_text import fill_store
    from clapcap.clap.minilm import set_text_trainable
    from clapcap.clap.model import load_clap
    from clapcap.encoders.checkpoints import resolve_base_clap
    from clapcap.utils.io import write_json

    if skip_if_inputs_skipped([params.paraphrase_dir], [params.out_dir], stage="robust_text_store"):
        return {"skipped": True}
    base = resolve_base_clap(params.base_model, revision=params.base_revision, section="robust_text_store")
    texts = store_texts(params.paraphrase_dir, params.splits)
    out_dir = Path(params.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for layers in params.text_trainable_layers:
        model, tokenizer, _, _ = load_clap(base.path)
        model.eval()
        set_text_trainable(model, layers)
        path, n = fill_store(model, tokenizer, layers, texts, out_dir, progress=progress)
        logger.info("%s: frozen text layers of %d texts (text_trainable_layers=%d)", path, n, layers)
        files[path.name] = {"text_trainable_layers": layers, "n_texts": n}
    record = {"base_model": params.base_model, **{f"base_{k}": v for k, v in base.record().items() if k != "checkpoint"},
              "splits": params.splits, "n_texts": len(texts), "files": files}
    write_json(out_dir / "store.json", record)
    return record

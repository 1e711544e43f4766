"""Run one long stage and freeze it at a chosen point, so that a test can SIGKILL it there.

Usage (the ``sigkill_at`` fixture in tests/conftest.py builds the call)::

    python tests/crash_driver.py '{"kind": ..., "params": {...}, "at": ..., "n": N, "marker": PATH}'

``kind``: ``clap`` (:func:`~clapcap.clap.train.train_clap`, params of ``TrainClapParams``),
``tracked_clap`` (the same at its tracked edge, :func:`~clapcap.tracked.clap.run_synth_clap`:
its MLflow run is open at the kill; the store is ``$MLFLOW_TRACKING_URI``),
``robust`` (:func:`~clapcap.robust.train.train_robust_clap`, ``RobustTrainParams``) or
``embed`` (:func:`~clapcap.encoders.embed.embed_dataset`; params ``encoder`` (an
``EncoderConfig`` dict), ``dataset_dir``, ``split``, ``out``).

``at`` (where to freeze; ``n`` is 1-based):

- ``checkpoint_write``: writing the checkpoint of epoch ``n``: half of its bytes are in the
  temporary file, the rename has not happened;
- ``train_step``: inside training step ``n`` (counted over the whole run);
- ``audio_batch``: inside audio batch ``n`` of a dump;
- ``dump_write``: writing the final ``.npz``: half of its bytes are in the temporary file.

On reaching it the driver writes ``marker`` and sleeps until it is killed. The hooks only
wrap library functions from outside; the library has no test switch.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any


def _freeze(marker: str) -> None:
    Path(marker).write_text(str(os.getpid()))
    while True:  # until SIGKILL
        time.sleep(60)


def _write_half_and_freeze(target: Any, data: bytes, marker: str) -> None:
    """Write half of ``data`` to ``target`` (a path, or an open binary file) and freeze."""
    if hasattr(target, "write"):
        target.write(data[: len(data) // 2])
        target.flush()
        os.fsync(target.fileno())
        _freeze(marker)
    with open(target, "wb") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
        os.fsync(fh.fileno())
    _freeze(marker)


def _hook_checkpoint_write(n: int, marker: str) -> None:
    import torch

    real = torch.save

    def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(obj, dict) and len(obj.get("history", [])) == n:
            buf = io.BytesIO()
            real(obj, buf, *args, **kwargs)
            _write_half_and_freeze(f, buf.getvalue(), marker)
        real(obj, f, *args, **kwargs)

    torch.save = save


def _hook_train_step(n: int, marker: str) -> None:
    import clapcap.clap.train as clap

    real_fit, calls = clap.fit, [0]

    def fit(model: Any, **kwargs: Any) -> Any:
        loss_fn = kwargs.get("loss_fn", clap.symmetric_contrastive_loss)

        def counting(model: Any, batch: Any) -> Any:
            calls[0] += 1
            if calls[0] == n:
                _freeze(marker)
            return loss_fn(model, batch)

        return real_fit(model, **{**kwargs, "loss_fn": counting})

    clap.fit = fit  # train_clap calls the module global; robust imports it at call time


def _hook_audio_batch(n: int, marker: str) -> None:
    import clapcap.encoders.embed as embed

    real_create = embed.create_encoder

    def create(cfg: Any) -> Any:
        encoder, calls = real_create(cfg), [0]
        real_embed = encoder.embed_audio

        def embed_audio(waves: Any) -> Any:
            calls[0] += 1
            if calls[0] == n:
                _freeze(marker)
            return real_embed(waves)

        encoder.embed_audio = embed_audio
        return encoder

    embed.create_encoder = create


def _hook_dump_write(n: int, marker: str) -> None:
    import clapcap.data.dump as dump

    real = dump.write_npz_deterministic

    def write(path: Any, arrays: Any) -> None:
        buf = io.BytesIO()
        real(buf, arrays)
        _write_half_and_freeze(path, buf.getvalue(), marker)

    dump.write_npz_deterministic = write


HOOKS = {"checkpoint_write": _hook_checkpoint_write, "train_step": _hook_train_step,
         "audio_batch": _hook_audio_batch, "dump_write": _hook_dump_write}


def main(spec: dict[str, Any]) -> None:
    import torch

    from clapcap.config import from_dict

    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    torch.set_num_threads(1)
    HOOKS[spec["at"]](int(spec["n"]), spec["marker"])
    params = spec["params"]
    if spec["kind"] == "clap":
        from clapcap.clap.config import TrainClapParams
        from clapcap.clap.train import train_clap

        train_clap(from_dict(TrainClapParams, params), progress=False)
    elif spec["kind"] == "tracked_clap":
        from clapcap.clap.config import TrainClapParams
        from clapcap.tracked.clap import run_synth_clap

        run_synth_clap(from_dict(TrainClapParams, params), progress=False)
    elif spec["kind"] == "robust":
        from clapcap.robust.config import RobustTrainParams
        from clapcap.robust.train import train_robust_clap

        train_robust_clap(from_dict(RobustTrainParams, params), progress=False)
    else:
        from clapcap.encoders.base import EncoderConfig
        from clapcap.encoders.embed import embed_dataset

        record = {k: v for k, v in params["encoder"].items() if k != "device"}  # set by `compute`, not a key
        embed_dataset(from_dict(EncoderConfig, record), params["dataset_dir"], params["split"],
                      params["out"], progress=False)
    sys.exit(3)  # reaching the end means the pause point was never hit


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

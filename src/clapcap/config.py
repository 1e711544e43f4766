"""Typed run parameters: ``params.yaml`` parsed into dataclasses that reject unknown keys.

Each stage owns one section of ``params.yaml``. A section is described by a (possibly
nested) dataclass; :func:`from_dict` builds it and raises :class:`ConfigError` naming
the offending key path on an unknown key, a missing required key or a wrong type.

Library areas define their own section dataclasses next to their code (for example
``clapcap.retrieval.config``) and load them with :func:`load_section`, so this module
imports nothing from the rest of the package.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from clapcap.errors import ConfigError

T = TypeVar("T")

DEFAULT_PARAMS = Path("params.yaml")

# The top-level keys of ``params.yaml``: the sections that the stages load with
# :func:`load_section` (each owned by its library area), plus ``study``. Any other key is
# refused whenever a section is loaded: a misspelt section would otherwise be ignored and
# its stage would run on its defaults.
PARAMS_SECTIONS = frozenset({
    "caption_sbert", "caption_subsets", "caption_vocab", "captioning", "checkpoint_identity", "clap_variants", "compute", "data", "dcase_export", "embed",
    "embed_pretrained", "metrics_summary", "model_cards", "music_subset", "pairwise", "pretrained_lms", "real_benchmark", "real_captioning", "real_clap", "real_corpus", "real_data", "real_caption_refs", "real_caption_vocab", "real_captioning_study", "real_embed_pretrained", "real_paraphrase", "real_paraphrase_llm", "real_subsets", "real_robust", "real_robust_llm", "reference",
    "reference_baselines", "report", "report_inputs",
    "retrieval", "robust_benchmark", "robust_control", "robust_kinds", "robust_paraphrase", "robust_paraphrase_llm", "robust_seeds",
    "robust_text_store", "robust_train", "robust_view_source", "robust_views", "train_clap", "training_curves",
})
# ``study``: which grid ``params.yaml`` holds, one of the files ``studies/<name>.yaml``
# (written by ``clapcap pipeline study <name>`` / ``make repro STUDY=<name>``).
STUDIES = ("full", "reduced")


class _Yaml12FloatLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's float syntax.

    PyYAML follows YAML 1.1, where ``1e-07`` (no dot) is a string. DVC reads and writes
    ``params.yaml`` as YAML 1.2 (ruamel), and ``dvc exp run -S train_clap.optim.lr=1e-7`` writes
    exactly ``lr: 1e-07``: without this, the stage would refuse the value DVC itself reads
    as a float.
    """


_Yaml12FloatLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """Check ``value`` against the annotation ``tp`` and convert nested dataclasses."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(f"{where}: expected {_type_name(tp)}, found {type(value).__name__}", key=where)
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: expected one of {list(args)}, found {value!r}", key=where)
        return value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, found {type(value).__name__}", key=where)
        return from_dict(tp, value, where=where)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected list, found {type(value).__name__}", key=where)
        item_tp = args[0] if args else Any
        items = [_coerce(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected mapping, found {type(value).__name__}", key=where)
        key_tp, val_tp = args if args else (Any, Any)
        return {
            _coerce(k, key_tp, f"{where}.<key>"): _coerce(v, val_tp, f"{where}.{k}")
            for k, v in value.items()
        }
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected float, found {type(value).__name__} {value!r}", key=where)
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected int, found {type(value).__name__} {value!r}", key=where)
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ConfigError(
                f"{where}: expected {tp.__name__}, found {type(value).__name__} {value!r}", key=where
            )
        return value
    return value


def _nested_hint(unknown: list[str], hints: dict[str, Any]) -> str:
    """`` (did you mean optim.lr?)`` when the unknown keys are keys of a nested block: what a
    params file written before the block existed holds."""
    for name, hint in hints.items():
        if dataclasses.is_dataclass(hint) and set(unknown) <= {f.name for f in dataclasses.fields(hint)}:
            return f" (did you mean {', '.join(f'{name}.{k}' for k in unknown)}? they belong in the {name} block)"
    return ""


def from_dict(cls: type[T], data: dict[str, Any], *, where: str = "") -> T:
    """Build dataclass ``cls`` from ``data``.

    Returns:
        An instance of ``cls``.

    Raises:
        ConfigError: on an unknown key, a missing required key, a wrong type or a value
            that ``cls`` refuses (a ``ValueError`` of its ``__post_init__``); the message
            names the dotted key path (``where`` is its prefix).
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    if not isinstance(data, dict):
        raise ConfigError(f"{where or cls.__name__}: expected a mapping, found {type(data).__name__}",
                          key=where or None)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        prefix = f"{where}." if where else ""
        first = next(k for k in data if k in unknown)  # the first one in the file
        raise ConfigError(
            f"unknown key(s) {', '.join(prefix + k for k in unknown)} "
            f"for {cls.__name__}; allowed: {', '.join(sorted(fields))}{_nested_hint(unknown, hints)}",
            key=prefix + str(first),
        )
    kwargs = {}
    for name, field in fields.items():
        key = f"{where}.{name}" if where else name
        if name in data:
            kwargs[name] = _coerce(data[name], hints[name], key)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(f"missing required key {key} for {cls.__name__}", key=where or None)
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except ValueError as err:  # a check in __post_init__ that does not name its key
        raise ConfigError(f"{where or cls.__name__}: {err}", key=where or None) from err


def to_dict(obj: Any) -> dict[str, Any]:
    """Plain-dict view of a config dataclass (for logging and result files)."""
    return dataclasses.asdict(obj)


def read_params(path: str | Path = DEFAULT_PARAMS) -> dict[str, Any]:
    """Read a YAML parameter file into a dict.

    Raises:
        ConfigError: when the file is missing, is not valid YAML (naming the line) or its
            top level is not a mapping.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: parameter file not found")
    try:
        with path.open() as fh:
            data = yaml.load(fh, Loader=_Yaml12FloatLoader) or {}  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, found {type(data).__name__}")
    return data


def load_section(cls: type[T], section: str, path: str | Path = DEFAULT_PARAMS) -> T:
    """Parse one top-level section of ``params.yaml`` into ``cls``.

    The whole file's top level is checked first (:func:`check_top_level`), so a stage
    refuses a misspelt section or study of any other stage too.

    Raises:
        ConfigError: when the top level has an unknown key or an invalid ``study``, or the
            section is absent or does not match ``cls``; the message
            starts with ``<path>:<line>:``, the 1-based line of the offending key (of its
            section when the key is missing).
    """
    data = read_params(path)
    check_top_level(data, path, also=(section,))
    if section not in data:
        raise ConfigError(f"{path}: missing section {section!r}")
    try:
        return from_dict(cls, data[section], where=section)
    except ConfigError as err:
        raise _at_line(path, err) from err


def check_top_level(data: dict[str, Any], path: str | Path = DEFAULT_PARAMS, *,
                    also: tuple[str, ...] = ()) -> None:
    """Refuse a top-level key of parameter file ``path`` (read as ``data``) that is neither one
    of :data:`PARAMS_SECTIONS` nor ``study`` nor in ``also``, and a ``study`` not in :data:`STUDIES`.

    Raises:
        ConfigError: starting with ``<path>:<line>:``, naming the key and what is allowed.
    """
    allowed = PARAMS_SECTIONS | {"study", *also}
    unknown = [str(k) for k in data if k not in allowed]
    if unknown:
        raise _at_line(path, ConfigError(
            f"unknown top-level key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}",
            key=unknown[0]))
    if "study" in data and data["study"] not in STUDIES:
        raise _at_line(path, ConfigError(
            f"study: expected one of {list(STUDIES)} (a file studies/<name>.yaml), found {data['study']!r}",
            key="study"))


def _at_line(path: str | Path, err: ConfigError) -> ConfigError:
    """``err`` with its message prefixed by ``<path>:<line>:`` of its key (``<path>:`` alone
    when the line is not found)."""
    key = err.key or _leading_key(str(err))
    line = _key_line(Path(path), key) if key else None
    where = f"{path}:{line}" if line is not None else str(path)
    return ConfigError(f"{where}: {err}", key=key)


# A message that starts with a key path (``retrieval.ks: expected ...``), as the checks in
# the section dataclasses' ``__post_init__`` write them.
_KEY_PREFIX = re.compile(r"^([A-Za-z_][\w\-]*(?:\.[\w\-]+|\[\d+\])*): ")


def _leading_key(message: str) -> str | None:
    match = _KEY_PREFIX.match(message)
    return match.group(1) if match else None


def _key_line(path: Path, key: str) -> int | None:
    """1-based line of the deepest node of dotted ``key`` found in YAML file ``path``.

    Keys may themselves contain dots (``dropout0.3``): at each mapping the longest key
    that prefixes the rest of the path wins. Returns None when not even the first part
    of the path is in the file.
    """
    try:
        node = yaml.compose(path.read_text(), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return None
    rest, line = key, None
    while rest and node is not None:
        if isinstance(node, yaml.MappingNode):
            best = None
            for k_node, v_node in node.value:
                k = str(k_node.value)
                if (rest == k or rest.startswith((k + ".", k + "["))) and (best is None or len(k) > len(best[0])):
                    best = (k, k_node, v_node)
            if best is None:
                return line
            k, k_node, node = best
            line = k_node.start_mark.line + 1  # marks are 0-based
            rest = rest[len(k):].removeprefix(".")
        elif isinstance(node, yaml.SequenceNode):
            match = re.match(r"\[(\d+)\]\.?", rest)
            if match is None or int(match.group(1)) >= len(node.value):
                return line
            node = node.value[int(match.group(1))]
            line = node.start_mark.line + 1
            rest = rest[match.end():]
        else:
            return line
    return line

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
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")

DEFAULT_PARAMS = Path("params.yaml")


class ConfigError(ValueError):
    """A parameter file or section does not match its typed schema."""


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
        raise ConfigError(f"{where}: expected {_type_name(tp)}, found {type(value).__name__}")
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: expected one of {list(args)}, found {value!r}")
        return value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, found {type(value).__name__}")
        return from_dict(tp, value, where=where)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected list, found {type(value).__name__}")
        item_tp = args[0] if args else Any
        items = [_coerce(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected mapping, found {type(value).__name__}")
        key_tp, val_tp = args if args else (Any, Any)
        return {
            _coerce(k, key_tp, f"{where}.<key>"): _coerce(v, val_tp, f"{where}.{k}")
            for k, v in value.items()
        }
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected float, found {type(value).__name__} {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected int, found {type(value).__name__} {value!r}")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ConfigError(
                f"{where}: expected {tp.__name__}, found {type(value).__name__} {value!r}"
            )
        return value
    return value


def from_dict(cls: type[T], data: dict[str, Any], *, where: str = "") -> T:
    """Build dataclass ``cls`` from ``data``.

    Returns:
        An instance of ``cls``.

    Raises:
        ConfigError: on an unknown key, a missing required key or a wrong type; the
            message names the dotted key path (``where`` is its prefix).
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    if not isinstance(data, dict):
        raise ConfigError(f"{where or cls.__name__}: expected a mapping, found {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        prefix = f"{where}." if where else ""
        raise ConfigError(
            f"unknown key(s) {', '.join(prefix + k for k in unknown)} "
            f"for {cls.__name__}; allowed: {', '.join(sorted(fields))}"
        )
    kwargs = {}
    for name, field in fields.items():
        key = f"{where}.{name}" if where else name
        if name in data:
            kwargs[name] = _coerce(data[name], hints[name], key)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(f"missing required key {key} for {cls.__name__}")
    return cls(**kwargs)


def to_dict(obj: Any) -> dict[str, Any]:
    """Plain-dict view of a config dataclass (for logging and result files)."""
    return dataclasses.asdict(obj)


def read_params(path: str | Path = DEFAULT_PARAMS) -> dict[str, Any]:
    """Read a YAML parameter file into a dict.

    Raises:
        ConfigError: when the file is missing or its top level is not a mapping.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: parameter file not found")
    with path.open() as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, found {type(data).__name__}")
    return data


def load_section(cls: type[T], section: str, path: str | Path = DEFAULT_PARAMS) -> T:
    """Parse one top-level section of ``params.yaml`` into ``cls``.

    Raises:
        ConfigError: when the section is absent or does not match ``cls``.
    """
    data = read_params(path)
    if section not in data:
        raise ConfigError(f"{path}: missing section {section!r}")
    return from_dict(cls, data[section], where=section)

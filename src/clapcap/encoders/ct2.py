"""A reader of CTranslate2's ``model.bin`` (no ``ctranslate2`` package needed).

The layout, as CTranslate2 writes it (``python/ctranslate2/specs/model_spec.py``) and reads
it (``src/models/model.cc``), all integers little-endian::

    uint32  binary_version
    string  spec name            (binary_version >= 2)
    uint32  spec revision        (binary_version >= 2)
    uint32  n_variables
    n_variables times:
        string  name
        uint8   rank
        uint32  dims[rank]
        uint8   dtype id         (>= 4: float32, int8, int16, int32, float16, bfloat16)
                or item size     (< 4)
        uint32  n_bytes          (>= 4; < 4: the number of items)
        bytes   data             (row-major)
    uint32  n_aliases            (binary_version >= 3)
    n_aliases times: string alias, string target name

where ``string`` is a uint16 byte count (including a trailing NUL) followed by the UTF-8
bytes and the NUL. Scalars are rank-0 variables (``encoder/num_heads`` is an int16).
bfloat16 data is widened to float32 (numpy has no bfloat16).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from clapcap.errors import InputError

# Type ids of binary_version >= 4 (CTranslate2's DataType enum, include/ctranslate2/types.h).
_DTYPES: dict[int, str] = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16", 5: "bfloat16"}
# Item sizes of binary_version < 4 (floating point for 4 and 2 bytes, as CTranslate2 reads them).
_ITEM_SIZES: dict[int, str] = {4: "float32", 2: "float16", 1: "int8"}
MAX_BINARY_VERSION = 6


class Ct2FormatError(InputError, ValueError):
    """A ``model.bin`` does not follow CTranslate2's layout; the message names the file,
    the byte offset and what was expected."""


@dataclass
class Ct2Model:
    """The content of one ``model.bin``.

    Attributes:
        binary_version: the layout version (1..6).
        spec: the model specification name (``WhisperSpec``; empty before version 2).
        revision: the specification revision.
        variables: name -> array, in file order (aliases not included).
        aliases: alias name -> the variable name it shares (``decoder/projection/weight``
            -> ``decoder/embeddings/weight`` for tied embeddings).
    """

    binary_version: int
    spec: str
    revision: int
    variables: dict[str, np.ndarray] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> np.ndarray:
        """The array named ``name``, following an alias.

        Raises:
            KeyError: naming the variable and the spec when it is absent.
        """
        target = self.aliases.get(name, name)
        if target not in self.variables:
            raise KeyError(f"{self.spec or 'CTranslate2 model'} has no variable {name!r}")
        return self.variables[target]

    def scalar(self, name: str) -> int | float:
        """A rank-0 variable as a Python number (``encoder/num_heads`` -> 6)."""
        return self.get(name).reshape(-1)[0].item()


class _Cursor:
    """Reads little-endian fields from a byte buffer and names the file and offset on a short read."""

    def __init__(self, data: memoryview, path: Path) -> None:
        self.data, self.path, self.pos = data, path, 0

    def take(self, n: int, what: str) -> memoryview:
        if self.pos + n > len(self.data):
            raise Ct2FormatError(f"{self.path}: truncated at byte {self.pos} while reading {what} "
                                 f"({n} bytes needed, {len(self.data) - self.pos} left of {len(self.data)})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint(self, fmt: str, what: str) -> int:
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.uint("H", f"the length of {what}")
        raw = bytes(self.take(n, what))
        if n == 0 or raw[-1] != 0:
            raise Ct2FormatError(f"{self.path}: byte {self.pos - n}: {what} is not NUL-terminated")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError as err:
            raise Ct2FormatError(f"{self.path}: byte {self.pos - n}: {what} is not UTF-8 ({err})") from err


def _read_variable(cur: _Cursor, version: int, index: int) -> tuple[str, np.ndarray]:
    name = cur.string(f"the name of variable {index}")
    rank = cur.uint("B", f"the rank of {name}")
    shape = tuple(cur.uint("I", f"dimension {d} of {name}") for d in range(rank))
    code = cur.uint("B", f"the dtype of {name}")
    table = _DTYPES if version >= 4 else _ITEM_SIZES
    if code not in table:
        raise Ct2FormatError(f"{cur.path}: byte {cur.pos - 1}: variable {name!r} has an unknown "
                             f"{'dtype id' if version >= 4 else 'item size'} {code}; expected one of {sorted(table)}")
    dtype = table[code]
    count = cur.uint("I", f"the size of {name}")
    item = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    n_bytes = count if version >= 4 else count * code
    expected = int(np.prod(shape, dtype=np.int64)) * item
    if n_bytes != expected:
        raise Ct2FormatError(f"{cur.path}: byte {cur.pos - 4}: variable {name!r} of shape {shape} and dtype "
                             f"{dtype} should hold {expected} bytes, the file says {n_bytes}")
    raw = cur.take(n_bytes, f"the data of {name}")
    if dtype == "bfloat16":  # the upper half of a float32
        arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        arr = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).copy()
    return name, arr.reshape(shape)


def read_ct2_model(path: str | Path) -> Ct2Model:
    """Read every variable and alias of a CTranslate2 ``model.bin``.

    Returns:
        A :class:`Ct2Model`; arrays keep their stored dtype (fp16 stays fp16), except
        bfloat16, which becomes float32.

    Raises:
        FileNotFoundError: naming ``path`` when it is missing.
        Ct2FormatError: on a truncated file, an unknown version or dtype, a size that does not
            match a shape, or trailing bytes; the message names the file and byte offset.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: CTranslate2 model.bin not found")
    cur = _Cursor(memoryview(path.read_bytes()), path)
    version = cur.uint("I", "the binary version")
    if not 1 <= version <= MAX_BINARY_VERSION:
        raise Ct2FormatError(f"{path}: binary version {version} is not a CTranslate2 layout this reader knows "
                             f"(1..{MAX_BINARY_VERSION}); is this a CTranslate2 model.bin?")
    spec, revision = (cur.string("the spec name"), cur.uint("I", "the spec revision")) if version >= 2 else ("", 1)
    model = Ct2Model(version, spec, revision)
    for i in range(cur.uint("I", "the number of variables")):
        name, arr = _read_variable(cur, version, i)
        model.variables[name] = arr
    if version >= 3:
        for i in range(cur.uint("I", "the number of aliases")):
            alias = cur.string(f"alias {i}")
            model.aliases[alias] = cur.string(f"the target of alias {alias!r}")
    if cur.pos != len(cur.data):
        raise Ct2FormatError(f"{path}: {len(cur.data) - cur.pos} unexpected bytes after the last "
                             f"{'alias' if version >= 3 else 'variable'} (at byte {cur.pos})")
    missing = sorted(a for a, t in model.aliases.items() if t not in model.variables)
    if missing:
        raise Ct2FormatError(f"{path}: alias(es) {missing} point to no variable")
    return model

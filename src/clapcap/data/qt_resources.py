"""A reader of Qt's binary resource files (``.rcc``), for the real recordings Debian packs in them.

Hand-written because no Python package reads the format without a Qt install (PySide6's
``QResource`` needs Qt itself, hundreds of MB); the layout is Qt's own, as
``qtbase/src/corelib/io/qresource.cpp`` reads it (format versions 1 to 3):

- header: ``b"qres"``, then big-endian int32 ``version``, ``tree_offset``, ``data_offset``,
  ``names_offset``, and from version 3 an int32 of overall flags;
- tree: fixed-size nodes (14 bytes in version 1, 22 from version 2, which adds an int64
  modification time). A node is int32 ``name_offset`` and uint16 ``flags``, then for a
  directory (flag 2) int32 ``child_count`` and int32 ``first_child`` (a node index), else
  int16 territory, int16 language and int32 ``data_offset``. Node 0 is the root directory;
- names: uint16 length, uint32 hash, then the name in UTF-16 big-endian;
- data: uint32 size, then the bytes. Flag 1 marks zlib data as ``qCompress`` writes it
  (a big-endian uint32 of the uncompressed size, then a zlib stream); flag 4 marks zstd.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from clapcap.errors import InputError, MissingDependencyError

MAGIC = b"qres"
COMPRESSED, DIRECTORY, COMPRESSED_ZSTD = 0x1, 0x2, 0x4


class ResourceFormatError(InputError, ValueError):
    """The bytes are not a Qt resource file this reader understands."""


def _unpack(fmt: str, buf: bytes, offset: int, origin: str) -> tuple[int, ...]:
    end = offset + struct.calcsize(fmt)
    if offset < 0 or end > len(buf):
        raise ResourceFormatError(f"{origin}: truncated (needs bytes {offset}..{end}, file has {len(buf)})")
    return struct.unpack_from(fmt, buf, offset)


def _payload(raw: bytes, flags: int, origin: str) -> bytes:
    if flags & COMPRESSED:
        (size,) = _unpack(">I", raw, 0, origin)
        out = zlib.decompress(raw[4:])
        if len(out) != size:
            raise ResourceFormatError(f"{origin}: zlib data gave {len(out)} bytes, header says {size}")
        return out
    if flags & COMPRESSED_ZSTD:
        try:
            import zstandard
        except ImportError as err:
            raise MissingDependencyError(f"{origin}: zstd-compressed resource needs zstandard: pip install zstandard",
                                         name="zstandard") from err
        return zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 31)
    return raw


def read_resources(data: bytes, origin: str = "<bytes>") -> dict[str, bytes]:
    """Every file of a Qt resource blob: ``{"/path/inside/name.ext": bytes}`` (decompressed).

    Raises:
        ResourceFormatError: on a wrong magic, an unknown version, a truncated file or a
            cycle in the tree.
    """
    if data[:4] != MAGIC:
        raise ResourceFormatError(f"{origin}: not a Qt resource file (magic {data[:4]!r}, expected {MAGIC!r})")
    version, tree, payloads, names = _unpack(">4i", data, 4, origin)
    if version not in (1, 2, 3):
        raise ResourceFormatError(f"{origin}: Qt resource format version {version} (this reader knows 1 to 3)")
    node_size = 14 if version == 1 else 22

    def name_at(offset: int) -> str:
        (length,) = _unpack(">H", data, names + offset, origin)
        start = names + offset + 6
        if start + 2 * length > len(data):
            raise ResourceFormatError(f"{origin}: truncated name at offset {offset}")
        return data[start:start + 2 * length].decode("utf-16-be")

    files: dict[str, bytes] = {}
    seen: set[int] = set()
    stack = [(0, "")]
    while stack:
        index, prefix = stack.pop()
        if index in seen:
            raise ResourceFormatError(f"{origin}: node {index} is reached twice (a cycle or shared child)")
        seen.add(index)
        node = tree + index * node_size
        name_offset, flags = _unpack(">iH", data, node, origin)
        path = prefix + ("/" + name_at(name_offset) if index else "")
        if flags & DIRECTORY:
            count, first = _unpack(">ii", data, node + 6, origin)
            stack.extend((child, path) for child in range(first + count - 1, first - 1, -1))
            continue
        (data_offset,) = _unpack(">i", data, node + 10, origin)
        (size,) = _unpack(">I", data, payloads + data_offset, origin)
        start = payloads + data_offset + 4
        if start + size > len(data):
            raise ResourceFormatError(f"{origin}: {path}: truncated data ({size} bytes declared)")
        files[path] = _payload(data[start:start + size], flags, f"{origin}:{path}")
    return files


def read_resource_file(path: str | Path) -> dict[str, bytes]:
    """:func:`read_resources` of a ``.rcc`` file."""
    return read_resources(Path(path).read_bytes(), str(path))

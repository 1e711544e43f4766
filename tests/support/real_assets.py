"""Writers of the real benchmark's source formats, for tests: Qt ``.rcc`` files, Debian ``.deb``
archives (ar + xz tarballs) and wheels (zip). Each follows the format's own layout, so that
the readers are tested on bytes shaped as the real files are."""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path


def write_rcc(files: dict[str, bytes], *, compress: set[str] = frozenset(), version: int = 3) -> bytes:
    """A Qt resource blob holding ``files`` (``"a/b/c.wav"`` paths); those in ``compress`` are
    stored as ``qCompress`` writes them (flag 1)."""
    tree: dict = {}
    for path in files:
        node = tree
        *dirs, name = path.strip("/").split("/")
        for d in dirs:
            node = node.setdefault(d, {})
        node[name] = path
    names, name_offsets = bytearray(), {}

    def name_offset(name: str) -> int:
        if name not in name_offsets:
            name_offsets[name] = len(names)
            enc = name.encode("utf-16-be")
            names.extend(struct.pack(">HI", len(name), 0) + enc)
        return name_offsets[name]

    payload, data_offsets = bytearray(), {}
    for path, data in files.items():
        flags = 1 if path in compress else 0
        raw = struct.pack(">I", len(data)) + zlib.compress(data) if flags else data
        data_offsets[path] = (len(payload), flags)
        payload.extend(struct.pack(">I", len(raw)) + raw)
    # Nodes breadth-first: each directory's children are contiguous, as rcc writes them.
    nodes: list[tuple[str, object]] = [("", tree)]
    entries: list[bytes] = []
    i = 0
    while i < len(nodes):
        name, item = nodes[i]
        noff = name_offset(name) if i else 0
        if isinstance(item, dict):
            first = len(nodes)
            children = sorted(item.items())
            nodes.extend(children)
            entry = struct.pack(">iHii", noff, 2, len(children), first)
        else:
            off, flags = data_offsets[item]
            entry = struct.pack(">iHhhi", noff, flags, 0, 0, off)
        entries.append(entry + (b"\0" * 8 if version >= 2 else b""))
        i += 1
    header_size = 24 if version >= 3 else 20
    tree_bytes = b"".join(entries)
    tree_off = header_size
    data_off = tree_off + len(tree_bytes)
    names_off = data_off + len(payload)
    header = b"qres" + struct.pack(">iiii", version, tree_off, data_off, names_off)
    if version >= 3:
        header += struct.pack(">i", 0)
    return header + tree_bytes + bytes(payload) + bytes(names)


def _tar_xz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write_deb(path: Path, package: str, version: str, data_files: dict[str, bytes]) -> Path:
    """A Debian binary package: an ar archive of ``debian-binary``, ``control.tar.xz`` and
    ``data.tar.xz`` (``data_files`` paths relative to ``/``)."""
    control = (f"Package: {package}\nVersion: {version}\nArchitecture: all\n"
               f"Maintainer: test <test@example.org>\nDescription: test package\n").encode()
    members = [("debian-binary", b"2.0\n"), ("control.tar.xz", _tar_xz({"./control": control})),
               ("data.tar.xz", _tar_xz({f"./{k}": v for k, v in data_files.items()}))]
    out = bytearray(b"!<arch>\n")
    for name, data in members:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    path.write_bytes(bytes(out))
    return path


def write_wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path

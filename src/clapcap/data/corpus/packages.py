"""The real corpus's Debian packages, pinned by version and SHA-256, fetched and unpacked for
the readers of :mod:`clapcap.data.corpus` (``make corpus-assets``, ``clapcap assets
corpus-packages``).

Each package is downloaded with ``apt-get download NAME=VERSION`` (nothing is installed), its
SHA-256 is checked against the pin (Debian's ``Packages`` index gives the same value,
``apt-cache show NAME``), and only the files the readers use are unpacked into
``<dest>/<name>/``: the audio (or the archive that holds it: a game's ``.pk3``/``.zip``, a
soundfont), the metadata a caption rule reads (``drumkit.xml``, a stamp's ``NAME.txt``, a
transcript list) and ``usr/share/doc/<name>/`` (the DEP-5 ``copyright``, the changelog that
gives the version). Every other member of the package is never written. A package is unpacked
into ``<name>.tmp`` and renamed when complete, with ``.clapcap-package.json`` (version,
SHA-256, files kept); a rerun skips a package whose record matches its pin, so an interrupted
fetch resumes and never leaves a half-unpacked package.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from clapcap.errors import ClapcapError, InputError
from clapcap.utils.io import sha256_file

logger = logging.getLogger(__name__)

RECORD = ".clapcap-package.json"
INDEX = "packages.json"
AUDIO = (".wav", ".ogg", ".flac", ".mp3", ".aif", ".aiff")


@dataclass(frozen=True)
class PackagePin:
    """One Debian package: exact version, the ``.deb``'s SHA-256 and size (bytes), and what to
    keep: files under one of ``prefixes`` whose name ends with one of ``suffixes``."""

    name: str
    version: str
    sha256: str
    size: int
    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...] = AUDIO

    def keeps(self, member: str) -> bool:
        """True for a package member (``usr/...``) the corpus uses."""
        if member.startswith(f"usr/share/doc/{self.name}/"):
            return True
        return member.startswith(self.prefixes) and member.lower().endswith(self.suffixes)


# Debian bookworm (12), all architectures; sizes and hashes as in bookworm's Packages index.
PINS: tuple[PackagePin, ...] = (
    PackagePin("tuxpaint-stamps-default", "2022.06.04-1", "6db6c1bfc870a47f1499d6203b083522eacb57c5f9c87d468f2e92eb6d9d5f34",
               160880444, ("usr/share/tuxpaint/stamps/",), (".ogg", ".txt")),
    PackagePin("hydrogen-drumkits", "2017.09.19~dfsg-1", "6ea3c6df9a67762e2362f946c695e619859126b19fbccf32a2e8f07dfd03b2f4",
               142675622, ("usr/share/hydrogen/data/drumkits/",), (*AUDIO, "drumkit.xml")),
    PackagePin("hydrogen-drumkits-effects", "2017.09.19~dfsg-1",
               "4ca3ff30e89d044952ad8a4ed28c60e8e5e1f8fec0ddcf0e1e7e2c84ce2975c8",
               141355240, ("usr/share/hydrogen/data/drumkits/",), (*AUDIO, "drumkit.xml")),
    PackagePin("ufoai-sound", "2.5-2", "0224308c10e1265581d1829f19eaef031175390fd0eafeb4a1d558ac6561ed4e",
               18681226, ("usr/share/games/ufoai/base/0snd.pk3",), (".pk3",)),
    PackagePin("hedgewars-data", "1.0.2-6", "722225903a72604403e6e0026e40e9a6953f47a74d94efc5f55504bc05bb4761",
               145330284, ("usr/share/games/hedgewars/Data/Sounds/",), (".ogg",)),
    PackagePin("0ad-data", "0.0.26-1", "53745ae74d05bccf6783400fa98f3932b21729ab9d2e86151aa2c331c3455178",
               1377557908, ("usr/share/games/0ad/mods/public/public.zip",), (".zip",)),
    PackagePin("openarena-data", "0.8.5split-14", "fa68862434f02a826b7ef22008f25f406623abf4e37113c1bfab5460065483c8",
               44029708, ("usr/share/games/openarena/baseoa/pak0.pk3",
                          "usr/share/games/openarena/missionpack/mp-pak0.pk3"), (".pk3",)),
    PackagePin("megaglest-data", "3.13.0-3", "ed4783d9fc78e201a548b266f7c30325eb16cfd58a20bf4597dd6e622f84a07e",
               242024888, ("usr/share/games/megaglest/tilesets/", "usr/share/games/megaglest/techs/")),
    PackagePin("sonic-pi-samples", "3.2.2~repack-8", "25f2312d2fae005e6ad0f4726b8ed3084e776006a5a132083506e960224ac79d",
               21882696, ("usr/share/sonic-pi/samples/",)),
    PackagePin("lmms-common", "1.2.2+dfsg1-6", "7d9aa55dd05f11edc57104203ee1c350e3e41f8936ab3741da2bb1158fd46c37",
               8263276, ("usr/share/lmms/samples/",)),
    PackagePin("asterisk-core-sounds-en-wav", "1.6.1-1",
               "2be3ea287d83299d143815fa804f11179a75b7affd4a758b98b55f5afc18a35d",
               18272864, ("usr/share/asterisk/sounds/",), (".wav",)),
    PackagePin("asterisk-core-sounds-en", "1.6.1-1", "973e797d28e37fa6ca3c0a9d6fa717e77cf1268ae916bf09fd3503113cdffa50",
               22844, ()),
    PackagePin("fluid-soundfont-gm", "3.1-5.3", "6f531493ac4e4d9772fd96b2488ea1790af81c196135fbdd25997da0781fc60e",
               119610208, ("usr/share/sounds/",), (".sf2", ".sf3")),
    PackagePin("timgm6mb-soundfont", "1.3-5", "034abdfb296d9353433513dad5dbdcab46425ee6008fc02fe7039b46e75edc54",
               5426644, ("usr/share/sounds/",), (".sf2", ".sf3")),
    PackagePin("musescore-general-soundfont", "0.2.1-1",
               "21ab87e4b15711817f84130a370bdb51003c90f3bf53e4015f3b410b9ed8c6a5",
               75768132, ("usr/share/sounds/",), (".sf2", ".sf3")),
    PackagePin("avldrums.lv2-soundfont", "0.5.2-2", "436813f10c950324f28cb6a71e922f153084b6ed00049cd47da3f0f055f3ffc5",
               24667944, ("usr/share/sounds/",), (".sf2", ".sf3")),
)

Downloader = Callable[[PackagePin, Path], Path]


def apt_download(pin: PackagePin, folder: Path) -> Path:
    """``apt-get download NAME=VERSION`` into ``folder``; returns the ``.deb``.

    Raises:
        ClapcapError: apt-get failed (the message says to run ``apt-get update`` first).
    """
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["apt-get", "download", "-qq", f"{pin.name}={pin.version}"], cwd=folder,
                          capture_output=True, text=True)
    found = sorted(folder.glob(f"{pin.name}_*.deb"))
    if done.returncode or not found:
        raise ClapcapError(f"apt-get download {pin.name}={pin.version} failed ({done.stderr.strip()[-200:]}); "
                           "run `sudo apt-get update` (Debian bookworm sources) and retry")
    return found[-1]


def _unpack(deb: Path, pin: PackagePin, out: Path) -> list[str]:
    """Write the members ``pin`` keeps into ``out``; returns their paths (posix, sorted)."""
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    kept: list[str] = []
    assert proc.stdout is not None
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        for member in tar:
            name = str(PurePosixPath(member.name.lstrip("./")))
            if not member.isfile() or ".." in PurePosixPath(name).parts or not pin.keeps(name):
                continue
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            with open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)
            kept.append(name)
    if proc.wait():
        raise ClapcapError(f"{deb}: dpkg-deb could not read the package (exit {proc.returncode})")
    return sorted(kept)


def _is_current(folder: Path, pin: PackagePin) -> bool:
    try:
        record = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return False
    return record.get("version") == pin.version and record.get("sha256") == pin.sha256


def fetch_packages(dest: str | Path, names: Sequence[str] | None = None, *, download: Downloader = apt_download,
                   keep_debs: bool = False, pins: Sequence[PackagePin] = PINS) -> dict[str, dict]:
    """Fetch, check and unpack the pinned packages (module docstring) into ``dest``.

    Args:
        names: only these packages (default: every pin).
        download: how a ``.deb`` is obtained (a test passes a local builder).
        keep_debs: keep the ``.deb`` files under ``<dest>/debs`` (default: deleted once unpacked).

    Returns:
        ``{name: record}`` for every package asked for.

    Raises:
        InputError: a name that is not pinned.
        ClapcapError: a download that fails, or a ``.deb`` whose SHA-256 or size is not the pin's
            (the file is deleted and nothing is unpacked).
    """
    by_name = {p.name: p for p in pins}
    unknown = sorted(set(names or ()) - set(by_name))
    if unknown:
        raise InputError(f"not a pinned corpus package: {', '.join(unknown)}; pinned: {', '.join(by_name)}")
    dest = Path(dest)
    records: dict[str, dict] = {}
    for pin in [by_name[n] for n in names] if names else list(pins):
        folder = dest / pin.name
        if _is_current(folder, pin):
            records[pin.name] = json.loads((folder / RECORD).read_text())
            logger.info("%s %s: already unpacked", pin.name, pin.version)
            continue
        deb = download(pin, dest / "debs")
        digest, size = sha256_file(deb), deb.stat().st_size
        if digest != pin.sha256 or size != pin.size:
            deb.unlink()
            raise ClapcapError(f"{pin.name} {pin.version}: the downloaded .deb has SHA-256 {digest} ({size} bytes), "
                               f"the pin says {pin.sha256} ({pin.size} bytes); deleted, nothing unpacked")
        tmp = dest / f"{pin.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        kept = _unpack(deb, pin, tmp)
        record = {"package": pin.name, "version": pin.version, "sha256": pin.sha256, "deb_bytes": size,
                  "files": len(kept), "unpacked_bytes": sum((tmp / k).stat().st_size for k in kept)}
        (tmp / RECORD).write_text(json.dumps(record, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        if not keep_debs:
            deb.unlink()
        records[pin.name] = record
        logger.info("%s %s: %d files kept (%.1f MB of a %.1f MB package)", pin.name, pin.version, len(kept),
                    record["unpacked_bytes"] / 1e6, size / 1e6)
    write_index(dest, pins)
    return records


def write_index(dest: Path, pins: Sequence[PackagePin] = PINS) -> Path:
    """Write ``<dest>/INDEX`` (``packages.json``): the record of every pinned package that is
    unpacked and current, in pin order; the one small file a DVC stage names as its dependency
    (hashing the 4.2 GB of unpacked packages on every ``dvc status`` would not be)."""
    current = {p.name: json.loads((dest / p.name / RECORD).read_text()) for p in pins if _is_current(dest / p.name, p)}
    path = dest / INDEX
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"packages": current}, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path

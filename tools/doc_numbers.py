"""Numbers in the docs come from the build, or say which build they come from.

Three forms, checked by ``--check`` (in ``make lint``) against the committed outputs:

- a **block** copied from a build file::

      <!-- build:begin reports/final/tables/real_captioning.md -->
      ...the file's text, as it is...
      <!-- build:end -->

- an **inline number** read from a JSON output, rounded to the decimals it is written with
  (a leading ``+`` is kept)::

      the nearest training caption scores 0.436<!-- build:metrics/summary/real_captioning/retrieval_cider_d.json#/value -->

  The part after ``#`` is a JSON Pointer (RFC 6901: ``/a/b/0``; ``~1`` is ``/``, ``~0`` is ``~``),
  with one addition: a part ``[key=value]`` picks the one element of a list whose ``key`` is
  ``value`` (``/findings/[id=real_robust.view2_r10_vs_control]/effect``), so that a finding
  added or reordered by a rebuild does not move the number onto another finding.

- a **dated** number: in the docs of :data:`STRICT`, every paragraph that states a decimal
  number (two or more decimal places) outside a code block must hold a block or inline
  reference, or name the build it quotes (each top-level list item is its own paragraph,
  dated also by its list's lead-in): a date (``2026-12-02``), a commit in backticks, or
  a machine (``machine F``). Such a number is history: it makes no claim about the current build.
  A number in inline code (```lr 0.01```) is a setting or a command, not a result.

Usage::

    python tools/doc_numbers.py            # rewrite blocks and inline numbers from the files
    python tools/doc_numbers.py --check    # exit 1, listing each stale or unsourced number
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/*.md")
# The docs whose every result number must be referenced or dated (issue 43: they quoted older builds).
STRICT = ("README.md", "docs/captioning.md", "docs/corpus.md", "docs/encoders.md", "docs/pairwise.md",
          "docs/real.md", "docs/real_clap.md", "docs/results.md", "docs/robust.md")

BLOCK = re.compile(r"<!-- build:begin (?P<path>\S+) -->\n(?P<body>.*?)<!-- build:end -->", re.S)
INLINE = re.compile(r"(?P<number>[-+]?\d[\d,]*(?:\.\d+)?)<!-- build:(?P<path>[^#\s]+)#(?P<pointer>\S*) -->")
DECIMAL = re.compile(r"(?<![\w.])[-+]?\d+\.\d{2,}(?![\w.])")
DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|`[0-9a-f]{7,40}`|\bmachine [A-Z]\b")
# tools/readme_findings.py's generated table: its --check ties each number to reports/conclusions.json.
FINDINGS = re.compile(r"^<!-- findings:begin .*?^<!-- findings:end -->", re.S | re.M)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]+`")  # a setting or a command (`lr 0.01`), not a result
SELECT = re.compile(r"\[(?P<key>[^=\]]+)=(?P<value>[^\]]*)\]")  # a list element by a key's value
ITEM = re.compile(r"^(?:- |\* |\d+\. )", re.M)  # a top-level list item: its own paragraph


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def resolve_pointer(data: object, pointer: str, origin: str) -> object:
    """The value at JSON Pointer ``pointer`` in ``data``.

    Raises:
        KeyError: naming ``origin`` and the first part of the pointer that is not there.
    """
    value = data
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        select = SELECT.fullmatch(part)
        if isinstance(value, list) and select:
            found = [v for v in value if isinstance(v, dict) and str(v.get(select["key"])) == select["value"]]
            if len(found) != 1:
                raise KeyError(f"{origin}#{pointer}: {len(found)} elements with {select['key']} "
                               f"{select['value']!r}, expected one")
            value = found[0]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise KeyError(f"{origin}#{pointer}: no {part!r} there")
    return value


def render_number(value: float, written: str) -> str:
    """``value`` written as ``written`` is: its decimals, its leading ``+``, its thousands commas."""
    decimals = len(written.split(".")[1]) if "." in written else 0
    sign = "+" if written.startswith("+") else ""
    comma = "," if "," in written else ""
    return f"{value:{sign}{comma}.{decimals}f}"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _json(root: Path, rel: str, cache: dict[str, object]) -> object:
    if rel not in cache:
        cache[rel] = json.loads((root / rel).read_text(encoding="utf-8"))
    return cache[rel]


def _fix_blocks(text: str, root: Path, origin: str, problems: list[Problem]) -> str:
    def block(m: re.Match[str]) -> str:
        source = root / m["path"]
        if not source.is_file():
            problems.append(Problem(origin, _line(text, m.start()), f"block source {m['path']} does not exist"))
            return m[0]
        body = source.read_text(encoding="utf-8").rstrip("\n") + "\n"
        if body != m["body"]:
            problems.append(Problem(origin, _line(text, m.start()), f"the block differs from {m['path']}"))
        return f"<!-- build:begin {m['path']} -->\n{body}<!-- build:end -->"

    return BLOCK.sub(block, text)


def _fix_inline(text: str, root: Path, origin: str, problems: list[Problem], cache: dict[str, object]) -> str:
    def number(m: re.Match[str]) -> str:
        where = _line(text, m.start())
        try:
            value = resolve_pointer(_json(root, m["path"], cache), m["pointer"], m["path"])
        except (OSError, ValueError, KeyError) as err:
            problems.append(Problem(origin, where, f"{m['number']}: {err}"))
            return m[0]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(Problem(origin, where, f"{m['path']}#{m['pointer']} is {value!r}, not a number"))
            return m[0]
        wanted = render_number(float(value), m["number"])
        if wanted != m["number"]:
            problems.append(Problem(origin, where, f"{m['number']} is stale: {m['path']}#{m['pointer']} "
                                                   f"is {value!r} ({wanted})"))
        return f"{wanted}<!-- build:{m['path']}#{m['pointer']} -->"

    return INLINE.sub(number, text)


def _paragraphs(text: str) -> Iterator[tuple[int, str, bool]]:
    """(offset, text, dated by its list's lead-in) of each paragraph of ``text``: the blocks
    between blank lines, each top-level list item on its own. An item counts as dated when the
    lead-in of its list is: the block's text before its first item, or, for a block that opens
    with an item, the block before it when that ends with a colon."""
    previous = ""
    for block in re.finditer(r".+?(?:\n[ \t]*\n|\Z)", text, re.S):
        body, start = block[0], block.start()
        items = [m.start() for m in ITEM.finditer(body)]
        if not items:
            yield start, body, False
            previous = body
            continue
        lead = body[:items[0]]
        lead_dated = bool(DATED.search(lead) if lead.strip() else
                          previous.rstrip().endswith(":") and DATED.search(previous))
        if lead.strip():
            yield start, lead, False
        for a, b in zip(items, [*items[1:], len(body)], strict=True):
            yield start + a, body[a:b], lead_dated
        previous = body


def unsourced(text: str, origin: str) -> Iterator[Problem]:
    """Paragraphs of ``text`` that state a decimal number with no reference and no build named."""
    masked = FENCE.sub(lambda m: "\n" * m[0].count("\n"), text)  # code blocks keep their line count
    masked = BLOCK.sub(lambda m: "\n" * m[0].count("\n"), masked)
    masked = FINDINGS.sub(lambda m: "\n" * m[0].count("\n"), masked)
    spans = CODE.sub(lambda m: " " * len(m[0]), masked)
    for offset, para, inherited in _paragraphs(masked):
        if inherited or DATED.search(para) or "<!-- build:" in para:
            continue
        for m in DECIMAL.finditer(spans[offset:offset + len(para)]):
            yield Problem(origin, _line(masked, offset + m.start()),
                          f"{m[0]} is quoted from no build file: reference it (<!-- build:PATH#/POINTER -->) "
                          "or name the build it comes from (a date, a commit, a machine)")


def process(root: Path, *, write: bool) -> list[Problem]:
    """Check (and with ``write``, rewrite) every doc under ``root``.

    Returns:
        The problems found, in file and line order (after a rewrite, the stale numbers and
        blocks it fixed are still listed).
    """
    problems: list[Problem] = []
    cache: dict[str, object] = {}
    for path in sorted({p for pattern in DOCS for p in root.glob(pattern)}):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        new = _fix_inline(_fix_blocks(text, root, rel, problems), root, rel, problems, cache)
        if rel in STRICT:
            problems.extend(unsourced(new, rel))
        if write and new != text:
            path.write_text(new, encoding="utf-8")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 on any problem")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    if not args.check:
        process(args.root, write=True)
    problems = process(args.root, write=False)  # after a rewrite: what it could not fix
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} number(s) in the docs disagree with the build or name no source "
              "(python tools/doc_numbers.py rewrites the referenced ones)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

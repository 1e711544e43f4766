"""WordNet 3.0 read from its own database files (Debian ``wordnet-base``), and a lexical view.

**The files** (``wndb(5WN)``): ``index.<pos>`` lines are ``lemma pos synset_cnt p_cnt
[ptr_symbol...] sense_cnt tagsense_cnt synset_offset...`` with the senses most frequent first;
``data.<pos>`` lines start at the byte offset that names them and read ``offset lex_filenum
ss_type w_cnt word lex_id ... p_cnt [symbol offset pos source/target]... | gloss`` (``w_cnt``
in hexadecimal; ``@`` is a hypernym); ``<pos>.exc`` lists irregular forms (``geese goose``).
Only nouns and verbs are read. Hand-written rather than nltk's reader: the project needs four
lookups, and nltk (not a dependency) would add a package for them.

**Base forms** (:meth:`WordNet.base_forms`) follow WordNet's own morphy: the exception list,
then the detachment rules of ``morph(7WN)`` (nouns: -s, -ses, -xes, -zes, -ches, -shes, -men,
-ies; verbs: -s, -ies, -es, -ed, -ing), keeping the forms that are lemmas.

**The lexical view** (:func:`lexical_view`): each content word outside double quotes (a
transcript is never changed; not a hyphenated compound, not in :data:`STOPWORDS` or
:data:`KEEP`, three letters or more, not mostly an adjective in ``index.adj``, not a name
WordNet capitalises, not a sense whose gloss calls it a slur or offensive) is read as a noun, else as a verb
(verb first when it ends in -s, -ed or -ing right after a content word and has at least as
many verb senses as noun senses: "a dog barks", not "church bells"); the other reading is
tried only when the word has no base form in the first. Its sense is the most frequent one whose
lexicographer file is about things that sound (:data:`SOUND_LEXFILES`: animals, artifacts,
people, events, acts, phenomena, natural objects, substances; verbs of perception,
communication, motion, contact, change and weather); the replacement is a one-word synonym
from that synset, else a one-word lemma of its first hypernym (``dog`` -> ``canine``); with
``avoid`` (the held-out view), the first of those candidates not in it. The replacement is
inflected back by rule (plural and third-person -s, -ed, -ing, a one-syllable
consonant-vowel-consonant word doubling its last letter); irregular inflections are left as
the rule writes them. At most ``max_changes`` words change, chosen by a hash of
``(seed, caption)``; "a"/"an" before a changed word follows its first letter; a caption with
no replaceable word has no view (None).
Synonyms out of context are sometimes the wrong sense (WordNet's first ``bark`` verb sense is
"speak in an unfriendly tone"): the view changes the vocabulary honestly, not always the meaning.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clapcap.data.corpus.packages import PackagePin

POS = ("n", "v")
_FILES = {"n": "noun", "v": "verb"}
# Debian bookworm's wordnet-base: WordNet 3.0's database (the WordNet licence, BSD-like).
WORDNET_PIN = PackagePin("wordnet-base", "1:3.0-37", "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752",
                         6467132, ("usr/share/wordnet/",),
                         ("index.noun", "index.verb", "index.adj", "data.noun", "data.verb", "noun.exc", "verb.exc"))
WORDNET_DIR = "usr/share/wordnet"

# lexnames(5WN): 05 noun.animal, 06 noun.artifact, 04 noun.act, 11 noun.event, 17 noun.object,
# 18 noun.person, 19 noun.phenomenon, 27 noun.substance; 30 verb.change, 32 verb.communication,
# 35 verb.contact, 38 verb.motion, 39 verb.perception, 43 verb.weather.
SOUND_LEXFILES = {"n": frozenset({4, 5, 6, 11, 17, 18, 19, 27}), "v": frozenset({30, 32, 35, 38, 39, 43})}
STOPWORDS = frozenset("""a an the and or but of in on at to from by with without into onto over under
near while as then than is are was were be been being it its this that these those there here
some several many few one two three four five six seven eight nine ten very quite slightly loudly
softly quickly slowly again also not no his her their our your my who which what when where""".split())
# Words of audio captions whose first WordNet sense that sounds is not the audio one ("playing
# C5" is not travelling, a "note" is not a banknote, a "hit" on a drum is not a success); left
# unchanged. A list, found by reading the real corpus's views, not a sense disambiguator.
KEEP = frozenset("""play playing played plays note notes hit hits string strings range recorder speech
say says saying said bass high low mid call calls extension chord key scale pitch track beat beats
tap taps snare drum drums kick tone tones sound sounds sample samples voice voices""".split())
_RULES = {"n": [("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                ("men", "man"), ("ies", "y")],
          "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")]}
# A hyphenated compound ("honky-tonk", "mid-range") is one token, and not alphabetic: kept.
_TOKEN = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*|[^A-Za-z]+")
_OFFENSIVE = re.compile(r"\b(slur|offensive|vulgar|disparaging|derogatory|obscene)\b", re.IGNORECASE)
_QUOTED = re.compile(r'("[^"]*")')  # a transcript: kept as one token, never changed
_CVC = re.compile(r"[^aeiou][aeiou][^aeiouwxy]$")
_VOWELS = re.compile(r"[aeiou]+")


class WordNetError(FileNotFoundError):
    """The WordNet folder lacks a database file (the message names the make target)."""


@dataclass(frozen=True)
class Synset:
    offset: int
    pos: str
    lexfile: int
    lemmas: tuple[str, ...]  # lower-cased
    hypernyms: tuple[int, ...]
    proper: frozenset[str] = frozenset()  # lemmas WordNet capitalises (names: "French", "English")
    offensive: bool = False  # the gloss marks it a slur, offensive, vulgar or disparaging


class WordNet:
    """Nouns and verbs of a WordNet 3.0 database folder (``index.*``, ``data.*``, ``*.exc``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        names = [f"{kind}.{_FILES[p]}" for p in POS for kind in ("index", "data")] + [f"{_FILES[p]}.exc" for p in POS]
        names.append("index.adj")
        missing = [n for n in names if not (self.root / n).is_file()]
        if missing:
            raise WordNetError(f"{self.root}: no WordNet file(s) {', '.join(missing)}; `make wordnet-assets` "
                               "fetches Debian's wordnet-base")
        self._index = {p: self._read_index(self.root / f"index.{_FILES[p]}") for p in POS}
        self._exc = {p: self._read_exc(self.root / f"{_FILES[p]}.exc") for p in POS}
        self._adj_senses = {k: len(v) for k, v in self._read_index(self.root / "index.adj").items()}
        self._data = {p: (self.root / f"data.{_FILES[p]}").read_bytes() for p in POS}
        self._replacements: dict[str, tuple[str, tuple[str, ...], str] | None] = {}

    def replacement(self, word: str, verb_first: bool = False) -> tuple[str, tuple[str, ...], str] | None:
        """:func:`replacement` of ``word``, remembered per instance."""
        key = f"{word}:{verb_first}"
        if key not in self._replacements:
            self._replacements[key] = replacement(self, word, verb_first)
        return self._replacements[key]

    def verb_likelier(self, word: str) -> bool:
        """True when ``word``'s verb readings have at least as many senses as its noun readings
        ("barks": bark has 5 verb and 4 noun senses; "bells": 1 and 5)."""
        def count(pos: str) -> int:
            return sum(len(self.senses(b, pos)) for b in self.base_forms(word, pos))

        return count("v") >= max(1, count("n"))

    def mostly_adjective(self, word: str) -> bool:
        """True when ``word`` has at least as many adjective senses as noun and verb senses."""
        word = word.lower()
        return self._adj_senses.get(word, 0) >= max(1, len(self.senses(word, "n")) + len(self.senses(word, "v")))

    @staticmethod
    def _read_index(path: Path) -> dict[str, tuple[int, ...]]:
        out = {}
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(" "):  # the licence header
                continue
            f = line.split()
            n_synsets, n_ptrs = int(f[2]), int(f[3])
            out[f[0]] = tuple(int(o) for o in f[6 + n_ptrs:6 + n_ptrs + n_synsets])
        return out

    @staticmethod
    def _read_exc(path: Path) -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            f = line.split()
            if len(f) >= 2:
                out[f[0]] = tuple(f[1:])
        return out

    def senses(self, lemma: str, pos: str) -> tuple[int, ...]:
        """Synset offsets of ``lemma`` as ``pos``, most frequent sense first."""
        return self._index[pos].get(lemma.lower(), ())

    def synset(self, offset: int, pos: str) -> Synset:
        """The synset at byte ``offset`` of ``data.<pos>``."""
        return _parse_synset(self._data[pos], offset, pos)

    def base_forms(self, word: str, pos: str) -> list[str]:
        """Lemmas ``word`` can be an inflection of, as ``pos`` (module docstring)."""
        word = word.lower()
        found = [word] if word in self._index[pos] else []
        found += [b for b in self._exc[pos].get(word, ()) if b in self._index[pos]]
        for suffix, ending in _RULES[pos]:
            if word.endswith(suffix) and len(word) > len(suffix) + 1:
                base = word[: -len(suffix)] + ending
                if base in self._index[pos]:
                    found.append(base)
        return list(dict.fromkeys(found))


def _parse_synset(data: bytes, offset: int, pos: str) -> Synset:
    end = data.index(b"\n", offset)
    head, _, gloss = data[offset:end].decode("utf-8", errors="replace").partition(" | ")
    fields = head.split()
    n_words = int(fields[3], 16)
    raw = [fields[4 + 2 * i] for i in range(n_words)]
    lemmas = tuple(w.lower() for w in raw)
    proper = frozenset(w.lower() for w in raw if w[:1].isupper())
    at = 4 + 2 * n_words
    n_ptrs = int(fields[at])
    ptrs = [fields[at + 1 + 4 * i: at + 5 + 4 * i] for i in range(n_ptrs)]
    hypernyms = tuple(int(p[1]) for p in ptrs if p[0] in ("@", "@i") and p[2] == pos)
    return Synset(int(fields[0]), pos, int(fields[1]), lemmas, hypernyms, proper, bool(_OFFENSIVE.search(gloss)))


def _one_word(lemma: str) -> bool:
    return lemma.isalpha() and len(lemma) >= 3


def replacement(wn: WordNet, word: str, verb_first: bool = False) -> tuple[str, tuple[str, ...], str] | None:
    """``(base form, candidate lemmas, pos)`` for ``word``, or None (module docstring): the
    candidates are the one-word synonyms of its first sound sense, then the one-word lemmas of
    that sense's first hypernym."""
    if word in KEEP or wn.mostly_adjective(word):
        return None
    for pos in ("v", "n") if verb_first else POS:
        bases = wn.base_forms(word, pos)
        for base in bases:
            for offset in wn.senses(base, pos):
                syn = wn.synset(offset, pos)
                if syn.lexfile not in SOUND_LEXFILES[pos]:
                    continue
                if base in syn.proper or syn.offensive:  # a name (a language, a people), or a slur
                    return None
                up = wn.synset(syn.hypernyms[0], pos) if syn.hypernyms else None
                up = None if up is None or up.offensive else up
                hyper = [w for w in up.lemmas if w not in up.proper] if up else []
                choices = tuple(dict.fromkeys(w for w in (*syn.lemmas, *hyper)
                                              if _one_word(w) and w != base and w not in syn.proper))
                # The first sound sense decides (a rarer sense is more often wrong).
                return (base, choices, pos) if choices else None
        if bases:  # the word reads as this part of speech: do not try the other
            return None
    return None


def inflect(word: str, base: str, new: str, pos: str) -> str:
    """``new`` in the inflection that ``word`` has over ``base`` (regular rules only)."""
    w = word.lower()
    # One syllable ending consonant-vowel-consonant doubles its last letter: yap -> yapping.
    stem = new + new[-1] if _CVC.search(new) and len(_VOWELS.findall(new)) == 1 else new
    if w == base:
        out = new
    elif pos == "v" and w.endswith("ing"):
        out = (new[:-1] if new.endswith("e") and not new.endswith("ee") else stem) + "ing"
    elif pos == "v" and w.endswith("ed"):
        out = new + "d" if new.endswith("e") else (new[:-1] + "ied" if new.endswith("y") and new[-2:-1] not in "aeiou"
                                                 else stem + "ed")
    elif w.endswith("s"):
        out = (new[:-1] + "ies" if new.endswith("y") and new[-2:-1] not in "aeiou"
               else new + "es" if new.endswith(("s", "x", "z", "ch", "sh")) else new + "s")
    else:
        out = new
    return out.capitalize() if word[:1].isupper() else out


def lexical_view(caption: str, wn: WordNet, *, max_changes: int = 2, seed: int = 0,
                 avoid: frozenset[str] = frozenset()) -> tuple[str | None, list[str]]:
    """The caption with up to ``max_changes`` words changed for WordNet synonyms or hypernyms.

    Args:
        avoid: words a replacement must not be (the held-out view: every word of the training
            captions and views); a word whose candidates are all avoided does not change.

    Returns:
        ``(view, changes)``: the view (None when no word can change) and ``"old->new"`` per change.
    """
    view, edits = lexical_edits(caption, wn, max_changes=max_changes, seed=seed, avoid=avoid)
    return view, [f"{old}->{new}" for old, new, _ in edits]


def lexical_edits(caption: str, wn: WordNet, *, max_changes: int = 2, seed: int = 0,
                  avoid: frozenset[str] = frozenset()) -> tuple[str | None, list[tuple[str, str, str]]]:
    """:func:`lexical_view` with each change as ``(old word, new word, part of speech)``, the
    part of speech as WordNet's ``n`` (noun: the sound's source or event) or ``v`` (verb)."""
    tokens = [t for part in _QUOTED.split(caption) if part
              for t in ([part] if part.startswith('"') else _TOKEN.findall(part))]
    words = [i for i, t in enumerate(tokens) if t.isalpha()]
    options = {}
    for k, i in enumerate(words):
        t = tokens[i].lower()
        if len(t) < 3 or t in STOPWORDS:
            continue
        # An inflected word right after a content word is read as a verb first ("a dog barks").
        after_content = k > 0 and tokens[words[k - 1]].lower() not in STOPWORDS
        r = wn.replacement(t, verb_first=after_content and t.endswith(("s", "ed", "ing")) and not t.endswith("ss")
                           and wn.verb_likelier(t))
        new = next((c for c in r[1] if c not in avoid and inflect(t, r[0], c, r[2]) not in avoid), None) if r else None
        if new:
            options[i] = (r[0], new, r[2])
    if not options:
        return None, []
    digest = int(hashlib.sha256(f"{seed}:{caption}".encode()).hexdigest(), 16)
    order = sorted(options, key=lambda i: hashlib.sha256(f"{digest}:{i}".encode()).digest())
    changes = []
    for i in sorted(order[:max_changes]):
        base, new, pos = options[i]
        word = tokens[i]
        tokens[i] = inflect(word, base, new, pos)
        changes.append((word, tokens[i], pos))
        before = [j for j in words if j < i]
        if before and tokens[before[-1]].lower() in ("a", "an"):  # the article follows the new word
            article = "an" if tokens[i][0].lower() in "aeiou" else "a"
            tokens[before[-1]] = article.capitalize() if tokens[before[-1]][0].isupper() else article
    return "".join(tokens), changes


def lexical_views(captions: Sequence[str], wn: WordNet, *, max_changes: int = 2, seed: int = 0,
                  avoid: frozenset[str] = frozenset()) -> list[tuple[str | None, list[str]]]:
    """:func:`lexical_view` of each caption."""
    return [lexical_view(c, wn, max_changes=max_changes, seed=seed, avoid=avoid) for c in captions]

"""A tiny WordNet 3.0 database in the real file formats (wndb(5WN)), for the lexical view's
tests: ``data.*`` lines at the byte offsets that name them, ``index.*`` with the senses in
order, ``*.exc`` exception lists, a licence header in each file as Princeton's has."""

from __future__ import annotations

from pathlib import Path

HEADER = "  1 This software and database is being provided to you, the LICENSEE, by\n" \
         "  2 Princeton University under the following license.\n"

# key: (pos, lexfile, lemmas, hypernym key or None, gloss)
SYNSETS: dict[str, tuple[str, int, list[str], str | None, str]] = {
    "canine": ("n", 5, ["canine", "canid"], None, "a carnivore"),
    "dog": ("n", 5, ["dog", "domestic_dog", "Canis_familiaris"], "canine", "a member of the genus Canis"),
    "frump": ("n", 18, ["frump", "dog"], None, "a dull unattractive woman"),
    "bark_tree": ("n", 20, ["bark"], None, "tough protective covering of a tree"),
    "bark_sound": ("n", 11, ["bark", "yelp"], None, "the sound made by a dog"),
    "yard": ("n", 15, ["yard", "grounds", "curtilage"], None, "the land around a house"),
    "bell": ("n", 6, ["bell"], "device", "a hollow device that rings"),
    "bell_shape": ("n", 25, ["bell", "campana"], None, "the shape of a bell"),
    "device": ("n", 6, ["device", "gadget"], None, "an instrumentality"),
    "goose": ("n", 5, ["goose"], "fowl", "web-footed bird"),
    "fowl": ("n", 5, ["fowl", "poultry"], None, "a domesticated gallinaceous bird"),
    "nation": ("n", 14, ["nation", "land"], None, "a people"),
    "english": ("n", 18, ["English", "English_people"], "nation", "the people of England"),
    "honky": ("n", 18, ["honky", "whitey"], None, "(ethnic slur) offensive term for a white person"),
    "bark_v": ("v", 32, ["bark", "yap"], None, "make barking sounds"),
    "ring_v": ("v", 39, ["ring", "peal"], None, "sound loudly and sonorously"),
    "bell_v": ("v", 35, ["bell"], None, "attach a bell to"),
}
# lemma -> sense keys, most frequent first
INDEX = {
    "n": {"dog": ["dog", "frump"], "canine": ["canine"], "canid": ["canine"], "bark": ["bark_tree", "bark_sound"],
          "yelp": ["bark_sound"], "yard": ["yard"], "grounds": ["yard"], "curtilage": ["yard"], "bell": ["bell", "bell_shape"],
          "campana": ["bell_shape"], "device": ["device"], "gadget": ["device"], "goose": ["goose"], "fowl": ["fowl"], "poultry": ["fowl"],
          "frump": ["frump"], "english": ["english"], "honky": ["honky"], "whitey": ["honky"], "domestic_dog": ["dog"], "canis_familiaris": ["dog"]},
    "v": {"bark": ["bark_v"], "yap": ["bark_v"], "ring": ["ring_v"], "peal": ["ring_v"], "bell": ["bell_v"]},
    "a": {"loud": ["x", "y"], "quiet": ["x"]},
}
EXCEPTIONS = {"n": {"geese": "goose"}, "v": {"rang": "ring", "rung": "ring"}}


def _line(key: str, offsets: dict[str, int]) -> str:
    pos, lexfile, lemmas, hyper, gloss = SYNSETS[key]
    ptrs = [f"@ {offsets[hyper]:08d} {pos} 0000"] if hyper else []
    words = " ".join(f"{w} 0" for w in lemmas)
    return (f"{offsets[key]:08d} {lexfile:02d} {pos} {len(lemmas):02x} {words} {len(ptrs):03d}"
            + "".join(f" {p}" for p in ptrs) + f" | {gloss}  \n")


def write_tiny_wordnet(root: Path) -> Path:
    """Write the database into ``root`` (created); returns it."""
    root.mkdir(parents=True, exist_ok=True)
    names = {"n": "noun", "v": "verb"}
    offsets: dict[str, int] = {}
    for pos in names:
        keys = [k for k, s in SYNSETS.items() if s[0] == pos]
        at = len(HEADER.encode())
        zeros = dict.fromkeys(SYNSETS, 0)
        for key in keys:  # a line's length does not depend on the (fixed-width) offsets in it
            offsets[key] = at
            at += len(_line(key, zeros).encode())
    for pos, name in names.items():
        keys = [k for k, s in SYNSETS.items() if s[0] == pos]
        (root / f"data.{name}").write_text(HEADER + "".join(_line(k, offsets) for k in keys))
        (root / f"{name}.exc").write_text("".join(f"{a} {b}\n" for a, b in EXCEPTIONS[pos].items()))
    for pos, name in {**names, "a": "adj"}.items():
        lines = []
        for lemma, keys in sorted(INDEX[pos].items()):
            offs = " ".join(f"{offsets.get(k, 0):08d}" for k in keys)
            lines.append(f"{lemma} {pos} {len(keys)} 0 {len(keys)} 0 {offs}  \n")
        (root / f"index.{name}").write_text(HEADER + "".join(lines))
    return root

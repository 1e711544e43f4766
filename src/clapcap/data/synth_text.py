"""Captions and paraphrase views for the embedded corpus, written from the clip's content.

Two disjoint lexicons describe every concept:

- ``TRAIN`` words are the only content words the five reference captions use;
- ``VIEW2`` words are used only by paraphrase view 2, so view 2 tests vocabulary the
  models never saw in training captions (the RobustCLAP "changed vocabulary" view).

Paraphrase view 1 keeps the exact word choices of its source caption and changes the
sentence structure (postposed adjectives, fronted repetition, inverted clause order).
"""

from __future__ import annotations

import numpy as np

from clapcap.data.synth_audio import Event

# concept -> word choices. Keys: event kinds, then attribute values.
TRAIN: dict[str, list[str]] = {
    "beep": ["beep", "tone"], "chirp_up": ["rising chirp", "upward sweep"],
    "chirp_down": ["falling chirp", "downward sweep"], "noise": ["burst of noise", "hiss"],
    "clicks": ["series of clicks", "ticking"], "hum": ["hum", "drone"],
    "siren": ["siren", "wailing alarm"], "bell": ["bell", "chime"],
    "drum": ["drum hit", "thump"], "melody": ["melody", "tune"],
    "low": ["low", "deep"], "high": ["high", "high-pitched"],
    "quiet": ["quiet", "soft"], "loud": ["loud", "strong"],
    "once": ["once"], "twice": ["twice", "two times"], "repeatedly": ["repeatedly", "several times"],
    "major": ["major key", "happy"], "minor": ["minor key", "sad"],
    "slow": ["slow"], "fast": ["fast", "quick"],
    "sine": ["flute-like", "pure"], "square": ["buzzy", "harsh"], "pluck": ["plucked", "guitar-like"],
}
VIEW2: dict[str, list[str]] = {
    "beep": ["bleep", "pip"], "chirp_up": ["ascending whistle", "climbing glide"],
    "chirp_down": ["descending whistle", "sinking glide"], "noise": ["blast of static", "rush of static"],
    "clicks": ["clatter", "tapping"], "hum": ["murmur", "whirr"],
    "siren": ["klaxon", "howling alert"], "bell": ["gong", "tolling"],
    "drum": ["percussive strike", "thud"], "melody": ["musical phrase", "motif"],
    "low": ["bassy", "rumbling"], "high": ["shrill", "piercing"],
    "quiet": ["faint", "gentle"], "loud": ["booming", "intense"],
    "once": ["on one occasion"], "twice": ["in a pair", "as a duo"],
    "repeatedly": ["over and over", "again and again"],
    "major": ["cheerful", "bright"], "minor": ["melancholic", "gloomy"],
    "slow": ["leisurely", "unhurried"], "fast": ["rapid", "brisk"],
    "sine": ["airy", "whistly"], "square": ["reedy", "raspy"], "pluck": ["twangy", "harp-like"],
}
LABELS = {"beep": "beep", "chirp_up": "rising chirp", "chirp_down": "falling chirp",
          "noise": "noise burst", "clicks": "clicks", "hum": "hum", "siren": "siren",
          "bell": "bell", "drum": "drum", "melody": "melody"}


def _article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _adjectives(ev: Event, pick) -> list[str]:
    words = [pick(ev.loudness)]
    if ev.pitch:
        words.append(pick(ev.pitch))
    if ev.kind == "melody":
        words += [pick(ev.tempo), pick(ev.timbre)]
        if "key" not in pick(ev.key):  # mood words are adjectives; "minor key" is a noun phrase
            words.insert(0, pick(ev.key))
    return words


def _noun(ev: Event, pick) -> str:
    noun = pick(ev.kind)
    if ev.kind == "melody" and "key" in pick(ev.key):
        noun += f" in a {pick(ev.key)}"
    return noun


def _np(ev: Event, pick, postposed: bool = False) -> str:
    """Noun phrase: ``a loud high beep twice`` or (postposed) ``a beep that is loud and high, twice``."""
    adj, noun = _adjectives(ev, pick), _noun(ev, pick)
    if postposed:
        core = f"{_article(noun)} that is {' and '.join(adj)}"
        return core + (f", {pick(ev.repetition)}," if ev.repetition else "")
    core = _article(f"{' '.join(adj)} {noun}")
    return core + (f" {pick(ev.repetition)}" if ev.repetition else "")


SEQ_TEMPLATES = [
    "{a} sounds, then {b}.", "{a}, followed by {b}.", "There is {a}, and after that {b}.",
    "First {a}, then {b}.", "{a} is heard, followed by {b}.",
]
OVL_TEMPLATES = [
    "{a} while {b} plays.", "{a} at the same time as {b}.", "{a} is heard while {b} plays.",
    "There is {a} at the same time as {b}.", "{a} sounds while {b} plays.",
]
SINGLE_TEMPLATES = ["{a}.", "{a} is heard.", "There is {a}.", "{a} sounds.", "{a} plays."]
V1_SEQ = ["After {a}, {b} is heard.", "{b} is heard after {a}."]
V1_OVL = ["While {b} plays, {a} is heard.", "At the same time as {b}, there is {a}."]
V1_SINGLE = ["Heard is {a}.", "What sounds is {a}."]
V2_SEQ = ["Initially {a}; subsequently {b}.", "{a} occurs, and afterwards comes {b}."]
V2_OVL = ["{a} occurs alongside {b}.", "Simultaneously, {a} and {b} overlap."]
V2_SINGLE = ["One can perceive {a}.", "Audible here: {a}."]


def _join(events: list[Event], layout: str, template: str, pick, postposed: bool = False,
          joiner: str = ", then ") -> str:
    phrases = [_np(ev, pick, postposed) for ev in events]
    if len(phrases) == 1:
        text = template.format(a=phrases[0])
    else:
        a = phrases[0] if layout == "overlap" else joiner.join(phrases[:-1])
        b = phrases[-1] if layout != "overlap" else " and ".join(phrases[1:])
        text = template.format(a=a, b=b)
    text = text.replace(",,", ",").replace(",.", ".").replace(",;", ";")
    return text[0].upper() + text[1:]


def _picker(lexicon: dict[str, list[str]], rng: np.random.Generator):
    cache: dict[str, str] = {}

    def pick(concept: str) -> str:
        if concept not in cache:
            choices = lexicon[concept]
            cache[concept] = choices[int(rng.integers(0, len(choices)))]
        return cache[concept]

    return pick


def _templates(n_events: int, layout: str, seq, ovl, single):
    return single if n_events == 1 else (ovl if layout == "overlap" else seq)


def describe(events: list[Event], layout: str, rng: np.random.Generator, n_captions: int = 5
             ) -> tuple[list[str], list[str], list[str]]:
    """Write ``n_captions`` captions and their view-1 and view-2 paraphrases.

    Returns:
        ``(captions, view1, view2)``, three aligned lists of length ``n_captions``.
    """
    templates = _templates(len(events), layout, SEQ_TEMPLATES, OVL_TEMPLATES, SINGLE_TEMPLATES)
    v1_t = _templates(len(events), layout, V1_SEQ, V1_OVL, V1_SINGLE)
    v2_t = _templates(len(events), layout, V2_SEQ, V2_OVL, V2_SINGLE)
    captions, view1, view2 = [], [], []
    order = rng.permutation(len(templates))
    for i in range(n_captions):
        seed = int(rng.integers(0, 2**31))
        # The same word choices (same picker seed) for a caption and its view 1.
        captions.append(_join(events, layout, templates[order[i % len(templates)]],
                              _picker(TRAIN, np.random.default_rng(seed))))
        view1.append(_join(events, layout, v1_t[i % len(v1_t)],
                           _picker(TRAIN, np.random.default_rng(seed)), postposed=True))
        view2.append(_join(events, layout, v2_t[i % len(v2_t)], _picker(VIEW2, rng),
                           postposed=i % 2 == 1, joiner=", next "))
    return captions, view1, view2


def music_captions(ev: Event, rng: np.random.Generator, n_captions: int = 5) -> tuple[list[str], list[str]]:
    """MusicCaps-style long captions for a melody clip, plus its aspect list."""
    timbre = {"sine": "flute", "square": "synth lead", "pluck": "plucked guitar"}[ev.timbre or "sine"]
    mood = {"major": "happy", "minor": "sad"}[ev.key or "major"]
    aspects = [f"{ev.tempo} tempo", f"{ev.key} key", timbre, mood, "instrumental",
               "solo melody", f"{ev.loudness} volume"]
    forms = [
        "This is an instrumental piece with a {tempo} {timbre} melody in a {key} key. The mood is {mood}. "
        "There is no percussion and no voice.",
        "A solo {timbre} plays a {mood} melody at a {tempo} tempo. The recording is {loud}.",
        "The song features a lone {timbre} line in a {key} key, {tempo} and {mood}.",
        "Instrumental music: a {loud}, {tempo} {timbre} melody with a {mood} feel.",
        "A {mood} {key}-key tune played by a {timbre} at a {tempo} pace, without accompaniment.",
    ]
    fields = dict(tempo=ev.tempo, timbre=timbre, key=ev.key, mood=mood, loud=ev.loudness)
    order = rng.permutation(len(forms))
    return [forms[order[i % len(forms)]].format(**fields) for i in range(n_captions)], aspects

"""The caption rule of game sound effects: from the words of a file's path to a sound
description, with a written lexicon, and the filter of names that are game events.

Rule (docs/corpus.md, "Game effects"), for a path below the game's sound folder:

1. **Words.** Drop the extension; split at ``/``, ``-``, ``_``, ``.``, spaces, lower-to-upper
   case changes and letter/digit changes; lower-case; drop numbers and one-letter variant
   marks (``door1-open`` -> ``door open``; ``civfemdeath01a`` -> ``civfemdeath``). A word
   written as several (``arcticwind``) is cut into words of :data:`VOCABULARY` when it can be
   cut entirely into them (the fewest pieces); otherwise it stays whole. Words of
   :data:`CATEGORY_WORDS` (folders that only sort files: ``sound``, ``ambience``, ``fauna``...)
   are dropped.
2. **Filter.** A clip whose words include one of :data:`EVENT_WORDS` is dropped: it names a game
   event (an interface click, a menu, an item, a unit's acknowledgement, a voice taunt, a
   score announcement), not what is heard. So is a clip with no word left (``1C.ogg``).
3. **Caption.** The head noun is the last word that is a key of :data:`NOUNS`. When there is
   one, the caption is ``NP VERB``: ``NP`` is the noun's phrase (``a sheep``; ``arctic wind``
   keeps the modifiers written before the noun in :data:`MODIFIERS`), and ``VERB`` is the
   verb of the first word after the noun that is in :data:`ACTIONS` (``door open`` -> ``a door
   opening``), else the noun's own verb (``a sheep bleating``), else nothing
   (``a knife``). The lexicon is used only for nouns in it; otherwise the caption is
   ``the sound of <words>``. Labels: the head noun (and the action word), else the words.
"""

from __future__ import annotations

import re
from functools import cache

# Folder and file words that only sort files and say nothing about the sound.
CATEGORY_WORDS = frozenset({
    "sound", "sounds", "audio", "ambience", "ambient", "misc", "fx", "sfx", "actor", "fauna",
    "animal", "animals", "data", "loop", "short", "long", "civ", "soldiers", "civilians", "aliens",
    "seq", "weapons", "ugv", "bullet", "weather",
    # 0 A.D., OpenArena and MegaGlest sorting folders
    "resource", "construction", "gathering", "lumbering", "mining", "foraging", "farming", "dayscape",
    "singlesteps", "movement", "mounted", "weapon", "world", "movers", "player", "units", "commondata",
})

# Words naming game events rather than sounds: interface and menus, items and their
# effects, unit acknowledgements and voice taunts, announcements, scripted music. A clip
# with any of them is dropped.
EVENT_WORDS = frozenset({
    "ui", "interface", "menu", "click", "popup", "lobby", "privmsg", "talk", "roundstart", "item",
    "items", "drag", "geoscape", "mail", "promotion", "mission", "newmission", "alert",
    "basealert", "ufospotted", "ufolost", "activity", "info", "standard", "build", "place",
    "placed", "collect", "crate", "countdown", "custom", "denied", "extratime", "suddendeath",
    "skip", "switch", "switchhog", "invulnerable", "lowgravity", "homerun", "yoohoo", "hellish",
    "tardis", "valkyries", "ride", "kiss", "hogchant", "chant", "medikit", "irgoggles", "powerup",
    "lasersight", "warp", "portal", "portalopen", "portalshot", "portalswitch", "voices", "voice",
    "taunt", "jingle", "disco", "music", "psiattack", "radiomessage", "news", "newswav", "yessir",
    "acknowledge", "select", "order", "victory", "defeat", "beep", "hog", "hell",
    # 0 A.D. (unit trained, resource used up), OpenArena (pickups, hit feedback, character voices),
    # MegaGlest (unit acknowledgement)
    "ack", "trained", "expire", "pkup", "feedback", "announcer", "sarge", "neko", "silence", "respawn",
})

# Noun -> (its phrase, the verb heard when the name gives no action; "" for none). The
# phrase keeps the article rule in one place: mass nouns and plurals have none.
NOUNS: dict[str, tuple[str, str]] = {
    # animals
    "sheep": ("a sheep", "bleating"), "goat": ("a goat", "bleating"), "cow": ("a cow", "mooing"),
    "pig": ("a pig", "grunting"), "horse": ("a horse", "neighing"), "dog": ("a dog", "barking"),
    "wolf": ("a wolf", "howling"), "chicken": ("a chicken", "clucking"), "hen": ("a hen", "clucking"),
    "rooster": ("a rooster", "crowing"), "duck": ("a duck", "quacking"), "goose": ("a goose", "honking"),
    "cat": ("a cat", "meowing"), "lion": ("a lion", "roaring"), "tiger": ("a tiger", "roaring"),
    "bear": ("a bear", "growling"), "elephant": ("an elephant", "trumpeting"),
    "camel": ("a camel", "grunting"), "donkey": ("a donkey", "braying"), "frog": ("a frog", "croaking"),
    "owl": ("an owl", "hooting"), "crow": ("a crow", "cawing"), "cuckoo": ("a cuckoo", "calling"),
    "seagull": ("a seagull", "crying"), "bird": ("a bird", "singing"), "birds": ("birds", "singing"),
    "bee": ("a bee", "buzzing"), "hornet": ("a hornet", "buzzing"),
    "cricket": ("crickets", "chirping"), "crickets": ("crickets", "chirping"),
    "grasshopper": ("a grasshopper", "chirping"), "turkey": ("a turkey", "gobbling"),
    "monkey": ("a monkey", "screeching"), "whale": ("a whale", "singing"), "dolphin": ("a dolphin", "clicking"),
    "mouse": ("a mouse", "squeaking"), "deer": ("a deer", "calling"), "bull": ("a bull", "bellowing"),
    "cattle": ("cattle", "mooing"), "flamingo": ("a flamingo", "calling"), "peacock": ("a peacock", "calling"),
    "hawk": ("a hawk", "screeching"), "ibis": ("an ibis", "calling"), "snake": ("a snake", "hissing"),
    "sow": ("a sow", "grunting"), "ele": ("an elephant", "trumpeting"),
    # weather and nature
    "wind": ("wind", "blowing"), "rain": ("rain", "falling"), "thunder": ("thunder", "rumbling"),
    "water": ("water", "flowing"), "fountain": ("a water fountain", "splashing"),
    "splash": ("a splash", ""), "fire": ("a fire", "crackling"), "steam": ("steam", "hissing"),
    "bubbles": ("bubbles", "bubbling"), "waterfall": ("a waterfall", "rushing"), "river": ("a river", "flowing"),
    "wave": ("a wave", "breaking"), "wavecrash": ("a wave", "crashing"), "waverocky": ("waves on rocks", "breaking"),
    "storm": ("a storm", "raging"), "leaves": ("leaves", "rustling"), "drops": ("water drops", "dripping"),
    # people
    "male": ("a man", ""), "man": ("a man", ""), "female": ("a woman", ""), "fem": ("a woman", ""),
    "footsteps": ("footsteps", ""), "steps": ("footsteps", ""),
    # tools, machines, vehicles
    "door": ("a door", ""), "hammer": ("a hammer", "striking"), "saw": ("a saw", "sawing"),
    "drill": ("a drill", "drilling"), "blowtorch": ("a blowtorch", "hissing"),
    "pump": ("a pump", "working"), "machinery": ("machinery", "running"), "machine": ("a machine", "running"),
    "generator": ("a generator", "humming"), "engine": ("an engine", "running"), "turbine": ("a turbine", "turning"),
    "ventilation": ("ventilation", "humming"), "hum": ("a hum", ""), "diesel": ("a diesel engine", "running"),
    "plane": ("a plane", "flying"), "parachute": ("a parachute", "opening"), "jetpack": ("a jetpack", "firing"),
    "sparks": ("sparks", "crackling"), "static": ("static", "hissing"), "creak": ("a creak", ""),
    "shutter": ("a camera shutter", "clicking"), "whip": ("a whip", "cracking"),
    # weapons and impacts
    "explosion": ("an explosion", ""), "grenade": ("a grenade", ""), "rocket": ("a rocket", ""),
    "shotgun": ("a shotgun", "firing"), "pistol": ("a pistol", "firing"), "rifle": ("a rifle", "firing"),
    "sniper": ("a sniper rifle", "firing"), "gun": ("a gun", "firing"), "cannon": ("a cannon", "firing"), "minigun": ("a minigun", "firing"),
    "chaingun": ("a chaingun", "firing"), "flamethrower": ("a flamethrower", ""), "flamer": ("a flamethrower", ""),
    "knife": ("a knife", ""), "bat": ("a bat", ""),
    "glass": ("glass", ""), "wood": ("wood", ""), "metal": ("metal", ""), "electric": ("an electric device", ""),
    "mortar": ("a mortar", "firing"), "molotov": ("a molotov cocktail", ""), "swoosh": ("a swoosh", ""),
    "laser": ("a laser", "firing"), "plasma": ("a plasma weapon", "firing"), "taser": ("a taser", ""),
    "spider": ("a spider", ""), "whistle": ("a whistle", "blowing"), "droplet": ("water droplets", "dripping"),
    "doors": ("a door", ""), "bump": ("a bump", ""), "sword": ("a sword", ""),
    "smg": ("a submachine gun", "firing"), "hmg": ("a heavy machine gun", "firing"),
    "machinegun": ("a machine gun", "firing"), "railgun": ("a railgun", "firing"), "nailgun": ("a nailgun", "firing"),
    "musket": ("a musket", "firing"), "arrow": ("an arrow", ""), "shield": ("a shield", "being hit"),
    "sling": ("a sling stone", ""), "hoe": ("a hoe", "digging"), "fan": ("a fan", "whirring"),
    "ship": ("a ship", ""), "warship": ("a warship", ""), "gate": ("a gate", ""), "stonegate": ("a stone gate", ""),
    "footstep": ("footsteps", ""), "fs": ("footsteps", ""), "hstep": ("footsteps", ""), "mstep": ("hoofbeats", ""),
    "fleshimp": ("a blow", "hitting flesh"), "fleshstab": ("a blade", "stabbing flesh"),
    "siegeprojectilehit": ("a siege projectile", "hitting something"), "ballist": ("a ballista", "shooting"),
    "onager": ("an onager", ""), "windgust": ("a gust of wind", ""),
    # instruments and sample-library sounds (Sonic Pi, LMMS)
    "piano": ("a piano", "playing"), "organ": ("an organ", "playing"), "violin": ("a violin", "playing"),
    "cello": ("a cello", "playing"), "trumpet": ("a trumpet", "playing"), "flute": ("a flute", "playing"),
    "harpsichord": ("a harpsichord", "playing"), "guitar": ("a guitar", "playing"), "guit": ("a guitar", "playing"),
    "strings": ("strings", "playing"), "string": ("strings", "playing"), "brass": ("brass", "playing"),
    "bass": ("a bass sound", ""), "choir": ("a choir", "singing"), "bell": ("a bell", "ringing"),
    "triangle": ("a triangle", "ringing"), "applause": ("applause", ""), "crowd": ("a crowd", ""),
    "breath": ("breathing", ""), "metronome": ("a metronome", "ticking"), "vinyl": ("a vinyl record", ""),
    "explode": ("an explosion", ""), "burp": ("a burp", ""),
    # two-word nouns, matched before their single words
    "grenade launcher": ("a grenade launcher", "firing"), "rubber duck": ("a rubber duck", ""),
    "wind turbine": ("a wind turbine", "turning"), "baseball bat": ("a baseball bat", ""),
    "mine pump": ("a mine pump", "working"), "explosion fire": ("an explosion and fire", ""),
    "human death": ("a person", "dying"), "death generic": ("an animal", "dying"),
    "sword attack": ("a sword", "striking"),
    "bow attack": ("a bow", "shooting"),
    "pike attack": ("a pike", "striking"), "spear attack": ("a spear", "striking"),
    "jav attack": ("a javelin", "being thrown"), "sling attack": ("a sling", "shooting"),
    "mine stone": ("stone", "being mined"), "mine metal": ("metal ore", "being mined"),
    "lumber tree": ("a tree", "being chopped"), "con saw": ("a saw", "sawing"), "con wood": ("wood", "being worked"),
    "con stone": ("stone", "being worked"), "gather fruit": ("fruit", "being picked"),
    "gather meat": ("meat", "being butchered"), "gather field": ("a field", "being harvested"),
    "building collapse": ("a building", "collapsing"), "explode debris": ("an explosion", "scattering debris"),
    "amb farm": ("farm ambience", ""), "amb port": ("port ambience", ""), "amb trade": ("market ambience", ""),
    "day temperate": ("a temperate day ambience", ""), "day tropical": ("a tropical day ambience", ""),
    "peacock call": ("a peacock", "calling"), "squeal move": ("a pig", "squealing"),
    "ram attack": ("a battering ram", "striking"), "ram move": ("a battering ram", "moving"),
    "wind chimes": ("wind chimes", "ringing"), "glass hum": ("a glass", "humming"),
    "glass rub": ("a glass", "being rubbed"), "guit harmonics": ("guitar harmonics", ""),
    "church organ": ("a church organ", "playing"), "steel guitar": ("a steel-string guitar", "playing"),
    "bass slap": ("a slap bass", "playing"), "bell choir": ("a bell choir", "ringing"),
    "machinegun ric": ("a bullet", "ricocheting"), "machinegun buletby": ("a bullet", "flying by"),
}

# The animals of :data:`NOUNS` (a reader that takes animals only keeps these heads).
ANIMALS = frozenset({
    "sheep", "goat", "cow", "pig", "horse", "dog", "wolf", "chicken", "hen", "rooster", "duck", "goose", "cat",
    "lion", "tiger", "bear", "elephant", "camel", "donkey", "frog", "owl", "crow", "cuckoo", "seagull", "bird",
    "birds", "bee", "hornet", "cricket", "crickets", "grasshopper", "turkey", "monkey", "whale", "dolphin", "mouse",
    "deer", "bull", "cattle", "flamingo", "peacock", "hawk", "ibis", "snake", "sow", "ele",
})

# Words kept in front of a noun's phrase when written before it (``arctic wind``).
MODIFIERS = frozenset({"arctic", "small", "big", "soft", "low", "high", "heavy", "alien", "metal", "wooden",
                       "electric", "blood"})

# Action word in a name -> the verb it gives the caption.
ACTIONS: dict[str, str] = {
    "open": "opening", "close": "closing", "walk": "walking", "move": "moving", "idle": "idling",
    "stop": "stopping", "die": "dying", "death": "dying", "hurt": "in pain", "scream": "screaming",
    "attack": "attacking", "growl": "growling", "impact": "hitting something", "break": "breaking",
    "reload": "being reloaded", "fire": "firing", "launcher": "firing", "bounce": "bouncing",
    "pin": "pin being pulled", "throw": "being thrown", "tick": "ticking", "flyby": "flying by",
    "drop": "dropping", "boost": "boosting", "crack": "cracking", "splash": "splashing",
    "creak": "creaking", "fly": "flying", "hit": "hitting something", "moving": "moving", "shooting": "shooting",
    "scratch": "scratching", "rewind": "being rewound", "backspin": "spinning back", "hiss": "hissing",
    "accord": "playing a chord", "pizzicato": "playing pizzicato", "rub": "being rubbed",
}

# Footstep surfaces: ``footsteps grass`` -> ``footsteps on grass``.
SURFACES = frozenset({"grass", "gravel", "snow", "sand", "wood", "metal", "stone", "tile", "carpet", "dirt",
                      "linoleum", "rock"})
# An impact on a material: ``arrow impact wood`` -> ``an arrow hitting wood``; a noun whose verb is
# ``being hit`` takes the material as its modifier: ``shield metal`` -> ``a metal shield being hit``.
IMPACTS = frozenset({"impact", "hit"})

# Words known to the segmentation of names written as one word (``arcticwind``).
VOCABULARY = frozenset({w for key in NOUNS for w in key.split()} | EVENT_WORDS | MODIFIERS | set(ACTIONS) | SURFACES | {
    "body", "ground", "hit", "tv", "news", "city", "atmo", "power", "com", "energy", "wormhole",
    "device", "sword", "human", "spider", "blood", "shot", "release", "attach", "rope", "gravity",
    "sudden", "extra", "time", "punch", "cake", "melon", "egg", "grave", "hog", "freeze", "frozen",
    "ice", "beam", "land", "sine", "pick", "rc", "heavy", "mini", "double", "ball", "waterbullet",
    "civ", "bolter", "needler", "fontain", "night", "rubber", "launcher", "turbine", "baseball", "combat", "storm",
    "horseman",  # a rider, not a horse: kept whole
    "slap", "chimes", "guit",
})


def _cut(word: str) -> list[str]:
    """``word`` cut into the fewest words of :data:`VOCABULARY`, or ``[word]`` when it cannot
    be cut entirely into them. An event word stays whole (``extratime``)."""
    if word in EVENT_WORDS:
        return [word]
    return list(_cut_cached(word) or (word,))


@cache
def _cut_cached(word: str) -> tuple[str, ...] | None:
    if word in VOCABULARY:
        return (word,)
    best: tuple[str, ...] | None = None
    for i in range(len(word) - 1, 1, -1):
        if word[:i] in VOCABULARY:
            rest = _cut_cached(word[i:])
            if rest is not None and (best is None or len(rest) + 1 < len(best)):
                best = (word[:i], *rest)
    return best


def path_words(path: str) -> list[str]:
    """Step 1 of the rule: the words of ``path`` (relative to the game's sound folder)."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", path)
    stem = re.sub(r"([a-z])([A-Z])", r"\1 \2", stem)
    stem = re.sub(r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])", " ", stem)
    raw = [w for w in re.split(r"[/\-_.\s]+", stem.lower()) if len(w) > 1 and not w.isdigit()]
    words = [w for word in raw for w in _cut(word) if w not in CATEGORY_WORDS]
    # a word repeated (folder ``impact/``, file ``knife-impact``) is kept at its last place
    return [w for i, w in enumerate(words) if w not in words[i + 1:]]


def is_event(words: list[str]) -> bool:
    """Step 2: True when the name is a game event (or has no word left)."""
    return not words or any(w in EVENT_WORDS for w in words)


def _head(words: list[str]) -> tuple[int, int] | None:
    """``(start, end)`` of the first noun of :data:`NOUNS` in ``words`` (two-word nouns first)."""
    for i in range(len(words)):
        if " ".join(words[i:i + 2]) in NOUNS and i + 1 < len(words):
            return i, i + 2
        if words[i] in NOUNS:
            return i, i + 1
    return None


def head_noun(words: list[str]) -> str | None:
    """The head noun of ``words`` (a key of :data:`NOUNS`), or None when the lexicon has none."""
    span = _head(words)
    return None if span is None else " ".join(words[span[0]:span[1]])


def _with_modifiers(phrase: str, mods: list[str]) -> str:
    if not mods:
        return phrase
    article, _, rest = phrase.partition(" ")
    if article in ("a", "an") and rest:
        return re.sub(r"^a (?=[aeiou])", "an ", f"a {' '.join(mods)} {rest}")
    return f"{' '.join(mods)} {phrase}"


def effect_caption(words: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Step 3: ``(captions, labels)`` of a kept effect's words."""
    span = _head(words)
    if span is None:
        return (f"the sound of {' '.join(words)}",), tuple(words)
    start, end = span
    noun = " ".join(words[start:end])
    phrase, verb = NOUNS[noun]
    mods: list[str] = []
    for w in reversed(words[:start]):  # the run of modifiers right before the noun
        if w not in MODIFIERS:
            break
        mods.insert(0, w)
    phrase = _with_modifiers(phrase, mods)
    rest = words[:start] + words[end:]
    action = next((w for w in rest if w in ACTIONS), None)
    surface = next((w for w in words[end:] if w in SURFACES), None)
    if phrase == "footsteps" and surface:
        return (f"{phrase} on {surface}",), ("footsteps", surface)
    if surface and verb == "being hit":
        return (f"{_with_modifiers(phrase, [surface])} {verb}",), (noun, surface)
    if surface and action in IMPACTS:
        return (f"{phrase} hitting {surface}",), (noun, surface)
    if action:
        return (f"{phrase} {ACTIONS[action]}",), (noun, action)
    return (f"{phrase} {verb}".strip(),), (noun,)

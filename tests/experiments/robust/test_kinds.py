"""The kind views (events / attributes / structure): exact substitutions, on the tiny corpus."""

from __future__ import annotations

import re

from clapcap.data.synth_text import TRAIN
from clapcap.experiments.robust.kinds import clip_concepts, kind_views, substitute


def test_substitute_replaces_only_the_given_concepts_by_whole_words():
    caption = "A loud high-pitched rising chirp twice, then a quiet tone."
    assert substitute(caption, {"chirp_up", "beep"}) == (
        "A loud high-pitched ascending whistle twice, then a quiet pip.", 2)
    assert substitute(caption, {"loud", "high", "twice", "quiet"}) == (
        "A booming piercing rising chirp in a pair, then a faint tone.", 4)
    assert substitute("A toned hum.", {"beep"}) == ("A toned hum.", 0)  # "tone" inside a word is kept
    assert substitute("Tone.", {"beep"}) == ("Pip.", 1)
    assert substitute("A hum and a siren.", {"hum", "siren"}) == ("A murmur and a klaxon.", 2)
    assert substitute("A strong hum.", {"loud"}) == ("An intense hum.", 1)  # the article follows the new word


def test_clip_concepts_split_events_from_attributes():
    meta = {"events": [{"kind": "melody", "loudness": "loud", "tempo": "fast", "key": "minor", "timbre": "sine"},
                       {"kind": "beep", "loudness": "quiet", "pitch": "low", "repetition": "once"}]}
    assert clip_concepts(meta) == {"events": {"melody", "beep"},
                                   "attributes": {"loud", "fast", "minor", "sine", "quiet", "low", "once"}}


def test_kind_views_on_the_corpus_change_one_kind_each(tiny_corpus):
    from clapcap.data.prepare import load_dataset

    df = load_dataset(tiny_corpus).manifest
    views, stats = kind_views(df)
    assert stats["clips"] + stats["left_out_music"] == len(df) and stats["clips"] > 0
    assert stats["unchanged"] == {"events": 0, "attributes": 0}
    for _, row in views.iterrows():
        concepts = clip_concepts(row["meta"])
        for caption, ev, at in zip(row["captions"], row["paraphrases_events"], row["paraphrases_attributes"], strict=True):
            assert ev != caption and at != caption
            for concept in concepts["events"]:  # no training word of an event is left in the events view
                for phrase in TRAIN[concept]:
                    assert not re.search(rf"\b{re.escape(phrase)}\b", ev, re.I)
            # the events view keeps every attribute word the caption has, and vice versa
            for concept in concepts["attributes"]:
                for phrase in TRAIN[concept]:
                    if re.search(rf"\b{re.escape(phrase)}\b", caption, re.I):
                        assert re.search(rf"\b{re.escape(phrase)}\b", ev, re.I)
            assert not re.search(r"\ba [aeiou]", ev + at, re.I)

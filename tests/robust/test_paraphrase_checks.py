"""Mechanical checks of LLM views and the per-view statuses behind the acceptance rates."""

from __future__ import annotations

import pytest

from clapcap.paraphrase.checks import corpus_events, events_in, mechanical_check, view_status
from clapcap.paraphrase.dataset import acceptance

EVENTS = corpus_events()


def test_corpus_events_know_both_lexicons():
    assert {"beep", "tone", "bleep", "pip"} <= set(EVENTS["beep"])
    assert events_in("A loud klaxon then a soft chime.", EVENTS) == {"siren", "bell"}
    assert events_in("A high-pitched tone.", EVENTS) == {"beep"}
    assert events_in("Toned muscles.", EVENTS) == set()  # whole words only


@pytest.mark.parametrize("view, reason", [
    ("A loud siren wails, then a bell rings.", None),
    ("The loud klaxon howls before the gong.", None),  # view-2 words are the same events
    ("A loud siren wails, then a bell rings and a drum hit.", "new sound event(s): drum"),
    ("I'm sorry, I cannot rewrite this caption.", "refusal or meta-talk"),
    ("Here is the paraphrase: a loud siren.", "refusal or meta-talk"),
    ("Siren.", "length 1 words for a caption of 7"),
    ("A siren " + "wails loudly and " * 10 + "a bell rings.", "length"),
])
def test_mechanical_check(view, reason):
    got = mechanical_check("A loud siren, then a bell rings.", view, EVENTS)
    assert (got is None) if reason is None else (got is not None and got.startswith(reason)), got


def test_view1_must_keep_every_event_view2_need_not():
    caption = "A loud siren, then a bell rings."
    assert mechanical_check(caption, "Then a bell rings after a loud noise.", EVENTS, "view1") == \
        "lost sound event(s): siren"
    assert mechanical_check(caption, "A booming wail, and then a ringing follows.", EVENTS, "view2") is None


def test_event_check_off_without_a_lexicon():
    assert mechanical_check("A bell rings twice.", "A bell and a drum hit ring twice.", None) is None


def _record(view, *args):
    status, reason = view_status(*args)
    return {"view": view, "status": status, "reason": reason}


def test_statuses_and_rates():
    records = [
        _record("view1", "a b c", False, None, None),
        _record("view1", "a b c", True, None, None),
        _record("view2", None, False, "generate: attempt 3: x", None),
        _record("view2", "a b", False, None, "new sound event(s): drum"),
    ]
    assert [r["status"] for r in records] == ["accepted", "corrected", "dropped", "dropped"]
    acc = acceptance(records)
    assert acc["view1"]["kept_rate"] == 1.0 and acc["view1"]["corrected_rate"] == 0.5
    assert acc["view2"]["dropped"] == 2 and acc["view2"]["drop_reasons"] == {"check: new": 1, "generate": 1}
    assert acc["all"]["n"] == 4 and acc["all"]["kept_rate"] == 0.5

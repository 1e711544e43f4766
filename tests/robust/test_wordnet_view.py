"""The lexical view from WordNet's own files (clapcap.paraphrase.wordnet), on a tiny database in
the real formats, and the paraphrase step's wordnet backend with its held-out view."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from tiny_wordnet import write_tiny_wordnet

from clapcap.data.prepare import load_dataset
from clapcap.paraphrase.dataset import ParaphraseParams, paraphrase_dataset
from clapcap.paraphrase.heldout import COLUMN, words
from clapcap.paraphrase.wordnet import WordNet, WordNetError, inflect, lexical_view


@pytest.fixture
def wn(tmp_path):
    return WordNet(write_tiny_wordnet(tmp_path / "wordnet"))


def test_reads_senses_synsets_and_base_forms(wn):
    dog, frump = wn.senses("dog", "n")
    syn = wn.synset(dog, "n")
    assert syn.lemmas == ("dog", "domestic_dog", "canis_familiaris") and syn.lexfile == 5
    assert wn.synset(syn.hypernyms[0], "n").lemmas == ("canine", "canid")
    assert wn.synset(frump, "n").lexfile == 18 and wn.senses("Dog", "n") == (dog, frump)
    assert wn.base_forms("dogs", "n") == ["dog"] and wn.base_forms("geese", "n") == ["goose"]
    assert wn.base_forms("barking", "v") == ["bark"] and wn.base_forms("rang", "v") == ["ring"]
    assert wn.base_forms("barked", "n") == [] and wn.mostly_adjective("loud") and not wn.mostly_adjective("dog")
    assert wn.verb_likelier("barking") and not wn.verb_likelier("bells")


def test_the_view_changes_words_for_synonyms_or_hypernyms(wn):
    # dog: its first sense (an animal) has no one-word synonym, so its hypernym; barks (after a
    # content word, but bark has more noun senses) reads as a noun: the first sense that sounds
    # is the event, not the tree; yard is a location (not a sound sense); loud is an adjective.
    assert lexical_view("A dog barks in the yard.", wn) == ("A canine yelps in the yard.",
                                                            ["dog->canine", "barks->yelps"])
    assert lexical_view("Church bells ringing", wn) == ("Church devices pealing", ["bells->devices",
                                                                                  "ringing->pealing"])
    assert lexical_view("geese", wn) == ("fowl", ["geese->fowl"])
    assert lexical_view("a loud yard", wn) == (None, [])
    # Left alone: a transcript, a name WordNet capitalises, a word of KEEP, a slur, a compound.
    assert lexical_view('English speech: "a dog barks"', wn) == (None, [])
    assert lexical_view("a honky-tonk dog", wn) == ("a honky-tonk canine", ["dog->canine"])
    assert lexical_view("a honky", wn) == (None, [])
    assert lexical_view("An ugly goose", wn, max_changes=1) == ("An ugly fowl", ["goose->fowl"])
    assert lexical_view("an bell", wn)[0] == "a device"  # the article follows the new word
    one, changes = lexical_view("A dog barks in the yard.", wn, max_changes=1)
    assert len(changes) == 1 and one != "A dog barks in the yard."
    assert lexical_view("A dog barks in the yard.", wn, max_changes=1) == (one, changes)  # seeded
    assert lexical_view("A dog barks", wn, avoid=frozenset({"canine", "yelps"}))[0] == "A canid barks"
    assert inflect("Barking", "bark", "yap", "v") == "Yapping" and inflect("rated", "rate", "tie", "v") == "tied"
    assert inflect("flies", "fly", "penny", "n") == "pennies" and inflect("boxes", "box", "dish", "n") == "dishes"


def test_a_missing_database_file_names_the_make_target(tmp_path):
    root = write_tiny_wordnet(tmp_path / "wn")
    (root / "data.verb").unlink()
    with pytest.raises(WordNetError, match=r"data\.verb.*make wordnet-assets"):
        WordNet(root)


SENTENCES = ["A dog barks in the yard.", "Church bells ringing", "geese", "A loud yard"]


def test_wordnet_backend_writes_view2_and_a_heldout_view_in_unseen_words(tiny_corpus, tmp_path):
    data = tmp_path / "corpus"
    shutil.copytree(tiny_corpus, data)
    manifest = pd.read_csv(data / "manifest.csv", dtype=str, keep_default_na=False)
    manifest["captions"] = [json.dumps([SENTENCES[i % len(SENTENCES)]]) for i in range(len(manifest))]
    for col in ("paraphrases_v1", "paraphrases_v2"):
        manifest = manifest.drop(columns=[col], errors="ignore")
    manifest.to_csv(data / "manifest.csv", index=False)
    params = ParaphraseParams(backend="wordnet", dataset_dir=str(data), out_dir=str(tmp_path / "p"),
                              wordnet_dir=str(write_tiny_wordnet(tmp_path / "wn")), heldout_splits=["test"])
    report = paraphrase_dataset(params, progress=False)
    df = load_dataset(tmp_path / "p").manifest
    views = dict(zip((c[0] for c in df["captions"]), (v[0] for v in df["paraphrases_v2"]), strict=True))
    assert views == {"A dog barks in the yard.": "A canine yelps in the yard.",
                     "Church bells ringing": "Church devices pealing", "geese": "fowl", "A loud yard": None}
    assert all(v == [None] for v in df["paraphrases_v1"])
    assert report["wordnet"]["n_views"] == sum(c[0] != "A loud yard" for c in df["captions"])
    # Each caption's edits, with the part of speech WordNet read the word as (real_robust's kinds).
    edits = json.loads((tmp_path / "p" / "view2_edits.json").read_text())
    by_caption = {c[0]: edits[str(cid)][0] for cid, c in zip(df["clip_id"], df["captions"], strict=True)}
    assert by_caption["Church bells ringing"] == [["bells", "devices", "n"], ["ringing", "pealing", "v"]]
    assert by_caption["A dog barks in the yard."] == [["dog", "canine", "n"], ["barks", "yelps", "n"]]
    assert by_caption["A loud yard"] == []
    assert "edits" not in report
    # The held-out view avoids every word of the training captions and views: canid, not canine.
    test = df[df["split"] == "test"]
    held = {c[0]: h[0] for c, h in zip(test["captions"], test[COLUMN], strict=True)}
    assert held["A dog barks in the yard."] == "A canid barks in the yard."  # yelp and canine were seen
    train = df[df["split"] == "train"]
    seen = {w for col in ("captions", "paraphrases_v2") for caps in train[col] for c in caps if c for w in words(c)}
    new = {w for h in held.values() if h for w in words(h)} - {w for c in held for w in words(c)}
    assert new and not new & seen and report["heldout"]["n_substitute_words"] == len(new)
    assert all(v is None for v in train[COLUMN])

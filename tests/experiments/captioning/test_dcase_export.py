"""The champion in DCASE's formats (clapcap.experiments.captioning.dcase)."""

from __future__ import annotations

import csv

import pytest

from clapcap.experiments.captioning.dcase import DCASE_COLUMNS, metrics_row, submission_rows


def test_submission_rows_are_file_names_in_order_with_one_line_captions():
    rows = submission_rows({"b": "A dog\nbarks.", "a": "Rain  falls."}, {"a": "z.wav", "b": "y.flac"})
    assert rows == [("y.flac", "A dog barks."), ("z.wav", "Rain falls.")]
    with pytest.raises(ValueError, match="not in the test split"):
        submission_rows({"c": "x"}, {"a": "z.wav"})
    with pytest.raises(ValueError, match="share an audio file name"):
        submission_rows({"a": "x", "b": "y"}, {"a": "same.wav", "b": "same.wav"})


def test_metrics_row_keeps_dcase_order_and_gives_each_empty_cell_a_reason():
    scores = {"corpus": {"bleu_1": 0.5, "bleu_2": 0.4, "bleu_3": 0.3, "bleu_4": 0.2, "meteor": 0.1,
                         "rouge_l": 0.45, "cider_d": 0.9},
              "unavailable": {"spice": "needs CoreNLP", "spider": "needs CoreNLP", "spider_fl": "needs CoreNLP",
                              "sbert_sim": "no SBERT", "fer": "no checkpoint", "fense": "no SBERT"}}
    row = metrics_row(scores, vocab=81)
    assert [r["column"] for r in row] == [c for c, _ in DCASE_COLUMNS]
    assert [r["column"] for r in row][:7] == ["BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr-D"]
    by = {r["column"]: r for r in row}
    assert by["CIDEr-D"]["value"] == 0.9 and by["Vocabulary (words)"]["value"] == 81
    assert by["FENSE"]["value"] is None and by["FENSE"]["reason"] == "no SBERT"
    assert by["BERTScore"]["value"] is None and "RoBERTa" in by["BERTScore"]["reason"]
    assert all(r["reason"] for r in row if r["value"] is None)


def test_export_of_the_champion_writes_the_submission_and_the_scores(tmp_path, tiny_corpus):
    """End to end on the tiny corpus: a champion decoding record and its test captions; the
    submission has one row per test clip under DCASE's header, and metrics.csv holds the
    CIDEr-D that score_captions gives on the same captions."""
    from clapcap.data.prepare import load_dataset
    from clapcap.evaluation.captioning_metrics import score_captions
    from clapcap.experiments.captioning.dcase import DcaseParams, export_dcase
    from clapcap.utils.io import read_json, write_json

    test = load_dataset(tiny_corpus).manifest.query("split == 'test'")
    preds = {str(c): caps[0] for c, caps in zip(test["clip_id"], test["captions"], strict=True)}
    preds[str(test["clip_id"].iloc[0])] = "a sound"  # not a perfect captioner
    cap = tmp_path / "captioning"
    rec = {"lm": "gpt2", "name": "rep1.2", "seed": 0, "decoding": {}, "checkpoint": "x",
           "val": {"corpus": {"cider_d": 1.0}, "primary": "cider_d"}}
    write_json(cap / "decoding" / "gpt2" / "seed0" / "rep1.2.json", rec)
    write_json(cap / "decoding" / "gpt2" / "seed0" / "rep1.2.predictions.json", preds)
    write_json(cap / "champion.json", {"name": "gpt2_decoding_rep1.2_seed0"})
    params = DcaseParams(captioning_dir=str(cap), champion=str(cap / "champion.json"), dataset_dir=str(tiny_corpus),
                         out_dir=str(tmp_path / "dcase"))
    record = export_dcase(params)
    with open(tmp_path / "dcase" / "submission.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["file_name", "caption_predicted"] and len(rows) == len(test) + 1
    assert {r[0] for r in rows[1:]} == {p.split("/")[-1] for p in test["audio_path"]}
    with open(tmp_path / "dcase" / "metrics.csv", newline="") as fh:
        header, values = list(csv.reader(fh))
    assert header == ["system", *(c for c, _ in DCASE_COLUMNS)] and values[0] == "gpt2_decoding_rep1.2_seed0"
    refs = {str(c): list(r) for c, r in zip(test["clip_id"], test["captions"], strict=True)}
    cider = score_captions(preds, refs, metrics=["cider_d"])["corpus"]["cider_d"]
    assert float(values[header.index("CIDEr-D")]) == pytest.approx(cider, abs=1e-4)
    assert read_json(tmp_path / "dcase" / "metrics.json")["columns"] == record["columns"]
    write_json(cap / "champion.json", {"name": "gpt2_decoding_nothing_seed0"})
    with pytest.raises(ValueError, match="not among the study's results"):
        export_dcase(params)

"""The captioning study's stated findings, each tested over training seeds and test clips.

Every comparison the report or README states about captioning becomes one finding
(docs/conclusions.md): per-clip scores of the primary metric (``findings.metric``, CIDEr-D
by default; its corpus value is the mean over clips) for every training seed of each
system, compared with the two-level bootstrap of
:mod:`clapcap.evaluation.seed_bootstrap`. The findings and how each side gets its seeds:

==========================================  ==============================================
finding (id)                                sides
==========================================  ==============================================
``captioning.<lm>.vs_trivial``              LM baseline over its seeds vs the most
                                            common training caption (fixed, floor 0)
``captioning.lm.<lm>.vs_<first lm>``        two LM baselines, each over its seeds
``captioning.arch.<lm>.<variant>``          one-seed variant (the LM's noise floor) vs the
                                            LM baseline over ``noise_seeds``
``captioning.decoding.<lm>.<name>``         decoding config vs the baseline decoding, both
                                            on every ``noise_seeds`` checkpoint (paired)
``captioning.encoder.default.vs_<enc>``     stage-1 runs over ``encoder_seeds`` (paired;
                                            one seed: the encoder LM's noise floor)
``...encoder.default.vs_<enc>.stage2``      the same through stages 1 and 2 (with
                                            ``encoder_stage2``; the default encoder's row
                                            there is the encoder LM's baseline run when
                                            it is that config: ``plan.encoder_twin``)
``...encoder.<enc>.stage2_narrows``         with ``encoder_stage2``: the stage-1 leader's
                                            per-clip lead (leader minus the other, the
                                            leader picked by the stage-1 means) is larger
                                            at stage 1 than through stage 2 (paired)
``captioning.pipeline.<lm>.vs_<ref>``       LM baseline over its seeds vs a fixed
                                            reference captioner (floor 0)
``captioning.pipeline.<lm>.vs_<ref>.<sub>`` the same on one subset of the test clips
                                            (``caption_subsets``: music, general audio),
                                            every metric computed within the subset
``captioning.music.<base>.vs_<enc>``        stage-1 runs on the music subset over
                                            ``music.seeds`` (paired), its own test clips
``...specialist.<sub>.<enc>.vs_<base>``    the same on each subset of ``specialists``:
                                            the specialist against the subset's baseline
==========================================  ==============================================

A study (:class:`FindingsStudy`) names its findings: the synthetic corpus's study has the ids
above (``captioning.``), the real corpus's study (``real_captioning_study``) the same ids under
``real_captioning.``, no trivial-caption row (its rule-based label captioner is the floor), and
every pipeline-vs-reference finding again on the **unseen** test clips: those whose reference
captions are none of the training clips' captions (:func:`unseen_test_clips`), where no
system can score by repeating a training caption word for word.

A fixed system (a constant caption, an off-the-shelf reference captioner) is not trained
here, so it enters with a noise floor of 0: the claim is about our training against that
system. A one-seed variant takes the noise floor (std over ``noise_seeds`` of the corpus
metric) of its LM's baseline. An LM's seeds are ``noise_seeds``, or ``lm_seeds.<lm>`` where
given (the pretrained SmolLM2 row runs on fewer seeds in the reduced study); LM baselines
with different seeds are compared unpaired. An LM baseline with one seed takes the noise
floor of the LM baseline with the most seeds (the first of ``lms`` among equals), as an
architecture row does; at least one LM needs two seeds. Every claim is the one a reader takes from the tables:
"beats", "is better than", "improves".

Per-clip scores are recomputed from the saved test captions with aac-metrics
(:func:`~clapcap.evaluation.captioning_metrics.score_captions`); their mean must equal the
corpus value in the run's result file (to 1e-9), so stale captions fail loudly.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clapcap.captioning.data import load_caption_split
from clapcap.data.prepare import load_dataset
from clapcap.evaluation.captioning_metrics import score_captions
from clapcap.evaluation.conclusions import (
    FindingSpec,
    evaluate_finding,
    publish_findings,
)
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.experiments.captioning.config import CaptioningParams, MusicEncoderStudy
from clapcap.experiments.captioning.plan import (
    arch_specs,
    encoder_result_name,
    lm_specs,
    music_run_name,
    subset_run_name,
)
from clapcap.experiments.captioning.study import decoding_seed_path, test_predictions_path
from clapcap.utils.io import read_json
from clapcap.utils.skip import skip_reason

logger = logging.getLogger(__name__)

_CONSISTENCY_TOL = 1e-9


@dataclass(frozen=True)
class FindingsStudy:
    """How one study's findings are named and which rows it has (module docstring).

    ``prefix``: the first part of every id. ``encoder_label``: what the statements call the
    ``dump`` encoder (``default``). ``trivial``: test each LM against the most common training
    caption (``baseline_trivial.json``). ``unseen_subset``: the pipeline-vs-reference findings
    again on the test clips whose captions no training clip has.
    """

    prefix: str = "captioning"
    encoder_label: str = "synthetic CLAP"
    trivial: bool = True
    unseen_subset: bool = False


#: The synthetic corpus's study: the default of every function here.
SYNTHETIC = FindingsStudy()
#: The studies by their params.yaml section.
STUDIES = {"captioning": SYNTHETIC,
           "real_captioning_study": FindingsStudy(prefix="real_captioning", encoder_label="tower CLAP",
                                                  trivial=False, unseen_subset=True)}


class FindingsInputError(ValueError):
    """A result or prediction file the findings need is missing or disagrees with its record."""


@dataclass
class _Scorer:
    """Per-clip scores of one metric on the test split (clips in the references' order)."""

    references: dict[str, list[str]]
    metric: str

    def __call__(self, predictions: dict[str, str], *, expect: float | None, origin: str) -> np.ndarray:
        scores = score_captions(predictions, self.references, metrics=[self.metric])
        if self.metric not in scores["corpus"]:
            raise FindingsInputError(f"{origin}: metric {self.metric!r} unavailable: "
                                     f"{scores['unavailable'].get(self.metric)}")
        values = np.array([scores["per_clip"][c][self.metric] for c in self.references], dtype=np.float64)
        if expect is not None and abs(values.mean() - expect) > _CONSISTENCY_TOL:
            raise FindingsInputError(f"{origin}: per-clip {self.metric} averages {values.mean():.12f} but the "
                                     f"result file says {expect:.12f}; the saved captions are stale, rerun the stage")
        return values


def _read(path: Path) -> dict:
    if not path.is_file():
        raise FindingsInputError(f"{path}: not found; run the captioning stages first (dvc repro)")
    return read_json(path)


def _run_scores(params: CaptioningParams, scorer: _Scorer, names: list[str]) -> np.ndarray:
    """(n_runs, n_clips) scores of the named training runs (their saved test captions)."""
    out = Path(params.out_dir)
    rows = []
    for name in names:
        record = _read(out / "results" / f"{name}.json")
        preds = _read(test_predictions_path(out, name))
        rows.append(scorer(preds, expect=record["test"]["corpus"].get(scorer.metric), origin=name))
    return np.stack(rows)


def _noise_floor(values: np.ndarray) -> float:
    """Std over seeds (rows) of the corpus metric."""
    means = values.mean(axis=1)
    return statistics.stdev(means.tolist()) if len(means) > 1 else 0.0


def _spec(fid: str, statement: str, metric: str, a: str, b: str) -> FindingSpec:
    return FindingSpec(id=fid, statement=statement, metric=metric, a=a, b=b, claim="greater")


def _lm_findings(params: CaptioningParams, scorer: _Scorer, lm_scores: dict[str, SeedScores],
                 study: FindingsStudy) -> list[tuple]:
    cfg, m, pre = params.findings, scorer.metric, study.prefix
    out = []
    if study.trivial:
        trivial = _read(Path(params.out_dir) / "baseline_trivial.json")
        const = {c: trivial["caption"] for c in scorer.references}
        fixed = SeedScores(scorer(const, expect=trivial["test"]["corpus"].get(m), origin="baseline_trivial")[None, :],
                           (0,), noise_floor=0.0)
        out += [(_spec(f"{pre}.{lm}.vs_trivial", f"the {lm} ClipCap captioner beats the most common "
                       f"training caption on {m}", m, lm, "most common training caption"), lm_scores[lm], fixed, False)
                for lm in params.lms]
    first = params.lms[0]
    out += [(_spec(f"{pre}.lm.{lm}.vs_{first}", f"the {lm} captioner is better than the {first} "
                   f"captioner on {m}", m, lm, first), lm_scores[lm], lm_scores[first], False)
            for lm in params.lms[1:]]
    for name, path in cfg.references.items():
        ref = SeedScores(scorer(_read(Path(path)), expect=None, origin=path)[None, :], (0,), noise_floor=0.0)
        out += [(_spec(f"{pre}.pipeline.{lm}.vs_{name}", f"the {lm} ClipCap pipeline beats the "
                       f"{name} reference captioner on {m}", m, lm, name), lm_scores[lm], ref, False)
                for lm in params.lms]
    return out


def _arch_findings(params: CaptioningParams, scorer: _Scorer, lm_scores: dict[str, SeedScores],
                   study: FindingsStudy) -> list[tuple]:
    out = []
    for lm in params.arch_lms or []:
        specs = arch_specs(params, lm)
        if not specs:
            continue
        floor = _noise_floor(lm_scores[lm].values)
        for spec in specs:
            variant = spec.name[len(lm) + 1:-len(f"_seed{spec.seed}")]
            row = SeedScores(_run_scores(params, scorer, [spec.name]), (spec.seed,), noise_floor=floor)
            out.append((_spec(f"{study.prefix}.arch.{lm}.{variant}", f"{variant} improves the {lm} captioner's "
                              f"{scorer.metric} over its baseline configuration", scorer.metric,
                              f"{lm} {variant}", f"{lm} baseline"), row, lm_scores[lm], False))
    return out


def _decoding_findings(params: CaptioningParams, scorer: _Scorer, lm_scores: dict[str, SeedScores],
                       study: FindingsStudy) -> list[tuple]:
    cfg, out = params.findings, []
    lm, seeds = cfg.decoding_lm, list(params.noise_seeds)
    for name in cfg.decoding:
        rows = []
        for seed in seeds:
            path = decoding_seed_path(params, lm, name, seed)
            rows.append(scorer(_read(path.with_suffix(".predictions.json")),
                               expect=_read(path)["test"]["corpus"].get(scorer.metric), origin=str(path)))
        out.append((_spec(f"{study.prefix}.decoding.{lm}.{name}", f"decoding with {name} improves the {lm} "
                          f"captioner's {scorer.metric} over {cfg.baseline_decoding}", scorer.metric,
                          f"{lm} {name}", f"{lm} {cfg.baseline_decoding}"),
                    SeedScores(np.stack(rows), tuple(seeds)), lm_scores[lm], True))
    return out


def _encoder_findings(params: CaptioningParams, scorer: _Scorer, lm_scores: dict[str, SeedScores],
                      study: FindingsStudy) -> list[tuple]:
    seeds, lm, m, pre = list(params.encoder_seeds), params.encoder_lm, scorer.metric, study.prefix
    if not seeds:  # the all-clips encoder ablation is not in this study
        return []
    stages = {"s1": [1], **({"s12": [1, 2]} if params.encoder_stage2 else {})}
    scores = {(enc, st): _run_scores(params, scorer, [encoder_result_name(params, enc, s, stages[st]) for s in seeds])
              for enc in ["default", *params.encoders] for st in stages}
    # One encoder seed: the stand-in floor is the encoder LM's two-stage baseline over its
    # noise seeds (stage-1 runs have no seed study of their own then).
    floor = _noise_floor(lm_scores[lm].values) if lm in lm_scores else None
    sides = {key: SeedScores(v, tuple(seeds), noise_floor=floor if len(seeds) == 1 else None)
             for key, v in scores.items()}
    label = {"default": study.encoder_label}
    out = []
    for enc in params.encoders:
        out.append((_spec(f"{pre}.encoder.default.vs_{enc}", f"the {study.encoder_label} encoder gives better "
                          f"stage-1 {lm} captions than {enc} ({m})", m, study.encoder_label, enc),
                    sides["default", "s1"], sides[enc, "s1"], True))
        if "s12" not in stages:
            continue
        out.append((_spec(f"{pre}.encoder.default.vs_{enc}.stage2", f"the {study.encoder_label} encoder gives "
                          f"better {lm} captions than {enc} through stages 1 and 2 ({m})", m,
                          study.encoder_label, enc), sides["default", "s12"], sides[enc, "s12"], True))
        # The stage-1 leader is read off the stage-1 means; the claim is that its lead shrinks.
        lead, other = ((enc, "default") if scores[enc, "s1"].mean() > scores["default", "s1"].mean()
                       else ("default", enc))
        gaps = {st: SeedScores(scores[lead, st] - scores[other, st], tuple(seeds),
                               noise_floor=floor if len(seeds) == 1 else None) for st in stages}
        name_of = {k: label.get(k, k) for k in (lead, other)}
        out.append((_spec(f"{pre}.encoder.{enc}.stage2_narrows", f"stage 2 narrows the stage-1 lead of "
                          f"{name_of[lead]} over {name_of[other]} in {lm} captions ({m} difference)", m,
                          f"{name_of[lead]} minus {name_of[other]}, stage 1",
                          f"{name_of[lead]} minus {name_of[other]}, stages 1+2"), gaps["s1"], gaps["s12"], True))
    return out


def unseen_test_clips(manifest) -> set[str]:
    """Test clips none of whose reference captions is also a training clip's caption (verbatim)."""
    train = {c for caps in manifest.loc[manifest["split"] == "train", "captions"] for c in caps}
    test = manifest[manifest["split"] == "test"]
    return {str(cid) for cid, caps in zip(test["clip_id"], test["captions"], strict=True)
            if not any(c in train for c in caps)}


def subset_clips(manifest, subsets: dict[str, list[str]], study: FindingsStudy) -> dict[str, tuple[set[str], str]]:
    """Each subset's test clip ids and how a statement names them: the ``subsets`` by manifest
    ``source``, and the unseen clips when the study asks for them."""
    test = manifest[manifest["split"] == "test"]
    out = {name: (set(test.loc[test["source"].isin(sources), "clip_id"].astype(str)), f"{name} test clips")
           for name, sources in subsets.items()}
    if study.unseen_subset:
        out["unseen"] = (unseen_test_clips(manifest), "test clips whose captions no training clip has")
    return out


def _subset_findings(params: CaptioningParams, subsets: dict[str, tuple[set[str], str]],
                     references: dict[str, list[str]], metric: str, study: FindingsStudy) -> list[tuple]:
    """Each pipeline-vs-reference finding again on every subset of the test clips. CIDEr-D's
    document frequencies come from the subset's own references, so each side is scored anew on
    the subset (the whole-split per-clip scores are not sliced). A one-seed LM takes the noise
    floor of the noise-floor LM (:func:`_floor_lm`) on the same subset."""
    cfg, out = params.findings, []
    for subset, (ids, words) in subsets.items():
        refs = {c: r for c, r in references.items() if c in ids}
        if len(refs) < 2:
            logger.info("captioning subset %s: %d test clip(s); its findings are not tested", subset, len(refs))
            continue
        scorer = _Scorer(refs, metric)
        values = {}
        for lm in params.lms:
            specs = lm_specs(params, lm)
            values[lm] = (np.stack([scorer({c: p for c, p in _read(test_predictions_path(Path(params.out_dir),
                                                                                      s.name)).items() if c in refs},
                                           expect=None, origin=f"{s.name} ({subset})") for s in specs]),
                          tuple(s.seed for s in specs))
        sides = _lm_sides(params, values)
        for name, path in cfg.references.items():
            preds = {c: p for c, p in _read(Path(path)).items() if c in refs}
            ref = SeedScores(scorer(preds, expect=None, origin=f"{path} ({subset})")[None, :], (0,), noise_floor=0.0)
            out += [(_spec(f"{study.prefix}.pipeline.{lm}.vs_{name}.{subset}", f"on the {len(refs)} {words}, "
                           f"the {lm} ClipCap pipeline beats the {name} reference captioner on {metric}", metric, lm,
                           name), sides[lm], ref, False) for lm in params.lms]
    return out


def _music_findings(params: CaptioningParams, metric: str, study: FindingsStudy = SYNTHETIC) -> list[tuple]:
    """Each music encoder against ``music.baseline`` over ``music.seeds``, scored on the music
    subset's test clips (its own references: another set of clips than the corpus's)."""
    music = params.music
    if not music.dataset_dir:
        return []
    reason = skip_reason(music.dataset_dir)
    if reason is not None:  # a real dataset has no corpus music subset
        logger.info("music findings not tested: %s", reason)
        return []
    lm = params.encoder_lm
    sides = _subset_sides(params, music, lambda enc, s: music_run_name(enc, lm, s), metric, "captioning.music")
    return [(_spec(f"{study.prefix}.music.{music.baseline}.vs_{enc}", f"on music clips, the {music.baseline} "
                   f"encoder gives better stage-1 {lm} captions than {enc} ({metric})", metric, music.baseline, enc),
             sides[music.baseline], sides[enc], True) for enc in music.encoders if enc != music.baseline]


def _subset_sides(params: CaptioningParams, sub: MusicEncoderStudy, run_name: Callable[[str, int], str],
                  metric: str, where: str) -> dict[str, SeedScores]:
    """Each encoder's scores over ``sub.seeds`` on the subset's own test clips (their references)."""
    manifest = load_dataset(sub.dataset_dir).manifest
    base = sub.encoders[sub.baseline]
    scorer = _Scorer(load_caption_split(base.dump, manifest, "test", embedding_key=base.embedding_key).references(),
                     metric)
    seeds = list(sub.seeds)
    if len(seeds) < 2:
        raise FindingsInputError(f"{where}.seeds {seeds}: these findings need at least two training seeds (one "
                                 "seed says nothing about another training run)")
    return {enc: SeedScores(_run_scores(params, scorer, [run_name(enc, s) for s in seeds]), tuple(seeds))
            for enc in sub.encoders}


def _specialist_findings(params: CaptioningParams, metric: str, study: FindingsStudy) -> list[tuple]:
    """On each subset of ``specialists``, each encoder against the subset's baseline: the
    specialist is claimed better on the clips it is specialised for (Whisper on speech)."""
    lm, out = params.encoder_lm, []
    for name, sub in params.specialists.items():
        sides = _subset_sides(params, sub, lambda enc, s, name=name: subset_run_name(name, enc, lm, s), metric,
                              f"specialists.{name}")
        out += [(_spec(f"{study.prefix}.specialist.{name}.{enc}.vs_{sub.baseline}", f"on {name} clips, the {enc} encoder gives "
                       f"better stage-1 {lm} captions than {sub.baseline} ({metric})", metric, enc, sub.baseline),
                 sides[enc], sides[sub.baseline], True) for enc in sub.encoders if enc != sub.baseline]
    return out


def _floor_lm(params: CaptioningParams) -> str:
    """The LM whose baseline gives one-seed LMs their noise floor: the one with the most seeds
    (the first of ``lms`` among equals); it needs at least two."""
    lm = max(params.lms, key=lambda m: len(params.seeds_for(m)))
    if len(params.seeds_for(lm)) < 2:
        raise FindingsInputError(f"captioning: the LM baselines have seeds "
                                 f"{ {m: params.seeds_for(m) for m in params.lms} }; the findings need at least one "
                                 "LM with two training seeds (one seed says nothing about another training run)")
    return lm


def _lm_sides(params: CaptioningParams, values: dict[str, tuple[np.ndarray, tuple[int, ...]]]) -> dict[str, SeedScores]:
    """Each LM baseline's scores over its seeds; a one-seed LM with the floor LM's noise floor."""
    floor = _noise_floor(values[_floor_lm(params)][0])
    return {lm: SeedScores(v, seeds, noise_floor=floor if len(seeds) == 1 else None)
            for lm, (v, seeds) in values.items()}


def run_findings(params: CaptioningParams, subsets: dict[str, list[str]] | None = None,
                 study: FindingsStudy | None = None) -> list[dict]:
    """Test every captioning finding; write ``findings.conclusions`` and ``findings.findings_md``.

    ``subsets`` (``caption_subsets``): the pipeline-vs-reference findings again per subset of
    the test clips. ``study``: how the findings are named (the synthetic study's by default).

    Returns:
        The finding entries (the conclusions file format of :mod:`clapcap.evaluation.conclusions`).

    Raises:
        FindingsInputError: when no LM has two noise seeds, on a missing result or caption
            file, or captions whose scores disagree with their result file.
    """
    cfg, study = params.findings, study or SYNTHETIC
    _floor_lm(params)
    manifest = load_dataset(params.dataset_dir).manifest
    refs = load_caption_split(params.dump, manifest, "test", embedding_key=params.embedding_key).references()
    scorer = _Scorer(refs, cfg.metric)
    values = {}
    for lm in params.lms:
        specs = lm_specs(params, lm)
        values[lm] = (_run_scores(params, scorer, [s.name for s in specs]), tuple(s.seed for s in specs))
    lm_scores = _lm_sides(params, values)
    tests = (_lm_findings(params, scorer, lm_scores, study) + _arch_findings(params, scorer, lm_scores, study)
             + _decoding_findings(params, scorer, lm_scores, study)
             + _encoder_findings(params, scorer, lm_scores, study) + _music_findings(params, cfg.metric, study)
             + _specialist_findings(params, cfg.metric, study)
             + _subset_findings(params, subset_clips(manifest, subsets or {}, study), refs, cfg.metric, study))
    findings = [evaluate_finding(spec, a, b, paired_seeds=paired, n_resamples=cfg.n_resamples,
                                 confidence=cfg.confidence, rng_seed=cfg.rng_seed)
                for spec, a, b, paired in tests]
    publish_findings(findings, cfg.conclusions, cfg.findings_md)
    return findings

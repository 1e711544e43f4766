"""clapcap.evaluation: captioning metrics and the checks around them.

``captioning_metrics`` (aac-metrics, assets in ``aac_assets``, METEOR's JVM in ``meteor_jvm``),
``sbert`` (``sbert_sim_minilm``) and ``caption_scores`` (that metric over a study), ``text``
(caption post-processing), ``shared_split`` and ``leakage`` (the reference split and its
leakage check), ``seed_bootstrap`` (over seeds and test items).
"""

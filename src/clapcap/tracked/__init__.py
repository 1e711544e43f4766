"""The tracked edge: library steps inside their MLflow runs.

A step in the library returns its result (and takes callbacks where it has something to say
while it runs); the module here for its family opens the run, logs params, metrics and
artifacts, and registers. Entry points (stage scripts, the CLI, Prefect flows) call these
when tracking is on, and the steps themselves otherwise, so the library below does not
import :mod:`clapcap.tracking`.

- :mod:`.retrieval`: ``track_evaluation``, ``run_evaluate_all``;
- :mod:`.paraphrase`: ``run_paraphrase``;
- :mod:`.report`: ``build_report``;
- :mod:`.robust`: ``run_robust_train``, ``run_robust_benchmark`` (and the registration);
- :mod:`.clap`: ``run_synth_clap`` (tiny or MiniLM), ``run_tracked_training``, the registration;
- :mod:`.captioning`: ``MLflowTracker`` (the captioning study's hooks), ``study_tracker``;
- :mod:`.captioning_register`: ``register_champion``, ``load_champion`` (apart, so the
  training stages' fingerprints hold neither the registration nor the registry).
"""

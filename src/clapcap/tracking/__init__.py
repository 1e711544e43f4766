"""MLflow tracking: the only module of clapcap that calls MLflow.

Conventions
-----------
- The tracking URI is ``$MLFLOW_TRACKING_URI`` when set, else a SQLite store at
  ``<project>/mlruns/mlflow.db`` with artifacts under ``<project>/mlruns/artifacts``.
  Open the UI with ``mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db``. A shared
  ``mlflow server`` (PostgreSQL + S3) needs only ``MLFLOW_TRACKING_URI=http://HOST:PORT``
  on each client: see docs/tracking.md, "A shared tracking server".
- One experiment per pipeline area (``clapcap-data``, ``clapcap-retrieval``, ...);
  one run per configuration, opened at a stage's edge by :func:`tracked`
  (:mod:`clapcap.tracking.runs`), which also logs params, provenance and inputs; seeds and
  trials are child runs.
- Metric keys come from ONE mapper, :mod:`clapcap.tracking.vocab` (``test/t2a/r10`` for
  the JSON's ``t2a`` ``r@10`` on the test split): :func:`log_metrics` maps readable JSON
  names, :func:`log_keyed` checks ready keys. docs/tracking.md, "Metric vocabulary".
- Secrets never reach MLflow: :func:`log_params` drops any key that looks like a
  credential (``api_key``, ``token``, ``secret``, ``password``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clapcap.errors import InputError
from clapcap.tracking.runs import dvc_stage, group_run, provenance, resumed, run_name, tracked
from clapcap.tracking.store import (  # noqa: F401 - the package's API
    _SECRET,
    _mlflow,
    _store_lock,
    clean_params,
    default_tracking_uri,
    flatten,
    log_params,
    open_store,
    prepare_store,
    safe_key,
)
from clapcap.tracking.vocab import VocabularyError, check_key, metric_key, metric_keys

logger = logging.getLogger(__name__)

__all__ = ["VocabularyError", "check_key", "dvc_stage", "group_run", "metric_key", "metric_keys", "provenance",
           "resumed", "run_name", "tracked"]  # re-exported: the stages use them as tracking.<name>

def log_metrics(metrics: Mapping[str, Any], *, scope: str, view: str | None = None,
                direction: str | None = None, stat: str | None = None, step: int | None = None) -> dict[str, float]:
    """Log a JSON metrics mapping under its vocabulary keys (:func:`clapcap.tracking.vocab.metric_keys`;
    ``step=`` for per-epoch values). Non-numbers are skipped.

    Returns:
        The logged ``{key: value}``.
    """
    keyed = metric_keys(metrics, scope=scope, view=view, direction=direction, stat=stat)
    return log_keyed(keyed, step=step)


def log_keyed(metrics: Mapping[str, float], *, step: int | None = None) -> dict[str, float]:
    """Log metrics whose keys are already vocabulary keys.

    Raises:
        VocabularyError: on a key outside the vocabulary (nothing is logged then).
    """
    for key in metrics:
        check_key(key)
    numeric = {k: float(v) for k, v in metrics.items()}
    if numeric:
        _mlflow().log_metrics(numeric, step=step)
    return numeric


def log_artifact(path: str | Path, artifact_path: str | None = None) -> None:
    """Log a file or folder as an artifact of the active run."""
    mlflow = _mlflow()
    path = Path(path)
    if path.is_dir():
        mlflow.log_artifacts(str(path), artifact_path=artifact_path)
    else:
        mlflow.log_artifact(str(path), artifact_path=artifact_path)


def log_table(columns: Mapping[str, list[Any]], artifact_file: str) -> None:
    """Log ``{column: values}`` as an MLflow table of the active run (``mlflow.log_table``), which
    the UI shows as rows under the run's artifacts."""
    _mlflow().log_table(data={k: list(v) for k, v in columns.items()}, artifact_file=artifact_file)


def log_figure(figure: Any, artifact_file: str) -> None:
    """Log a matplotlib figure to the active run."""
    _mlflow().log_figure(figure, artifact_file)


def set_tags(tags: Mapping[str, Any]) -> None:
    """Set tags on the active run."""
    _mlflow().set_tags({k: str(v) for k, v in tags.items()})


def register_model(
    model_uri: str, name: str, *, alias: str | None = None, tags: Mapping[str, str] | None = None
) -> int:
    """Register ``model_uri`` under ``name``; optionally point ``alias`` at the new version.

    Returns:
        The new model version number.
    """
    mlflow = _mlflow()
    from mlflow.utils.logging_utils import MLFLOW_LOGGING_STREAM

    # MLflow prints "Successfully registered model ..." and "Created version ..." straight to
    # stderr (not through logging); the caller logs the version it got, so silence them here.
    was_enabled, MLFLOW_LOGGING_STREAM.enabled = MLFLOW_LOGGING_STREAM.enabled, False
    try:
        version = mlflow.register_model(model_uri, name, tags=dict(tags or {}))
    finally:
        MLFLOW_LOGGING_STREAM.enabled = was_enabled
    if alias:
        mlflow.MlflowClient().set_registered_model_alias(name, alias, version.version)
    return int(version.version)


def get_model_version_by_alias(name: str, alias: str) -> Any:
    """Return the registered model version that ``alias`` points to."""
    return _mlflow().MlflowClient().get_model_version_by_alias(name, alias)


def active_run_id() -> str | None:
    """The id of the active run, or None."""
    run = _mlflow().active_run()
    return run.info.run_id if run else None


def log_pyfunc_model(python_model: Any, name: str, *, artifacts: Mapping[str, str] | None = None,
                     input_example: Any = None, output_example: Any = None) -> str:
    """Log a ``mlflow.pyfunc.PythonModel`` to the active run with its input example and a
    signature inferred from ``input_example`` and ``output_example`` (when both are given);
    returns its model URI."""
    mlflow = _mlflow()
    signature = None
    if input_example is not None and output_example is not None:
        from mlflow.models import infer_signature

        signature = infer_signature(input_example, output_example)
    info = mlflow.pyfunc.log_model(
        name=name, python_model=python_model, artifacts=dict(artifacts or {}),
        input_example=input_example, signature=signature, pip_requirements=model_requirements(),
    )
    return info.model_uri


# What a logged clapcap model needs to load and predict. Given explicitly: without it MLflow
# infers the list by loading the model in a subprocess, which took 15-77 s per registration
# in `make repro` (and left torch and transformers out of the list).
MODEL_PACKAGES = ("clapcap", "mlflow", "cloudpickle", "torch", "transformers", "numpy", "pandas", "soundfile")


def model_requirements() -> list[str]:
    """``MODEL_PACKAGES`` pinned to the installed versions (``name==version``)."""
    from importlib.metadata import version

    return [f"{name}=={version(name)}" for name in MODEL_PACKAGES]


def log_model_metrics(model_uri: str, metrics: Mapping[str, float], *, dataset_dir: str | Path) -> dict[str, float]:
    """Log vocabulary-keyed ``metrics`` of the logged model ``model_uri`` (``models:/m-...``, from
    :func:`log_pyfunc_model`) in the active run, linked to the model and to the dataset they were
    measured on (MLflow 3's ``model_id=`` and ``dataset=``), so the model's page shows its scores
    and the dataset, not only the run's system metrics.

    Raises:
        VocabularyError: on a key outside the vocabulary (nothing is logged then).
        InputError: when ``model_uri`` is not a logged model's URI.
    """
    from clapcap.tracking.runs import meta_dataset
    from clapcap.utils.io import prepared_dataset_hash

    if not model_uri.startswith("models:/m-"):
        raise InputError(f"{model_uri!r}: not a logged model's URI (models:/m-...)")
    for key in metrics:
        check_key(key)
    numeric = {k: float(v) for k, v in metrics.items()}
    dataset = meta_dataset(dataset_dir, prepared_dataset_hash(dataset_dir))
    _mlflow().log_metrics(numeric, model_id=model_uri.removeprefix("models:/"), dataset=dataset)
    return numeric


def search_runs(experiment: str, filter_string: str = "") -> Any:
    """Return a DataFrame of runs of ``experiment`` (empty when it does not exist)."""
    mlflow = _mlflow()
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        import pandas as pd

        return pd.DataFrame()
    return mlflow.search_runs([exp.experiment_id], filter_string=filter_string)


def log_loader_pyfunc_model(name: str, loader: str, *, artifacts: Mapping[str, str],
                            input_example: Any = None) -> str:
    """Log a pyfunc model to the active run whose implementation ``loader`` builds at load time.

    ``loader`` is ``"package.module:function"``; it is called with the local artifact
    paths (``{key: path}``) and returns an object with ``predict(model_input)``. The
    model thus stores only the artifacts and the loader's name, not pickled weights.

    Returns:
        The logged model's URI.
    """
    import importlib

    mlflow = _mlflow()

    class LoaderModel(mlflow.pyfunc.PythonModel):
        def __init__(self, loader_name: str) -> None:
            self.loader_name = loader_name
            self.impl = None

        def load_context(self, context):  # noqa: ANN001 - MLflow's signature
            module, func = self.loader_name.split(":")
            self.impl = getattr(importlib.import_module(module), func)(dict(context.artifacts))

        def predict(self, context, model_input, params=None):  # noqa: ANN001
            return self.impl.predict(model_input)

    output = None
    if input_example is not None:  # the signature's output side: the model's answer to its example
        module, func = loader.split(":")
        output = getattr(importlib.import_module(module), func)(dict(artifacts)).predict(input_example)
    return log_pyfunc_model(LoaderModel(loader), name, artifacts=artifacts, input_example=input_example,
                            output_example=output)


def load_pyfunc_model(model_uri: str, tracking_uri: str | None = None, *, build_hint: str = "") -> Any:
    """Load a pyfunc model (for example ``models:/clapcap-captioner@champion``) from the project's
    store (``tracking_uri`` or :func:`default_tracking_uri`), also outside a stage run.

    Raises:
        RegistryError: when ``model_uri`` is ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION``
            and the store has no such model, alias or version (a fresh clone); the message
            ends with ``build_hint`` (how to build and register one).
    """
    mlflow = _mlflow()
    uri = tracking_uri or default_tracking_uri()
    mlflow.set_tracking_uri(uri)
    _check_registered(model_uri, uri, build_hint)
    return mlflow.pyfunc.load_model(model_uri)


def _check_registered(model_uri: str, store: str, build_hint: str) -> None:
    """Raise :class:`RegistryError` unless the ``models:/`` URI names a registered version."""
    from mlflow.exceptions import MlflowException

    if not model_uri.startswith("models:/"):
        return
    ref = model_uri[len("models:/"):].strip("/")
    name, at, alias = ref.partition("@")
    name, _, version = name.partition("/") if not at else (name, "", "")
    client = _mlflow().MlflowClient()
    try:
        client.get_registered_model(name)
    except MlflowException as exc:
        raise RegistryError(f"no model is registered as {name!r} in {store}, so {model_uri} cannot be loaded. "
                            f"{build_hint or 'Register one first (docs/tracking.md).'}") from exc
    if at and alias_version(name, alias) is None:
        raise RegistryError(f"registered model {name!r} has no @{alias} in {store}, so {model_uri} cannot be "
                            f"loaded. Promote a version by hand: {promote_command(name, 'VERSION', alias)}"
                            + (f". {build_hint}" if build_hint else ""))
    if version.isdigit():
        _version(name, version)


def promote_command(name: str, version: int | str, alias: str = "champion") -> str:
    """The command that moves ``name@alias`` to ``version`` on a person's word."""
    extra = "" if alias == "champion" else f" --alias {alias}"
    return f"clapcap registry promote {name} {version}{extra} --reason '...'"


# --------------------------------------------------------------------------- registry verbs
class RegistryError(InputError):
    """A registered model, version or artifact that the registry verbs need is not there."""


def log_dict(data: Mapping[str, Any], artifact_file: str) -> None:
    """Log ``data`` as a JSON artifact of the active run (``evaluation/item_scores.json``)."""
    _mlflow().log_dict(dict(data), artifact_file)


def _version(name: str, version: int | str) -> Any:
    from mlflow.exceptions import MlflowException

    try:
        return _mlflow().MlflowClient().get_model_version(name, str(version))
    except MlflowException as exc:
        raise RegistryError(f"registered model {name!r} has no version {version}: {exc.message}") from exc


def version_artifact_json(name: str, version: int | str, artifact_file: str,
                          tracking_uri: str | None = None) -> dict[str, Any]:
    """The JSON artifact ``artifact_file`` of the run that registered ``name`` version ``version``.

    Raises:
        RegistryError: when the version does not exist, came from no run, or its run has no
            such artifact (a version registered before the artifact was logged).
    """
    mlflow = _mlflow()
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(tracking_uri or default_tracking_uri())
    mv = _version(name, version)
    if not mv.run_id:
        raise RegistryError(f"{name} version {version} was registered from no run, so it has no {artifact_file}")
    try:
        return mlflow.artifacts.load_dict(f"runs:/{mv.run_id}/{artifact_file}")
    except (MlflowException, OSError) as exc:
        raise RegistryError(f"{name} version {version} (run {mv.run_id}) carries no {artifact_file}; "
                            f"versions registered before it was logged cannot be compared: {exc}") from exc


def alias_version(name: str, alias: str) -> int | None:
    """The version number ``name@alias`` points to, or None when the alias is not set."""
    from mlflow.exceptions import MlflowException

    try:
        return int(get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def promote(name: str, version: int | str, *, by: str, reason: str, alias: str = "champion",
            tracking_uri: str | None = None) -> dict[str, Any]:
    """Point ``name@alias`` at ``version`` on a person's word, and record it on the version.

    Tags set on the promoted version: ``clapcap.promotion`` (``manual``),
    ``clapcap.promoted_by``, ``clapcap.promoted_reason``, ``clapcap.promoted_at`` (UTC,
    ISO 8601), ``clapcap.promoted_alias`` and ``clapcap.previous_<alias>`` (the version the
    alias left, or ``none``). The version that lost the alias gets ``clapcap.replaced_by``.

    Returns:
        ``{"name", "version", "alias", "previous", "by", "reason", "at"}``.

    Raises:
        RegistryError: when the model or version does not exist.
        InputError: when ``by`` or ``reason`` is empty.
    """
    import datetime as dt

    if not by.strip() or not reason.strip():
        raise InputError("a promotion needs who (by) and why (reason)")
    mlflow = _mlflow()
    mlflow.set_tracking_uri(tracking_uri or default_tracking_uri())
    _version(name, version)
    previous = alias_version(name, alias)
    client = mlflow.MlflowClient()
    at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    client.set_registered_model_alias(name, alias, str(version))
    tags = {"clapcap.promotion": "manual", "clapcap.promoted_by": by, "clapcap.promoted_reason": reason,
            "clapcap.promoted_at": at, "clapcap.promoted_alias": alias,
            f"clapcap.previous_{alias}": str(previous) if previous is not None else "none"}
    for key, value in tags.items():
        client.set_model_version_tag(name, str(version), key, value)
    if previous is not None and previous != int(version):
        client.set_model_version_tag(name, str(previous), "clapcap.replaced_by", f"{version} ({alias}, {at})")
    logger.info("%s@%s: version %s -> %s (by %s: %s)", name, alias, previous, version, by, reason)
    return {"name": name, "version": int(version), "alias": alias, "previous": previous, "by": by,
            "reason": reason, "at": at}

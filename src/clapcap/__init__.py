"""clapcap: MLOps for audio-language models (CLAP retrieval, ClipCap captioning, RobustCLAP).

Importing the package is cheap and offline: heavy backends (torch, transformers,
laion_clap, aac_metrics, mlflow, prefect) are imported inside the functions that use them.
"""

__version__ = "0.1.0"

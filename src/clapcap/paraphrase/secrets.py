"""Moved to :mod:`clapcap.llm.secrets`; these names are kept here for old imports."""

from clapcap.llm.secrets import SecretStr, read_env_file, resolve_api_key

__all__ = ["SecretStr", "read_env_file", "resolve_api_key"]

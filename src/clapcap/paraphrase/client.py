"""Moved to :mod:`clapcap.llm.client`; these names are kept here for old imports."""

from clapcap.llm.client import RETRY_STATUS, ChatClient, Message, RetryPolicy
from clapcap.llm.errors import LLMError, LLMResponseError

__all__ = ["RETRY_STATUS", "ChatClient", "LLMError", "LLMResponseError", "Message", "RetryPolicy"]

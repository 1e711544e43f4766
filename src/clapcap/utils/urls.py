"""URLs shown to people: the user-info part (``user:password@``) never is.

:func:`redact_url` is the one redaction of URLs: error messages that name an LLM endpoint
(:class:`clapcap.llm.ChatClient`), the configs that refuse credentials in a ``base_url``
(:class:`clapcap.llm.config.EndpointConfig`) and the params logged to MLflow
(:func:`clapcap.tracking.store.clean_params`) all go through it.
"""

from __future__ import annotations

import re

# scheme://userinfo@ : the user-info runs to the last '@' before the path, query or fragment
# (a raw '@' in a password is not percent-encoded by everyone who writes one).
_USER_INFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")


def redact_url(text: str) -> str:
    """``text`` with the user-info of every URL in it replaced by ``***``.

    Returns:
        ``"http://***@host:8000/v1"`` for ``"http://user:secret@host:8000/v1"``; text
        without such a URL comes back unchanged.
    """
    return _USER_INFO.sub(r"\g<scheme>***@", text)


def has_user_info(url: str) -> bool:
    """Whether ``url`` carries a ``user[:password]@`` part."""
    return redact_url(url) != url

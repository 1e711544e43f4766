"""Speech captions, shared by the speech sources: what is said, in which language, and by
whom when the metadata says it.

Rule (docs/corpus.md): with ``T`` the transcript, ``L`` the language's English name and
``S`` the speaker (``a woman`` / ``a man`` when the package names the voice's sex, else
``someone``): ``S saying "T" in L`` and ``L speech: "T"``. Labels: ``speech`` and ``L``.
"""

from __future__ import annotations

from clapcap.errors import InputError

# Language codes used by the speech sources -> English names.
LANGUAGES: dict[str, str] = {
    "en": "English", "en_GB": "English", "en_US": "English", "be": "Belarusian", "bg": "Bulgarian",
    "ca": "Catalan", "da": "Danish", "de": "German", "el": "Greek", "es": "Spanish", "fr": "French",
    "it": "Italian", "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian", "ml": "Malayalam",
    "nb": "Norwegian", "nl": "Dutch", "nn": "Norwegian", "pl": "Polish", "pt": "Portuguese",
    "ro": "Romanian", "ru": "Russian", "sl": "Slovenian", "sv": "Swedish", "uk": "Ukrainian",
    "zh_tw": "Chinese", "zh_TW": "Chinese", "zh_CN": "Chinese",
}


def language_name(code: str, where: str) -> str:
    """The English name of language ``code``; ``where`` names the file for the error.

    Raises:
        InputError: for a code not in :data:`LANGUAGES`.
    """
    if code not in LANGUAGES:
        raise InputError(f"{where}: language {code!r} is not in clapcap.data.corpus.speech.LANGUAGES")
    return LANGUAGES[code]


def speech_captions(transcript: str, language: str, speaker: str = "someone") -> tuple[str, ...]:
    """The two captions of a spoken clip (module rule)."""
    return (f'{speaker} saying "{transcript}" in {language}', f'{language} speech: "{transcript}"')

"""Paraphrase views of captions for RobustCLAP.

Two backends produce, for every caption, *view 1* (new sentence structure, same
vocabulary) and *view 2* (new vocabulary and structure):

- ``corpus``: the views the embedded synthetic corpus already carries in its manifest
  (``paraphrases_v1`` / ``paraphrases_v2``); offline, the default;
- ``llm``: any OpenAI-compatible chat endpoint, in two steps (generation with
  human-written in-context examples, then a correction pass that restores lost sound
  events and attributes), with a resumable JSONL cache (:mod:`clapcap.paraphrase.llm`).

The API key is read from the environment or a git-ignored ``.env`` file into a
:class:`~clapcap.llm.secrets.SecretStr`, which never prints its value.
"""

"""Finding secrets in text, with rule sets made for it rather than regexes of our own.

* Kingfisher (MongoDB; ``kingfisher-secret-scanner``): the Betterleaks rules (derived from
  gitleaks' rule set) and Google's Veles rules, several hundred of them, compiled into
  one vectorscan database: API keys and tokens of the providers (OpenAI, Anthropic, GitHub,
  AWS, GCP, Slack, Stripe, npm, Hugging Face…), private keys, JWTs, credentials in URLs.
* detect-secrets (Yelp): its AWSKeyDetector (an AWS access key id alone, which Kingfisher
  reports only beside its secret key), KeywordDetector (a value assigned to a name such as
  ``password``, ``secret`` or ``api_key``, quoted or not, as in an env dump or a config file)
  and BasicAuthDetector (``scheme://user:password@host``), with its heuristic filters; a
  keyword's value counts only when it looks like a secret rather than a name in code (gitleaks'
  rule for generic keys: not only letters, dots, dashes and underscores) and has some entropy.

Kingfisher scans megabytes a second once called, but a call costs as much as a few kilobytes
of text: a caller hands over many texts at once (``find_in``) and they are scanned as one. The
keyword detectors run only where one of their keywords occurs (the entries of detect-secrets'
deny list, as plain words: ``api_key``, ``apikey``, ``password``…), on a window of that line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Literal

from detect_secrets.filters import heuristic
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.keyword import (
    CONFIG_DENYLIST_REGEX_TO_GROUP,
    DENYLIST,
    KeywordDetector,
)
from kingfisher_sdk import Rules, Scanner, shannon_entropy

from xcsh_store.secrets import forms

# The words of detect-secrets' deny list (``api_?key``: ``apikey`` and ``api_key``), by a
# stem each holds: a text without the stem is spared looking for its words.
STEMS = ("key", "pass", "pwd", "secret", "contrase")
_WORDS = sorted({entry.replace("_?", joint) for entry in DENYLIST for joint in ("", "_")})
KEYWORDS = {stem: [word for word in _WORDS if stem in word] for stem in STEMS}
# Each word of a stem, as bytes, with where the stem starts in it.
_STEM_WORDS = {
    stem: [(word.encode(), word.encode().find(stem.encode())) for word in words]
    for stem, words in KEYWORDS.items()
}
PASSWORD_STEMS = ("pass", "pwd", "contrase")
URL_MARK = "://"
# What every AWS key id starts with (AWSKeyDetector's first pattern).
AWS_KEY_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")
_AWS_KEY_PREFIX = re.compile("|".join(AWS_KEY_PREFIXES).encode())
# A keyword's value is looked for this far around it, on its line.
WINDOW_BEFORE, WINDOW_AFTER = 60, 300
# A keyword's value: at least this long, with at least this entropy (bits a character).
MIN_KEYWORD_VALUE, MIN_KEYWORD_ENTROPY = 8, 3.0
# Anything shorter is no secret worth the name, and replacing it would cut up common words.
MIN_SECRET = 4
# Texts scanned as one are joined with this (a blank line: no rule reads across it).
SEPARATOR = "\n\n"

# gitleaks' allowlist of its generic-key rule: a value made of these only is a name in code.
_NAME_ONLY = re.compile(r"[A-Za-z_.\-]+")
_KIND_PREFIXES = ("betterleaks.", "veles.secrets/", "kingfisher.")


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret found: what kind (the rule that found it) and its exact text."""

    kind: str
    value: str


def kind_of(rule_id: str) -> str:
    """A rule's id without the name of its rule set: ``openai-api-key``, ``private-key``."""
    for prefix in _KIND_PREFIXES:
        if rule_id.startswith(prefix):
            return rule_id[len(prefix) :]
    return rule_id


# Where a folder records that this machine's rules are compiled (Kingfisher's own cache,
# in the user's cache folder, holds them): the version and settings they were made for.
PREPARED_MARK = "secret-rules"
CONFIDENCE: Literal["low"] = "low"


def prepare_rules(folder: str, announce: Callable[[], None] = lambda: None) -> bool:
    """Compile the rules into Kingfisher's cache unless ``folder`` records that this version
    was prepared already; whether it compiled them now. The first ``secrets``, ``push``,
    ``serve`` or ``mcp`` after a sync that did this loads them in a fraction of a second."""
    mark = os.path.join(folder, PREPARED_MARK)
    wanted = f"kingfisher-secret-scanner {version('kingfisher-secret-scanner')} {CONFIDENCE}\n"
    try:
        with open(mark, encoding="utf-8") as stream:
            if stream.read() == wanted:
                return False
    except OSError:
        pass
    announce()
    Rules(confidence=CONFIDENCE)
    with open(mark, "w", encoding="utf-8") as stream:
        stream.write(wanted)
    return True


class SecretDetector:
    """The secrets in texts. Compiling the rules takes a few seconds the first time on a
    machine (then Kingfisher's cache holds them): make one detector and keep it."""

    def __init__(self) -> None:
        self._scanner = Scanner(Rules(confidence=CONFIDENCE))
        self._keyword = KeywordDetector()
        self._basic_auth = BasicAuthDetector()
        self._aws = AWSKeyDetector()

    def find(self, text: str) -> list[Secret]:
        """The secrets in ``text``, each value once, longest first."""
        return self.find_in([text])

    def find_in(self, texts: Sequence[str]) -> list[Secret]:
        """The secrets in any of ``texts`` (scanned as one), each value once, longest first."""
        return self.find_in_bytes(SEPARATOR.join(texts).encode("utf-8", "surrogatepass"))

    def find_in_bytes(self, data: bytes) -> list[Secret]:
        """The secrets in UTF-8 text, each value once, longest first. Bytes are what the
        rules read, and a keyword is found in them faster than in a str."""
        found: dict[str, str] = {}
        for finding in self._scanner.scan(data):
            # The text the rule matched: a secret found base64-encoded is its encoded form.
            location = finding.location
            matched = data[location["start_offset"] : location["end_offset"]]
            _keep(found, _text(matched), kind_of(finding.rule_id))
        for kind, value in forms.provider_keys(data):
            _keep(found, value, kind)
        lowered = data.lower()  # ASCII letters only: the places stay where they are
        hits = forms.stem_hits(lowered)
        for kind, value in self._keyword_values(data, lowered, hits):
            _keep(found, value, kind)
        for kind, value in forms.assigned(data, lowered, hits):
            _keep(found, value, kind)
        if _AWS_KEY_PREFIX.search(data):
            for value in self._aws.analyze_string(_text(data)):
                _keep(found, value, "aws-key")
        return [Secret(kind, value) for value, kind in sorted(found.items(), key=_longest_first)]

    def _keyword_values(
        self, data: bytes, lowered: bytes, hits: dict[str, list[int]]
    ) -> list[tuple[str, str]]:
        """(kind, value) of detect-secrets' keyword and basic-auth detectors, on a window of
        each line that holds one of their keywords (``lowered``: ``data.lower()``; ``hits``:
        where its stems are, forms.stem_hits)."""
        windows: dict[tuple[int, int], str] = {}
        for stem in (*STEMS, URL_MARK):
            for at in hits[stem]:
                if stem == URL_MARK or _keyword_at(lowered, at, stem):
                    line_start = data.rfind(b"\n", max(0, at - WINDOW_BEFORE), at) + 1
                    line_end = data.find(b"\n", at, at + WINDOW_AFTER)
                    line_end = at + WINDOW_AFTER if line_end == -1 else line_end
                    start = max(line_start, at - WINDOW_BEFORE)
                    windows.setdefault((start, min(line_end, len(data))), stem)
        found: list[tuple[str, str]] = []
        for (start, end), stem in windows.items():
            # A window cut inside a character loses only that character.
            window = data[start:end].decode("utf-8", "ignore")
            if stem == URL_MARK:
                found += (("url-password", value) for value in self._url_passwords(window))
            else:
                kind = "password" if stem in PASSWORD_STEMS else "secret-assignment"
                found += ((kind, value) for value in self._assigned(window))
        return found

    def _assigned(self, window: str) -> list[str]:
        values = []
        for value in self._keyword.analyze_string(window, CONFIG_DENYLIST_REGEX_TO_GROUP):
            value = forms.trimmed(value)
            if (
                forms.reference(value)
                or len(value) < MIN_KEYWORD_VALUE
                or any(character.isspace() for character in value)
                or _NAME_ONLY.fullmatch(value)
                or shannon_entropy(value.encode("utf-8", "surrogatepass")) < MIN_KEYWORD_ENTROPY
                or _filtered(value, window, self._keyword)
            ):
                continue
            values.append(value)
        return values

    def _url_passwords(self, window: str) -> list[str]:
        return [
            value
            for value in self._basic_auth.analyze_string(window)
            if not _filtered(value, window, self._basic_auth)
        ]


def _filtered(value: str, line: str, plugin: object) -> bool:
    """detect-secrets' heuristic filters: templates, $references, sequences, UUIDs, ids,
    values computed by a call, values without a letter."""
    return (
        heuristic.is_templated_secret(value)
        or heuristic.is_prefixed_with_dollar_sign(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_potential_uuid(value)
        or heuristic.is_likely_id_string(value, line, plugin)  # type: ignore[arg-type]
        or heuristic.is_indirect_reference(line)
        or heuristic.is_not_alphanumeric_string(value)
    )


def _keyword_at(lowered: bytes, at: int, stem: str) -> bool:
    """Whether the stem found at ``at`` is part of one of its deny-list words."""
    return any(
        lowered.startswith(word, at - offset) for word, offset in _STEM_WORDS[stem] if offset <= at
    )


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _keep(found: dict[str, str], value: str, kind: str) -> None:
    """A provider's rule names a value better than a generic one (a GitHub token in a URL is
    found both as a token and as a URL's password)."""
    if len(value) < MIN_SECRET or forms.placeholder(value):
        return
    if value not in found or _generic(found[value]):
        found[value] = kind


def _generic(kind: str) -> bool:
    return kind.startswith("generic") or kind in ("password", "secret-assignment", "url-password")


def _longest_first(item: tuple[str, str]) -> tuple[int, str]:
    return -len(item[0]), item[0]

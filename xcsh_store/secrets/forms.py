"""Secrets in the forms the rule sets miss, and the values that only look like secrets.

Kingfisher's provider rules end a key where a space, a quote or the line does: a key followed
by ``.`` ``,`` ``)`` ``]`` or ``>`` ("use my key sk-ant-…." ) is not found at all. Here each
of those providers' keys is found by its own prefix and alphabet, however it is followed.

detect-secrets' keyword detector reads an unquoted ``NAME=value`` only at the end of a line:
shell lines (``docker run -e DB_PASSWORD=… postgres``, ``PGPASSWORD=… psql``,
``export TOKEN=… && …``, an env dump of several assignments) are missed, and a query string's
``password=X&user=ana`` is taken whole. Here an assignment's value ends where the shell's word
does, or at ``&``; and ``mysql -pSECRET``, ``aws configure set aws_secret_access_key …`` and a
``.netrc``'s ``password …`` are read too.

A variable reference is never a secret: ``env.AUTH0_CLIENT_SECRET``, ``${env.X}``,
``process.env.X``, ``$X``, ``os.environ["X"]``, ``settings.SECRET_KEY`` (``reference``).

Every search starts from a literal found with ``bytes.find`` (fast), and a regular expression
runs only where one is (an assignment's name is walked byte by byte to its ``=``): a megabyte
without any costs a few scans for a few bytes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

from ahocorasick_rs import MATCHKIND_LEFTMOST_FIRST, BytesAhoCorasick

# Provider keys: (kind, the literal each is found from, its whole pattern). The kinds are
# Kingfisher's, so that a key both find is named once. A Stripe key's pattern starts a byte
# before its literal (``sk_live_``, ``rk_live_``).
PROVIDER_KEYS: tuple[tuple[str, bytes, re.Pattern[bytes]], ...] = tuple(
    (kind, literal, re.compile(pattern))
    for kind, literal, pattern in (
        ("anthropic-admin-api-key", b"sk-", rb"sk-ant-admin01-[A-Za-z0-9_\-]{80,}"),
        ("anthropic-api-key", b"sk-", rb"sk-ant-api03-[A-Za-z0-9_\-]{80,}"),
        ("openai-api-key", b"sk-", rb"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"),
        ("openai-api-key", b"sk-", rb"sk-[A-Za-z0-9_\-]{16,}T3BlbkFJ[A-Za-z0-9_\-]{16,}"),
        ("openai-api-key", b"sk-", rb"sk-[A-Za-z0-9]{48}(?![A-Za-z0-9_\-])"),
        ("stripe-access-token", b"k_live_", rb"[sr]k_live_[A-Za-z0-9]{20,}"),
        ("stripe-access-token", b"k_test_", rb"[sr]k_test_[A-Za-z0-9]{20,}"),
        ("gcp-api-key", b"AIza", rb"AIza[A-Za-z0-9_\-]{35}"),
        ("huggingface-access-token", b"hf_", rb"hf_[A-Za-z0-9]{30,}"),
        ("jwt", b"eyJ", rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    )
)
PEM_BEGIN = b"-----BEGIN "
# The literals the keys and private keys are found from, all in one pass over the bytes
# (Aho-Corasick: a dozen bytes.find calls cost more than the rest of the detection).
KEY_LITERALS = tuple(dict.fromkeys(literal for _kind, literal, _pattern in PROVIDER_KEYS))
_KEY_SEARCH = BytesAhoCorasick([*KEY_LITERALS, PEM_BEGIN], matchkind=MATCHKIND_LEFTMOST_FIRST)
_PATTERNS_OF = {
    literal: [
        (kind, pattern) for kind, key_literal, pattern in PROVIDER_KEYS if key_literal == literal
    ]
    for literal in KEY_LITERALS
}
# The stems the names of secrets and the commands that take one are found from (in lowered
# bytes; no stem holds another), all in one pass too.
NAME_STEMS = (
    "key", "pass", "pwd", "secret", "contrase", "://", "token", "credential", "mysql", "mariadb",
)  # fmt: skip
_NAME_SEARCH = BytesAhoCorasick(
    [stem.encode() for stem in NAME_STEMS], matchkind=MATCHKIND_LEFTMOST_FIRST
)
# A key's first character follows none of these (``task-…`` holds no ``sk-`` key).
_WORD_BYTE = re.compile(rb"[A-Za-z0-9_]")
# A key whose characters vary less than this (bits a character) is a placeholder
# (``sk-proj-xxxx…``): real keys are random.
MIN_KEY_ENTROPY = 3.5

# A name that says its value is a secret, as its last part or anywhere.
SECRET_NAME = re.compile(
    r"(?i)(?:pass(?:word|wd)?|pwd|secret|token|api_?key|access_?key|private_?key|"
    r"auth_?key|signing_?key|credentials?)$|password|passwd|secret|(?:^|[_.\-])tokens?(?:$|[_.\-])"
)
# ``NAME=value`` as a shell writes it (no space around ``=``): found from a stem of a secret's
# name (``pass``, ``token``…) by walking over the name's bytes to its ``=``; the value ends
# where the shell's word does, or at ``&`` (a query string's next parameter).
ASSIGNMENT_STEMS = ("pass", "pwd", "secret", "token", "credential", "key")
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_EQUALS = ord("=")
ASSIGNED_VALUE = re.compile(
    rb"\"(?P<double>[^\"\n]*)\"|'(?P<single>[^'\n]*)'|(?P<bare>[^\s'\"&;|<>`()=][^\s'\"&;|<>`()]*)"
)
# Commands that take a secret their own way, each looked for on the lines that name them.
# mysql and its tools take the password glued to -p.
MYSQL_PASSWORD = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb)\b[^\n]*?\s-p(?P<value>[^\s'\"-][^\s'\"]*)"
)
AWS_CONFIGURE = re.compile(
    r"\baws\s+configure\s+set\s+(?:[\w.]*\.)?(?:aws_secret_access_key|aws_session_token)"
    r"\s+[\"']?(?P<value>[^\s'\"]+)"
)
# A .netrc's ``password VALUE`` (``machine … login … password …``, on one line or several).
NETRC_PASSWORD = re.compile(r"(?<![A-Za-z0-9_\-])password[ \t]+(?P<value>[^\s'\"]+)")
NETRC_CONTEXT = re.compile(r"\b(?:machine|login|default)\s+\S+")
# (``aws configure set aws_secret_access_key``: its ``secret``; a .netrc: ``password``.)
COMMAND_STEMS = ("mysql", "mariadb", "secret", "pass")
_NETRC_WORD = re.compile(rb"password[ \t]")
# A .netrc's machine and login are looked for this far before a password's line.
NETRC_REACH = 200

# A value that names where a secret is rather than holding it.
_REFERENCE = re.compile(
    r"""(?x)
      \$                                              # $X, ${X}
    | %[A-Za-z_][A-Za-z0-9_]*%                        # %X%
    | \{\{                                            # {{ secrets.X }}
    | <[A-Za-z_ -]+>$                                 # <your-token>
    | (?:process\.env|import\.meta\.env|os\.environ|env|ENV|secrets|vars|config|settings)
      [.\[]                                           # env.X, os.environ["X"]
    | [A-Za-z_][A-Za-z0-9_]*\(                        # os.getenv("X"), read_secret()
    | [A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$   # settings.DB_PASSWORD
    """
)
# A value made of these only is a name in code (gitleaks' rule for generic keys).
_NAME_ONLY = re.compile(r"[A-Za-z_.\-]+")
_PLACEHOLDER = re.compile(
    r"(?i)(?-i:x{6}|X{6})|\*{3}|\.{3}|…|change-?me|replace-?me|example|redacted|your[_-]|dummy|placeholder"
)
# An assignment's value: at least this long, with at least this entropy (bits a character).
MIN_VALUE, MIN_VALUE_ENTROPY = 8, 3.0
# A value given to an option that is a password (mysql's -p, a .netrc's password): shorter.
MIN_PASSWORD = 6


def entropy(value: str | bytes) -> float:
    """Shannon entropy of ``value``, in bits a character."""
    counts = Counter(value)
    total = len(value)
    return -sum(count / total * math.log2(count / total) for count in counts.values())


def reference(value: str) -> bool:
    """Whether ``value`` names a variable, a setting or a call rather than holding a secret."""
    return bool(_REFERENCE.match(value))


def placeholder(value: str) -> bool:
    """Whether ``value`` is an example or a placeholder (AWS's documented ``…EXAMPLE`` keys,
    ``sk-ant-api03-...``, ``changeme``) rather than a secret."""
    return bool(_PLACEHOLDER.search(value))


def secret_value(value: str, minimum: int = MIN_VALUE) -> bool:
    """Whether an assigned ``value`` may be a secret: long enough, no reference, no name in
    code, no placeholder, some entropy."""
    return (
        len(value) >= minimum
        and not reference(value)
        and not _NAME_ONLY.fullmatch(value)
        and not _PLACEHOLDER.search(value)
        and entropy(value) >= (MIN_VALUE_ENTROPY if minimum >= MIN_VALUE else 2.0)
    )


def stem_hits(lowered: bytes) -> dict[str, list[int]]:
    """Where each of NAME_STEMS occurs in ``lowered`` (``data.lower()``), in order."""
    hits: dict[str, list[int]] = {stem: [] for stem in NAME_STEMS}
    for number, start, _end in _NAME_SEARCH.find_matches_as_indexes(lowered):
        hits[NAME_STEMS[number]].append(start)
    return hits


def provider_keys(data: bytes) -> Iterator[tuple[str, str]]:
    """(kind, key) of the provider keys and private keys in UTF-8 ``data``, however they are
    followed."""
    pem = False
    end = 0
    for number, at, _end in _KEY_SEARCH.find_matches_as_indexes(data):
        if number == len(KEY_LITERALS):
            pem = True
            continue
        literal = KEY_LITERALS[number]
        start = at - 1 if literal.startswith(b"k_") else at
        if start < end or start < 0 or (start > 0 and _WORD_BYTE.match(data, start - 1)):
            continue
        for kind, pattern in _PATTERNS_OF[literal]:
            match = pattern.match(data, start)
            if match is None:
                continue
            key = match.group()
            if entropy(key[len(literal) :]) >= MIN_KEY_ENTROPY:
                yield kind, key.decode("ascii")
                end = match.end()
            break
    if pem:
        yield from private_keys(data)


# A private key's first line, and what may follow it up to its last: base64 lines and the
# header fields of an encrypted PEM (``Proc-Type: 4,ENCRYPTED``).
PEM_HEADER = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
PEM_END = re.compile(rb"[ \t]*-----END [A-Z0-9 ]*-----")
PEM_BODY_LINE = re.compile(rb"[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\n\\]*)?[ \t]*\r?(?=\n|\\n|$)")
# What ends a key's line: a line break, or its escape in a JSON text quoted in a text (a
# service account's key file that ``cat`` printed).
PEM_BREAKS = (b"\n", b"\\n")


def private_keys(data: bytes) -> Iterator[tuple[str, str]]:
    """("private-key", block) of each PEM private key in ``data``: from its BEGIN line to its
    END line, or to its last base64 line when the text was cut before the END (Kingfisher's
    rule takes at most a few kilobytes of a key: a 4096-bit key's last 18 lines stayed)."""
    at = data.find(PEM_BEGIN)
    while at != -1:
        header = PEM_HEADER.match(data, at)
        if header is None:
            at = data.find(PEM_BEGIN, at + 1)
            continue
        end = position = header.end()
        while brk := next((b for b in PEM_BREAKS if data.startswith(b, position)), None):
            position += len(brk)  # the next line
            closing = PEM_END.match(data, position)
            if closing is not None:
                end = closing.end()
                break
            line = PEM_BODY_LINE.match(data, position)
            if line is None or line.end() == position:  # not a key's line, or a blank one
                break
            end = position = line.end()
        if end > header.end():  # a key's header alone is no key
            yield "private-key", data[at:end].decode("utf-8", "surrogatepass")
        at = data.find(PEM_BEGIN, end)


def assigned(data: bytes, lowered: bytes, hits: dict[str, list[int]]) -> Iterator[tuple[str, str]]:
    """(kind, value) of the secrets that shell and config lines in UTF-8 ``data`` assign in the
    forms the keyword detector misses (``lowered`` is ``data.lower()``, ``hits`` its
    stem_hits)."""
    ends: set[int] = set()
    for stem in ASSIGNMENT_STEMS:
        for at in hits[stem]:
            end = at + len(stem)
            while end < len(data) and data[end] in _NAME_BYTES:
                end += 1
            if end < len(data) and data[end] == _EQUALS and end not in ends:
                ends.add(end)
                found = _assignment(data, at, end)
                if found is not None:
                    yield found
    lines: set[tuple[int, int]] = set()
    for stem in COMMAND_STEMS:
        for at in hits[stem]:
            if stem == "pass" and not _NETRC_WORD.match(lowered, at):
                continue
            line_start = data.rfind(b"\n", 0, at) + 1
            line_end = data.find(b"\n", at)
            lines.add((line_start, len(data) if line_end == -1 else line_end))
    for start, end in sorted(lines):
        line = data[start:end].decode("utf-8", "ignore")
        before = data[max(0, start - NETRC_REACH) : start].decode("utf-8", "ignore")
        yield from _commands(line, before)


def _assignment(data: bytes, at: int, equals: int) -> tuple[str, str] | None:
    """The secret that the name around ``at``, ending at ``equals``, is assigned, if any."""
    start = at
    while start > 0 and data[start - 1] in _NAME_BYTES:
        start -= 1
    name = data[start:equals].decode("ascii").lstrip("-")
    if not name or not SECRET_NAME.search(name):
        return None
    match = ASSIGNED_VALUE.match(data, equals + 1)
    if match is None:
        return None
    raw = match.group("double") or match.group("single") or match.group("bare") or b""
    value = trimmed(raw.decode("utf-8", "ignore"))
    return (_kind(name), value) if secret_value(value) else None


def _commands(line: str, before: str) -> Iterator[tuple[str, str]]:
    """mysql's -p, aws configure's secret, a .netrc's password (its machine or login on this
    line or in ``before``)."""
    for pattern, kind in ((MYSQL_PASSWORD, "password"), (AWS_CONFIGURE, "aws-secret")):
        for match in pattern.finditer(line):
            value = match.group("value")
            if secret_value(value, MIN_PASSWORD if kind == "password" else MIN_VALUE):
                yield kind, value
    if "password" in line and NETRC_CONTEXT.search(before + line):
        for match in NETRC_PASSWORD.finditer(line):
            if secret_value(match.group("value"), MIN_PASSWORD):
                yield "password", match.group("value")


# Where a value read by a keyword detector ends: a query string's next parameter
# (``X&user=ana``), an escaped line break of a text quoted in a text (``X\\n``).
_VALUE_END = re.compile(r"&[A-Za-z_][A-Za-z0-9_.\-]*=|\\[nrt]")


def trimmed(value: str) -> str:
    """A keyword detector's value without what follows it (``X&user=ana``: ``X``), nor the
    punctuation that ends a statement or an argument (``self.api_key,``)."""
    cut = _VALUE_END.search(value)
    return (value[: cut.start()] if cut else value).rstrip(";,")


def _kind(name: str) -> str:
    lowered = name.lower()
    return "password" if any(stem in lowered for stem in ("pass", "pwd")) else "secret-assignment"

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
runs only where one is: a megabyte without any costs a few scans for a few bytes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

# Provider keys: (kind, the literal each starts with, its whole pattern). The kinds are
# Kingfisher's, so that a key both find is named once.
_KEY_CHARACTERS = rb"[A-Za-z0-9_\-]"
PROVIDER_KEYS: tuple[tuple[str, bytes, re.Pattern[bytes]], ...] = tuple(
    (kind, literal, re.compile(pattern))
    for kind, literal, pattern in (
        ("anthropic-admin-api-key", b"sk-ant-admin01-", rb"sk-ant-admin01-[A-Za-z0-9_\-]{80,}"),
        ("anthropic-api-key", b"sk-ant-api03-", rb"sk-ant-api03-[A-Za-z0-9_\-]{80,}"),
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
# ``NAME=value`` as a shell writes it (no space around ``=``): the value ends where the
# shell's word does, or at ``&`` (a query string's next parameter).
SHELL_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_])(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)="
    r"(?:\"(?P<double>[^\"\n]*)\"|'(?P<single>[^'\n]*)'|(?P<bare>[^\s'\"&;|<>`()=][^\s'\"&;|<>`()]*))"
)
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


def provider_keys(data: bytes) -> Iterator[tuple[str, str]]:
    """(kind, key) of the provider keys in UTF-8 ``data``, however they are followed."""
    for kind, literal, pattern in PROVIDER_KEYS:
        at = data.find(literal)
        while at != -1:
            start = at - 1 if literal.startswith(b"k_") else at
            if start >= 0 and not (start > 0 and _WORD_BYTE.match(data, start - 1)):
                match = pattern.match(data, start)
                if match is not None:
                    key = match.group()
                    body = key[len(literal) :]
                    if entropy(body) >= MIN_KEY_ENTROPY:
                        yield kind, key.decode("ascii")
                    at = data.find(literal, match.end())
                    continue
            at = data.find(literal, at + 1)


# A private key's first line, and what may follow it up to its last: base64 lines and the
# header fields of an encrypted PEM (``Proc-Type: 4,ENCRYPTED``).
PEM_BEGIN = b"-----BEGIN "
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


def assigned(window: str, before: str = "") -> Iterator[tuple[str, str]]:
    """(kind, value) of the secrets that a line (a window of one) assigns in the forms of a
    shell or a config file that the keyword detector misses; ``before`` is what precedes the
    window (a .netrc names its machine on the lines before a password)."""
    for match in SHELL_ASSIGNMENT.finditer(window):
        name = match.group("name").lstrip("-")
        if not SECRET_NAME.search(name):
            continue
        value = match.group("double") or match.group("single") or match.group("bare") or ""
        value = trimmed(value)
        if secret_value(value):
            yield _kind(name), value
    for pattern, kind in ((MYSQL_PASSWORD, "password"), (AWS_CONFIGURE, "aws-secret")):
        for match in pattern.finditer(window):
            value = match.group("value")
            if secret_value(value, MIN_PASSWORD if kind == "password" else MIN_VALUE):
                yield kind, value
    if NETRC_CONTEXT.search(before + window):
        for match in NETRC_PASSWORD.finditer(window):
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

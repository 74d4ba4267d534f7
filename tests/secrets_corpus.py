"""A labelled corpus for redaction (issue 39): real-shaped secrets (made up, from a fixed seed,
in their providers' formats; none was ever valid) in every context a session holds them, and
ordinary code full of near-misses that must come out unchanged.

``SECRETS``: each a ``Case`` whose ``needles`` must never leave the machine, not even an
8-character piece of one (``leaks``). ``ORDINARY``: texts with no secret at all (variable
references, hashes, UUIDs, digests, the providers' own example keys, placeholders, versions),
which redaction must leave as they are. The tests (tests/test_secrets_corpus.py) and the
benchmark of every surface (benchmarks/bench_redaction.py) read both.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from dataclasses import dataclass
from pathlib import Path

_RANDOM = random.Random(39)
_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"
_BASE64 = _ALNUM + "+/"
_HEX = "0123456789abcdef"
# The shortest piece of a secret that counts as leaked.
WINDOW = 8


def _chars(alphabet: str, count: int) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(count))


def _password() -> str:
    return _chars(_ALNUM, 5) + _RANDOM.choice("!#%^*+") + _chars(_ALNUM, 8)


@dataclass(frozen=True)
class Case:
    """A text as it turns up in a session, what it is (``context``), and the parts of it
    that must never leave (none for an ordinary one)."""

    context: str
    text: str
    needles: tuple[str, ...] = ()


def windows(needles: tuple[str, ...] | list[str]) -> set[str]:
    """Every WINDOW-character piece of the needles."""
    return {
        needle[at : at + WINDOW] for needle in needles for at in range(len(needle) - WINDOW + 1)
    }


def leaks(case: Case, shown: set[str]) -> bool:
    """Whether any piece of the case's needles is among ``shown`` (text_windows of a
    surface)."""
    return not windows(case.needles).isdisjoint(shown)


def text_windows(text: str) -> set[str]:
    """Every WINDOW-character piece of a surface's text (what ``leaks`` looks in)."""
    return {text[at : at + WINDOW] for at in range(len(text) - WINDOW + 1)}


def private_key(label: str = "RSA PRIVATE KEY", lines: int = 49) -> tuple[str, tuple[str, ...]]:
    """A PEM block of ``lines`` base64 lines (a 4096-bit RSA key has 49), and its lines."""
    body = (*tuple(_chars(_BASE64, 64) for _ in range(lines - 1)), _chars(_BASE64, 24) + "==")
    return "\n".join((f"-----BEGIN {label}-----", *body, f"-----END {label}-----")), body


def _jwt() -> str:
    def part(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    header = '{"alg":"HS256","typ":"JWT"}'
    claims = f'{{"sub":"{_chars(_HEX, 12)}","iat":1767225600}}'
    return f"{part(header)}.{part(claims)}.{_chars(_URLSAFE, 43)}"


# Each provider's key: what follows it in the sentences below must not matter.
def _provider_keys() -> list[tuple[str, str]]:
    return [
        ("anthropic", f"sk-ant-api03-{_chars(_URLSAFE, 93)}AA"),
        ("anthropic-admin", f"sk-ant-admin01-{_chars(_URLSAFE, 93)}AA"),
        ("openai-project", f"sk-proj-{_chars(_URLSAFE, 74)}T3BlbkFJ{_chars(_URLSAFE, 74)}"),
        ("openai-legacy", f"sk-{_chars(_ALNUM, 48)}"),
        ("stripe-live", "sk_live_" + _chars(_ALNUM, 99)),
        ("stripe-restricted", "rk_live_" + _chars(_ALNUM, 24)),
        ("gcp", "AIza" + _chars(_URLSAFE, 35)),
        ("huggingface", "hf_" + _chars(string.ascii_letters, 34)),
        ("jwt", _jwt()),
    ]


FOLLOWERS = (".", ",", ")", "]", ">", " ", "")
# Sentences that hold a key, then a character after it.
_KEY_SENTENCES = (
    "Use my key {secret}{follow} thanks",
    "(the key was {secret}{follow} I think",
    "[{secret}{follow}",
    "<key>{secret}{follow}</key>",
)


def _secret_cases() -> list[Case]:
    cases = []
    for name, key in _provider_keys():
        for number, follow in enumerate(FOLLOWERS):
            sentence = _KEY_SENTENCES[number % len(_KEY_SENTENCES)]
            text = sentence.format(secret=key, follow=follow)
            cases.append(Case(f"key:{name}:{follow or 'end'}", text, (key,)))
    for template, context in (
        ("docker run -e DB_PASSWORD={p} -e POSTGRES_DB=app -p 5432:5432 postgres:16", "docker-e"),
        ("PGPASSWORD={p} psql -h db.internal -U app -c 'select 1'", "pgpassword"),
        ("export API_TOKEN={p} && ./deploy.sh --prod", "export-and"),
        ("mysql -u root -p{p} -h 127.0.0.1 app < dump.sql", "mysql-p"),
        ("aws configure set aws_secret_access_key {k}", "aws-configure"),
        ("HOME=/root SHELL=/bin/bash DB_PASSWORD={p} REDIS_PASSWORD={q} LANG=C", "env-dump"),
        ("machine api.example.com login ana password {p}", "netrc-line"),
        ("machine git.internal\n  login deploy\n  password {p}\n", "netrc-lines"),
        ("curl 'https://api.acme.io/login?password={p}&user=ana'", "query-string"),
        ("DB_PASSWORD={p}", "env-line"),
        ('SECRET_KEY_BASE="{k}"', "quoted-assignment"),
        ("client_secret: {k}", "yaml"),
        ('{{"password": "{p}", "user": "ana"}}', "json"),
        ("psql postgresql://deploy:{p}@db.internal:5432/app", "url-password"),
        ("GITHUB_TOKEN={k} gh release create v1", "env-prefix"),
        ("--db-password={p} --verbose", "long-option"),
    ):
        p, q, k = _password(), _password(), _chars(_BASE64, 40)
        text = template.format(p=p, q=q, k=k)
        needles = tuple(value for value in (p, q, k) if value in text)
        cases.append(Case(f"form:{context}", text, needles))
    pem, body = private_key()
    cases.append(Case("private-key:cat", f"$ cat ~/.ssh/id_rsa\n{pem}\n", body))
    listing = "".join(
        f"-rw-r--r-- 1 ana ana {n * 37:>6} Jan  5 09:12 file{n}.txt\n" for n in range(25)
    )
    pem, body = private_key("OPENSSH PRIVATE KEY", 25)
    cases.append(Case("private-key:after-ls", listing + pem + "\n", body))
    return cases


def _ordinary_cases() -> list[Case]:
    digest = hashlib.sha256(b"corpus").hexdigest()
    texts = {
        "env-reference": "client_secret: env.AUTH0_CLIENT_SECRET\ndomain: ${env.AUTH0_DOMAIN}",
        "template-reference": "url: https://${env.AUTH0_DOMAIN}/oauth/token",
        "process-env": "const apiKey = process.env.OPENAI_API_KEY;",
        "shell-reference": 'export DB_PASSWORD="$DB_PASSWORD_FROM_VAULT"',
        "braced-reference": "PGPASSWORD=${PGPASSWORD_PROD} psql -h db",
        "os-environ": 'secret_key = os.environ["DJANGO_SECRET_KEY"]',
        "getenv": "token = os.getenv('GITHUB_TOKEN')",
        "settings": "password = settings.DATABASE_PASSWORD",
        "github-actions": "token: ${{ secrets.NPM_TOKEN }}",
        "import-meta": "const key = import.meta.env.VITE_STRIPE_KEY",
        "sha256": f"sha256:{digest}",
        "git-sha": f"commit {hashlib.sha1(b'c').hexdigest()} (HEAD -> main)",
        "uuid": f"session {uuid.UUID(int=_RANDOM.getrandbits(128), version=4)} started",
        "docker-digest": f"image: postgres@sha256:{digest}",
        "npm-integrity": "integrity sha512-"
        + base64.b64encode(hashlib.sha512(b"x").digest()).decode(),
        "aws-example": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws-example-id": "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "placeholder-openai": "OPENAI_API_KEY=sk-proj-" + "x" * 48,
        "placeholder-anthropic": "ANTHROPIC_API_KEY=sk-ant-api03-...",
        "placeholder-angle": "API_KEY=<your-api-key>",
        "placeholder-word": "DB_PASSWORD=changeme",
        "version": "tokenizers==0.21.1\ntransformers>=4.51.0",
        "counts": "max_tokens=4096 token_count=12345 input_tokens: 8192",
        "password-hash-name": "password_hash = bcrypt.hashpw(password, salt)",
        "sklearn": "pip install scikit-learn  # sk-learn",
        "task-id": "task-7f3a9c2e1b4d5f6a8c9e0b1d2f3a4c5e6b7d8f9a0c1e2b3d4f5a6c7e8",
        "css": ".sk-panel > .key-value, .token-list { display: flex; }",
        "function-call": "api_key = load_api_key(config_path)",
        "attribute": "headers = {'Authorization': f'Bearer {self.api_key}'}",
        "go-struct": 'Password string `json:"password"`',
        "rust": 'let token = std::env::var("GITHUB_TOKEN")?;',
        "ts-type": "type Credentials = { apiKey: string; secret?: string }",
        "base64-image": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAA"
        "DUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "hex-color-list": "#1f2937 #374151 #4b5563 #6b7280 #9ca3af #d1d5db",
        "path": "/home/ana/.config/secrets/README.md and ~/.ssh/known_hosts",
        "sql": "SELECT password_reset_token FROM users WHERE id = $1",
        "yaml-ref": "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
        "jwt-doc": "A JWT looks like header.payload.signature (eyJ…)",
        "pem-header-only": "Paste the -----BEGIN PUBLIC KEY----- block here",
        "keyword-sentence": "The password is stored in the keychain, not in the repo.",
        "url-no-password": "git clone https://github.com/acme/app.git && cd app",
        "makefile": "test:\n\tpytest -q --token-file=$(TOKEN_FILE)",
        "python-dict": "DEFAULTS = {'max_tokens': 1024, 'temperature': 0.2}",
        "kwarg-reference": "client = OpenAI(api_key=api_key, base_url=base_url)",
        "js-reference": "auth: { user: process.env.SMTP_USER, pass: process.env.SMTP_PASS }",
    }
    return [Case(f"ordinary:{name}", text) for name, text in texts.items()]


SECRETS = _secret_cases()
ORDINARY = _ordinary_cases()


# -- the corpus as sessions, and what each surface shows of them -------------------------------

# Output before a case in a tool result: the index keeps 2,048 characters of a tool's output
# (index/model/facts.py), so a case longer than the rest is cut there, through its secret.
OUTPUT_BEFORE = 1_900


def session_id(number: int) -> str:
    return f"corpus-{number:03d}"


def planted_cases() -> list[Case]:
    """The secrets of tests/planted_secrets.py (issue 26's set, made apart from this corpus),
    as cases."""
    from planted_secrets import PLANTED

    return [Case(f"planted:{planted.kind}", planted.text, planted.needles) for planted in PLANTED]


def corpus_sessions(folder: Path, cases: list[Case] | None = None) -> dict[str, Case]:
    """One xcsh session per case (of SECRETS and ORDINARY unless given) in ``folder``: the
    case is its title's end, its first message (what the meta tier sends) and a tool's output after
    OUTPUT_BEFORE characters of other output and alone (both cut by the index at 2,048
    characters). The cases by session id."""
    from session_builder import header, message, write_session

    by_session = {}
    for number, case in enumerate(SECRETS + ORDINARY if cases is None else cases):
        sid = session_id(number)
        output = "".join(f"line {n:04d} of the build log\n" for n in range(80))[:OUTPUT_BEFORE]
        result = message("t1", "a1", "toolResult", output + case.text)
        result["message"] |= {"toolCallId": "c1", "toolName": "bash"}
        call = message("a1", "u1", "assistant", "running it")
        call["message"]["content"] = [
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": case.text}}
        ]
        # The case alone as a tool's output: a private key of 49 lines is cut at its 31st.
        alone = message("t2", "t1", "toolResult", case.text)
        alone["message"] |= {"toolCallId": "c1", "toolName": "bash"}
        records = [
            header(sid, title=f"case {number}: {case.text[:200]}"),
            message("u1", None, "user", case.text),
            call,
            result,
            alone,
        ]
        write_session(folder / f"2026-01-01T00-00-00-000Z_{sid}.jsonl", records)
        by_session[sid] = case
    return by_session


@dataclass
class Score:
    """Recall (secrets with no piece on a surface) and precision (ordinary cases with no
    ``[REDACTED:`` on it) of one surface."""

    kept_secrets: int = 0
    secrets: int = 0
    untouched: int = 0
    ordinary: int = 0
    leaked: list[str] | None = None
    flagged: list[str] | None = None

    @property
    def recall(self) -> float:
        return self.kept_secrets / self.secrets if self.secrets else 1.0

    @property
    def precision(self) -> float:
        return self.untouched / self.ordinary if self.ordinary else 1.0


def score(shown: dict[str, str], cases: dict[str, Case]) -> Score:
    """The Score of a surface that shows ``shown[session id]`` of each session (a session it
    does not show leaks nothing and flags nothing)."""
    result = Score(leaked=[], flagged=[])
    for sid, case in cases.items():
        text = shown.get(sid, "")
        if case.needles:
            result.secrets += 1
            if leaks(case, text_windows(text)):
                result.leaked.append(case.context)  # type: ignore[union-attr]
            else:
                result.kept_secrets += 1
        else:
            result.ordinary += 1
            if "[REDACTED:" in text:
                result.flagged.append(case.context)  # type: ignore[union-attr]
            else:
                result.untouched += 1
    return result


# The session a path names (its file's name ends with the session id).
def _sid_of(path: str) -> str:
    return path.rsplit("_", 1)[-1].removesuffix(".jsonl")


def pushed(url: str) -> dict[str, str]:
    """Every text the team server holds of each session (its row, its entries' text, JSON and
    search vector), by session id."""
    import psycopg

    shown: dict[str, list[str]] = {}
    with psycopg.connect(url) as connection:
        for path, *texts in connection.execute(
            "SELECT path, title, first_message, compaction_title FROM sessions"
        ):
            shown.setdefault(_sid_of(path), []).extend(text or "" for text in texts)
        for path, text, raw, search in connection.execute(
            "SELECT path, text, raw, search::text FROM entries"
        ):
            shown.setdefault(_sid_of(path), []).extend((text or "", raw or "", search or ""))
    return {sid: "\n".join(texts) for sid, texts in shown.items()}


def exported(folder: Path) -> dict[str, str]:
    """Every text of the Parquet export of each session, by session id."""
    import duckdb

    shown: dict[str, list[str]] = {}
    for table, columns in (
        ("sessions", "title, first_message, compaction_title"),
        ("entries", "text"),
    ):
        rows = duckdb.sql(
            f"SELECT path, concat_ws(chr(10), {columns}) FROM "
            f"read_parquet('{folder}/{table}/**/*.parquet', union_by_name = true)"
        ).fetchall()
        for path, text in rows:
            shown.setdefault(_sid_of(path), []).append(text or "")
    return {sid: "\n".join(texts) for sid, texts in shown.items()}

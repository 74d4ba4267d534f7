"""Secrets in sessions: the ``secrets`` verb (where they are, masked, to rotate them) and the
``--no-redact`` option of the verbs whose text leaves the machine (push, export parquet,
serve, mcp), which warns on stderr every time it is used."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import click

from xcsh_store.cli.app import (
    Settings,
    cli,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
    require_extra,
)
from xcsh_store.cli.complete import complete_session
from xcsh_store.cli.output.render import cut_path, home_relative, plural
from xcsh_store.cli.params import agent_option, since_option

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

NO_REDACT_WARNING = (
    "Warning: --no-redact: the secrets in session text (API keys, tokens, passwords, private"
    " keys) leave this machine as they are."
)

NO_REDACT_HELP = (
    "Send session text as it is, secrets included (by default they are replaced by"
    " [REDACTED:<kind>]); warns every time."
)


def no_redact_flag(help_text: str = NO_REDACT_HELP) -> Callable[[F], F]:
    """The ``--no-redact`` option, with a verb's own help when its default differs (serve
    redacts only what may leave the machine)."""
    return click.option("--no-redact", "no_redact", is_flag=True, help=help_text)


no_redact_option = no_redact_flag()


def redaction(verb: str, no_redact: bool) -> bool:
    """Whether ``verb`` redacts; ``--no-redact`` is said out loud on stderr."""
    if no_redact:
        echo_wrapped(NO_REDACT_WARNING, err=True)
    require_extra(verb, "secrets", "kingfisher_sdk", "detect_secrets", "ahocorasick_rs")
    return not no_redact


class _Loading(Generic[T]):
    """``make()`` run in a thread from now on; ``result()`` waits for it (and raises what it
    raised)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._made: list[T] = []
        self._failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(make,), daemon=True)
        self._thread.start()

    def _run(self, make: Callable[[], T]) -> None:
        try:
            self._made.append(make())
        except BaseException as error:  # raised again in result(), in the caller's thread
            self._failed.append(error)

    def result(self) -> T:
        self._thread.join()
        if self._failed:
            raise self._failed[0]
        return self._made[0]


@cli.command("secrets")
@click.argument("session", required=False, shell_complete=complete_session)
@agent_option
@since_option
@json_option
@pass_settings
def secrets_command(
    settings: Settings,
    session: str | None,
    agents: tuple[str, ...],
    since: str | None,
    as_json: bool,
) -> None:
    """List the secrets in sessions (API keys, tokens, passwords, private keys), each with its
    kind, session, entry, file and line, masked, so that you can rotate them.

    The session files and index.db keep them; push, export parquet, serve beyond loopback and
    mcp replace them by [REDACTED:<kind>] in what they send. SESSION (an id prefix or a path)
    looks at that session only.

    \b
    Examples:
      xcsh-store secrets
      xcsh-store secrets --agent claude --since 30d --json
    """
    require_extra("secrets", "secrets", "kingfisher_sdk", "detect_secrets", "ahocorasick_rs")
    from xcsh_store.cli.verbs.maintenance import progress_bar
    from xcsh_store.index import SessionFilter, SessionQuery
    from xcsh_store.secrets import SecretDetector, SessionSecret, session_secrets

    # The rules load (or, the first time on a machine, compile: seconds) while the index is
    # opened and the sessions listed; a terminal is told, not left blank.
    if sys.stderr.isatty():
        click.echo("Loading the secret rules (compiled once per machine)…", err=True)
    detector = _Loading(SecretDetector)
    found: list[SessionSecret] = []
    with open_index(settings) as index:
        if session:
            chosen = [index.find_session(session)]
        else:
            asked = SessionFilter(agents=agents, since=since)
            chosen = list(index.sessions(SessionQuery(filter=asked)))
        with progress_bar(settings, "Looking for secrets") as report:
            for done, one in enumerate(chosen, start=1):
                found += session_secrets(index, [one], detector.result())
                if report is not None:
                    report(done, len(chosen), one.path)
        ids = index.unique_id_prefixes(secret.session_id for secret in found)
    if as_json:
        emit_json(
            [
                {
                    "kind": secret.kind,
                    "session": secret.session_id,
                    "session_id": secret.session_id,
                    "agent": secret.agent,
                    "entry_id": secret.entry_id,
                    "path": secret.path,
                    "line": secret.line,
                    "preview": secret.preview,
                }
                for secret in found
            ]
        )
        return
    if not found:
        echo_wrapped(f"No secrets found in {plural(len(chosen), 'session')}.")
        return
    print_table(
        (
            (
                secret.kind,
                ids[secret.session_id],
                secret.entry_id or "",
                f"{home_relative(secret.path)}:{secret.line}",
                secret.preview,
            )
            for secret in found
        ),
        headers=("kind", "session", "entry", "file:line", "secret"),
        flexible=(3, 4),
        cuts={3: cut_path},
    )
    sessions = len({secret.path for secret in found})
    echo_wrapped(
        f"{plural(len(found), 'secret')} in {plural(sessions, 'session')}: rotate them. push,"
        " export, serve beyond loopback and mcp send them as [REDACTED:<kind>]."
    )

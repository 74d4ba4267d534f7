"""Sharing and continuing a session: ``resume`` (the agent's own command to continue it, or
run it there) and ``export ID`` (the session as Markdown or JSON); ``export`` is the group
that ``export parquet`` (team) belongs to as well."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import click
import orjson

from xcsh_store.cli.app import (
    Settings,
    SuggestingGroup,
    cli,
    echo,
    echo_wrapped,
    emit_json,
    json_bytes,
    json_option,
    open_index,
    pass_settings,
    require_extra,
)
from xcsh_store.cli.complete import complete_session
from xcsh_store.cli.output.render import home_relative
from xcsh_store.errors import XcshStoreError

if TYPE_CHECKING:
    from xcsh_store.index.read.transcript import Transcript

# The passphrase of `export --encrypt` when no terminal can ask for it.
PASSPHRASE_ENV = "XCSH_STORE_PASSPHRASE"
MIN_PASSPHRASE = 8


class ExportGroup(SuggestingGroup):
    """``export`` with a session id exports that session (``export session ID``); a known
    sub-verb (``parquet``) is itself."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            args = ["session", *args]
        return super().resolve_command(ctx, args)


@cli.group("export", cls=ExportGroup)
def export_group() -> None:
    """Export a session to share it (export ID), or the index for other tools (export parquet).

    \b
    Examples:
      xcsh-store export 0195f3c2 > session.md
      xcsh-store export 0195f3c2 --format json -o session.json
      xcsh-store export parquet ~/xcsh-parquet
    """


@export_group.command("session")
@click.argument("session", shell_complete=complete_session)
@click.option(
    "--format",
    "form",
    type=click.Choice(["md", "html", "json"]),
    default="md",
    show_default=True,
    help="Markdown (tool output folded in <details>), one self-contained HTML page, or JSON.",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="Write to this file, not stdout."
)
@click.option(
    "--encrypt",
    is_flag=True,
    help=f"HTML only: encrypt the page with a passphrase (asked for, or ${PASSPHRASE_ENV});"
    " the browser asks for it to open the page.",
)
@click.option(
    "--no-redact",
    "no_redact",
    is_flag=True,
    help="Keep secrets as they are (by default they are replaced by [REDACTED:<kind>]).",
)
@pass_settings
def export_session_command(
    settings: Settings,
    session: str,
    form: str,
    output: str | None,
    encrypt: bool,
    no_redact: bool,
) -> None:
    """Write a session's active branch as a document to share: what was said, each tool call
    as what it did (a command, a diff of an edit, the file a read read), output folded.

    Secrets (API keys, tokens, passwords, private keys) are replaced by [REDACTED:<kind>]
    unless --no-redact. SESSION is an id prefix, a file-name prefix or a path.
    """
    from xcsh_store.index.read.transcript import markdown, transcript

    if encrypt and form != "html":
        raise click.UsageError("--encrypt is for --format html")
    if form == "html":
        require_extra("export --format html", "web", "markdown_it", "nh3", "pygments")
    passphrase = _passphrase() if encrypt else None
    with open_index(settings, team=True, fresh=True) as index:
        info = index.find_session(session)
        document = transcript(info, index.branch_entries(info, None))
    if no_redact:
        from xcsh_store.cli.verbs.redaction import NO_REDACT_WARNING

        echo_wrapped(NO_REDACT_WARNING, err=True)
    else:
        _redact(document)
    if form == "json":
        payload = json_bytes(document.to_json(), orjson.OPT_INDENT_2) + b"\n"
    elif form == "html":
        from xcsh_store.web.export_page import page, sealed_page

        html = page(document) if passphrase is None else sealed_page(document, passphrase)
        payload = html.encode()
    else:
        payload = markdown(document).encode()
    if output is None:
        sys.stdout.buffer.write(payload)
        sys.stdout.flush()
        return
    with open(output, "wb") as stream:
        stream.write(payload)
    echo_wrapped(f"Exported {info.agent} session {info.session_id} → {home_relative(output)}")


def _passphrase() -> str:
    given = os.environ.get(PASSPHRASE_ENV)
    if given:
        return given
    if not sys.stdin.isatty():
        raise click.UsageError(f"--encrypt needs a passphrase: set ${PASSPHRASE_ENV}")
    chosen: str = click.prompt("Passphrase", hide_input=True, confirmation_prompt=True, err=True)
    if len(chosen) < MIN_PASSPHRASE:
        raise click.UsageError(f"a passphrase of {MIN_PASSPHRASE} characters at least, please")
    return chosen


def _redact(document: Transcript) -> None:
    require_extra("export", "secrets", "kingfisher_sdk", "detect_secrets")
    from xcsh_store.secrets.redact import Redactor

    redactor = Redactor()
    strings = document.strings()
    document.replace_strings(
        [new or old for new, old in zip(redactor.texts(strings), strings, strict=True)]
    )
    document.session = redactor.value(document.session)


@cli.command("resume")
@click.argument("session", shell_complete=complete_session)
@click.option("--run", is_flag=True, help="Run the command in the session's folder.")
@json_option
@pass_settings
def resume_command(settings: Settings, session: str, run: bool, as_json: bool) -> None:
    """Print the agent's own command that continues a session in its folder (claude
    --resume, codex resume, gemini --resume, …), or run it there with --run.

    A session whose file its agent deleted is kept by the store's archive: restore writes it
    back first. SESSION is an id prefix, a file-name prefix or a path.

    \b
    Examples:
      xcsh-store resume 0195f3c2
      xcsh-store resume 0195f3c2 --run
    """
    from xcsh_store.agents.registry import resume_command as command_of

    with open_index(settings, team=True, fresh=True) as index:
        info = index.find_session(session)
    command = command_of(info.agent, info.session_id, info.cwd or None, info.path)
    gone = info.source_gone_at is not None
    if as_json:
        emit_json(
            {
                "session_id": info.session_id,
                "agent": info.agent,
                "cwd": info.cwd or None,
                "argv": list(command.argv) if command else None,
                "command": command.shell() if command else None,
                "source": "archived" if gone else "file",
                "restore": f"xcsh-store restore {info.session_id}" if gone else None,
            }
        )
        return
    if command is None:
        raise XcshStoreError(f"{info.agent} has no command that resumes a session")
    if gone:
        restore = f"xcsh-store restore {info.session_id}"
        if run:
            raise XcshStoreError(
                f"the session's file is gone (its agent deleted it); {restore} writes it back"
            )
        echo_wrapped(f"(its file is gone: {restore} writes it back first)", err=True)
    if not run:
        echo(command.shell())
        return
    _run(command.argv, command.cwd)


def _run(argv: tuple[str, ...], cwd: str | None) -> None:
    if shutil.which(argv[0]) is None:
        raise XcshStoreError(f"{argv[0]} is not installed here (not found on PATH)")
    if cwd is not None and not os.path.isdir(cwd):
        raise XcshStoreError(f"the session's folder {home_relative(cwd)} is not there")
    sys.exit(subprocess.run(argv, cwd=cwd).returncode)

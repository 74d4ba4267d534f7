"""Verbs that read sessions: ``show``, ``search``, ``cat`` and ``resume`` (``ls`` is in
listing.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import click

from xcsh_store.artifacts.pages import retold_paging_hint
from xcsh_store.artifacts.urls import read_internal_url, resolve_internal_url
from xcsh_store.cli.app import (
    Settings,
    cli,
    echo,
    echo_text,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
    team_only,
)
from xcsh_store.cli.complete import complete_model, complete_session
from xcsh_store.cli.output.calls import message_lines
from xcsh_store.cli.output.render import (
    MARK_CLOSE,
    MARK_OPEN,
    cut,
    cut_path,
    display_width,
    fit_line,
    home_relative,
    human_count,
    local_time,
    money,
    one_line,
    plural,
    short_time,
    show_marks,
    terminal_width,
    wrap,
)
from xcsh_store.cli.output.safe import Shown, visible
from xcsh_store.cli.output.shapes import (
    ARCHIVED_MARK,
    context_json,
    hit_json,
    session_cost,
    session_json,
    skipped_json,
    skipped_note,
)
from xcsh_store.cli.params import count_type, filter_options
from xcsh_store.cli.verbs.listing import known_filters, where
from xcsh_store.errors import (
    NoArtifactsError,
    OutputNotFoundError,
    SearchQueryError,
    XcshStoreError,
)
from xcsh_store.format.context import SessionContext
from xcsh_store.format.transcript import message_of
from xcsh_store.index import (
    SEARCH_ROLES,
    EntryUsage,
    ReadSession,
    SearchQuery,
    SessionFilter,
    SessionIndex,
    SessionOutline,
    SkippedLines,
    entry_summary,
    entry_text,
    message_summary,
    search_role,
    unique_prefixes,
    usage_by_response,
)
from xcsh_store.paths import artifacts_dir_for, get_index_db_path

# --------------------------------------------------------------------------------------------
# show


@cli.command("show")
@click.argument("session", shell_complete=complete_session)
@click.argument("entry", required=False)
@click.option("--tree", is_flag=True, help="Draw every branch of the session.")
@click.option(
    "--context", "context_view", is_flag=True, help="Print the model context of the leaf."
)
@click.option(
    "--leaf",
    metavar="ID",
    help="Entry id (or a unique prefix of one) to use as the leaf (default: the last).",
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every entry of the branch, the agent's own records (Codex's session_meta,"
    " turn_context, event_msg, encrypted reasoning) included.",
)
@click.option("--messages", is_flag=True, help="Only what the user and the assistant said.")
@json_option
@pass_settings
def show_command(
    settings: Settings,
    session: str,
    entry: str | None,
    tree: bool,
    context_view: bool,
    leaf: str | None,
    every: bool,
    messages: bool,
    as_json: bool,
) -> None:
    """Show a session: its header and the active branch, or --tree, or --context; with ENTRY
    (an id or a unique prefix of one), that entry whole.

    The branch leaves out the records an agent keeps for itself, with nothing to read
    (--all shows them). SESSION is an id prefix, a file-name prefix or a path.

    \b
    Examples:
      xcsh-store show 0195f3c2
      xcsh-store show 0195f3c2 --messages
      xcsh-store show 0195f3c2 7f3a9c21
      xcsh-store show 0195f3c2 --tree
      xcsh-store show 0195f3c2 --context --leaf 7f3a9c21
    """
    if tree and context_view:
        raise click.UsageError("--tree and --context are two views: give one of them")
    if entry is not None and (tree or context_view or leaf):
        raise click.UsageError("ENTRY shows one entry: --tree, --context and --leaf are views")
    if entry is not None:
        _show_entry(settings, session, entry, as_json)
        return
    view = "tree" if tree else "context" if context_view else None
    with open_index(settings, team=True, fresh=True) as index:
        info = index.find_session(session)
        leaf = index.find_entry_id(info, leaf) if leaf is not None else None
        skipped = index.skipped_lines(info).get(info.path)
        leaf_id = leaf or info.last_entry_id
        if view == "tree":
            outline = index.outline(info, leaf)
            payload: dict[str, Any] = tree_json(outline)
            # Every entry id is at hand: the shortest prefixes that tell them apart.
            short = unique_prefixes(outline.tree.entries)
        elif view == "context":
            context = index.context(info, leaf)
            payload = {"context": context_json(context)}
        else:
            entries = index.branch_entries(info, leaf)
            payload = {"entries": entries}
            usage = index.entry_usage(info) if not as_json else {}
        if view != "tree" and not as_json:
            shown_ids = [leaf_id, info.last_entry_id]
            shown_ids += [entry.get("id") for entry in payload.get("entries", [])]
            short = index.entry_id_prefixes(info, [i for i in shown_ids if isinstance(i, str)])
    if as_json:
        header = {"session": session_json(info), "view": view or "branch", "leaf_id": leaf_id}
        header["skipped_lines"] = skipped_json({info.path: skipped or SkippedLines()})[info.path]
        emit_json({**header, **payload})
        return
    print_header(settings, info, short)
    if skipped is not None:
        echo(settings.style("Skipped ", bold=True) + f" {skipped_note(skipped)}")
    echo()
    if view == "tree":
        for line in draw_tree(settings, outline, short):
            echo(line)
    elif view == "context":
        print_context(settings, context, short.get(leaf_id or "", leaf_id))
    else:
        rows = [(value, *entry_summary(value)) for value in entries]
        wanted = [every or _wanted(kind, text, messages) for _, kind, text in rows]
        shown = [row for row, keep in zip(rows, wanted, strict=True) if keep]
        responses = [(value.get("id"), kind == "assistant") for value, kind, _ in rows]
        used = usage_by_response(responses, wanted, usage)
        estimate = "" if info.cost_kind == "recorded" else "~"
        cells = [
            (
                short.get(value.get("id") or "", value.get("id")),
                short_time(value.get("timestamp")),
                kind,
                _usage_cell(used.get(value.get("id") or ""), estimate),
                text,
            )
            for value, kind, text in shown
        ]
        if used:
            print_table(
                cells,
                headers=("id", "time", "kind", "ctx→out cost", "text"),
                flexible=(4, 2),
                styles=lambda row, column, text: _kind_style(settings, column, text),
            )
        else:  # an agent that records no usage: no empty column
            print_table(
                (cell[:3] + cell[4:] for cell in cells),
                headers=("id", "time", "kind", "text"),
                flexible=(3, 2),
                styles=lambda row, column, text: _kind_style(settings, column, text),
            )
        if len(shown) < len(rows):
            left_out = "not messages" if messages else "the agent's own records"
            echo_wrapped(
                settings.style(f"({plural(len(rows) - len(shown), 'entry', 'entries')}"
                               f" left out: {left_out}; --all shows them)", dim=True)
            )  # fmt: skip


def _usage_cell(usage: EntryUsage | None, estimate: str = "") -> str:
    """``48.2k→1.3k ~$0.05``: the context a response read, what it wrote, and its cost
    (``~`` an estimate, of an agent that records none)."""
    if usage is None:
        return ""
    tokens = f"{human_count(usage.context_tokens)}→{human_count(usage.output_tokens)}"
    return tokens if usage.cost is None else f"{tokens} {estimate}{money(usage.cost)}"


def _wanted(kind: str, text: str, messages: bool) -> bool:
    """Whether the branch view shows an entry of ``kind`` saying ``text``: anything with
    something to read (an agent's own records say nothing: Codex's session_meta, an assistant
    turn of encrypted reasoning); with ``messages``, what the user or the assistant said."""
    if messages:
        return kind in ("user", "assistant") and bool(text) and not text.startswith("→ ")
    # An entry a plugin could not read says so, with nothing else to read.
    return bool(text) or kind == "unread"


def _show_entry(settings: Settings, session: str, entry: str, as_json: bool) -> None:
    with open_index(settings, team=True, fresh=True) as index:
        info = index.find_session(session)
        entry_id = index.find_entry_id(info, entry)
        (value,) = [
            value for value in index.branch_entries(info, entry_id) if value.get("id") == entry_id
        ]
    if as_json:
        emit_json({"session": session_json(info), "entry": value})
        return
    kind, _gist = entry_summary(value)
    label = settings.style
    echo_wrapped(
        label("Entry", bold=True) + f"    {entry_id} · {kind} · {value.get('timestamp') or '–'}"
    )
    echo()
    message = message_of(value)
    if message is None or not message.blocks:
        echo_text(entry_text(value))
        return
    # A terminal's lines wrap at its width (a diff's too), the rest two spaces in.
    width = terminal_width()
    for line in message_lines(message, settings.style):
        for part in wrap(line, width, "  "):
            echo(part)


def _kind_style(settings: Settings, column: int, text: str) -> str:
    if column == 0:
        return settings.style(text, fg="cyan")
    if column == 2:
        return settings.style(text, fg=_KIND_COLOURS.get(text.split(" ")[0]), bold=True)
    return text


def _cost_line(info: ReadSession) -> str:
    """The session's cost and how it is known (agents/prices/costs.py)."""
    text = session_cost(info, short=False)
    kind = info.cost_kind
    if kind == "estimated":
        return f"{text} (estimated at list price: xcsh-store prices)"
    if kind == "partial":
        return f"{text} ({plural(info.unpriced_entries, 'entry', 'entries')} of no known price)"
    if kind in ("unknown", "not_recorded", "free"):
        said = {"unknown": "no price known for its models", "not_recorded": "no usage recorded"}
        return f"{text} ({said.get(kind, 'free')})"
    # Recorded: as the agent wrote it (a $0 of a paid model says so, with its list price).
    return text if "recorded" in text else f"{text} (recorded by {info.agent})"


_KIND_COLOURS = {"user": "green", "assistant": "blue", "compaction": "magenta", "branch": "yellow"}


def print_header(settings: Settings, info: ReadSession, short: dict[str, str]) -> None:
    """The session's header lines; entry ids as their ``short`` prefixes."""
    label = settings.style
    last = info.last_entry_id
    title = f' · "{info.title}"' if info.title else ""
    lines: list[tuple[str, str]] = [
        ("Session", label(info.session_id, fg="cyan", bold=True) + title),
        ("File", home_relative(info.path)),
        ("Cwd", home_relative(info.cwd)),
        (
            "Created",
            f"{local_time(info.started) if info.started else 'unknown'}"
            f"    modified {local_time(info.modified)}",
        ),
        (
            "Entries",
            f"{plural(info.entry_count, 'entry', 'entries')} · "
            f"{plural(info.message_count, 'message')} · leaf {short.get(last or '', last) or '-'}"
            + (f" · format v{info.version} (run migrate)" if (info.version or 3) < 3 else ""),
        ),
        (
            # The cost and the total first: at 80 columns the line is cut at its end.
            "Usage",
            f"{session_cost(info)} · total {human_count(info.tokens)} · "
            f"in {human_count(info.input_tokens)} · out {human_count(info.output_tokens)} · "
            f"cache read {human_count(info.cache_read_tokens)} · "
            f"cache write {human_count(info.cache_write_tokens)}",
        ),
        # Its own line: the whole of it fits 80 columns (a recorded $0 with its list price).
        ("Cost", _cost_line(info)),
    ]
    if info.parent_session_path:
        lines.append(("Parent", home_relative(info.parent_session_path)))
    if info.source_gone_at:
        # (The id's first 8 characters: the line fits 80 columns; restore takes a prefix.)
        lines.insert(2, ("Source", label(f"{ARCHIVED_MARK} archived", fg="yellow") + (
            f" (file gone {local_time(info.source_gone_at)}):"
            f" xcsh-store restore {info.session_id[:8]}"
        )))  # fmt: skip
    width = terminal_width()
    for name, value in lines:
        if name in ("File", "Cwd") and width is not None:
            value = cut_path(value, width - 9)  # a path keeps its end, as everywhere
        echo(fit_line(label(f"{name:<8}", bold=True) + " " + value, width))


def print_context(settings: Settings, context: SessionContext, leaf_id: str | None) -> None:
    models = ", ".join(f"{role}: {model}" for role, model in context.models.items()) or "-"
    width = terminal_width()
    echo(
        fit_line(
            settings.style("Context", bold=True)
            + f" at leaf {leaf_id or '-'} · {plural(len(context.messages), 'message')}"
            + f" · thinking {context.thinking_level} · models {models} · mode {context.mode}",
            width,
        )
    )
    if context.injected_ttsr_rules:
        echo(fit_line(f"Rules   {', '.join(context.injected_ttsr_rules)}", width))
    echo()
    print_table(
        ((number, *message_summary(message)) for number, message in enumerate(context.messages, 1)),
        headers=("#", "role", "text"),
        flexible=2,
        right=(0,),
        styles=lambda row, column, text: _kind_style(settings, column, text),
    )


def tree_json(outline: SessionOutline) -> dict[str, object]:
    tree = outline.tree
    return {
        "active_path": outline.active_path,
        "roots": tree.roots,
        "leaves": tree.leaves,
        "branch_points": tree.branch_points,
        "labels": outline.labels,
        "nodes": [
            {
                "id": entry_id,
                "parent_id": row.parent_id,
                "type": row.type,
                "timestamp": row.timestamp,
                "summary": " ".join(entry_summary(outline.entries[entry_id])),
                "label": outline.labels.get(entry_id),
                "children": tree.children.get(entry_id, []),
            }
            for entry_id, row in tree.entries.items()
        ],
    }


def tree_lines(outline: SessionOutline) -> Iterator[tuple[str, str]]:
    """``(lead, entry id)`` per entry, depth first: a single child continues under its parent,
    siblings get ``├─``/``└─``. Iterative, so a 50,000-entry chain cannot overflow the stack."""
    children = outline.tree.children
    roots = outline.tree.roots
    several_roots = len(roots) > 1
    stack: list[tuple[str, str, str]] = []
    for position, root in reversed(list(enumerate(roots))):
        connector = ("└─ " if position == len(roots) - 1 else "├─ ") if several_roots else ""
        stack.append((root, "", connector))
    seen: set[str] = set()
    while stack:
        entry_id, base, connector = stack.pop()
        if entry_id in seen:
            continue
        seen.add(entry_id)
        yield base + connector, entry_id
        continuation = {"├─ ": "│  ", "└─ ": "   "}.get(connector, "")
        kids = [kid for kid in children.get(entry_id, []) if kid not in seen]
        if len(kids) == 1:
            stack.append((kids[0], base + continuation, ""))
            continue
        for position, kid in reversed(list(enumerate(kids))):
            stack.append((kid, base + continuation, "└─ " if position == len(kids) - 1 else "├─ "))


def draw_tree(settings: Settings, outline: SessionOutline, short: dict[str, str]) -> Iterator[str]:
    """The tree's lines, each entry by its ``short`` id."""
    style = settings.style
    active = set(outline.active_path)
    leaves = set(outline.tree.leaves)
    width = terminal_width()
    branch_points = set(outline.tree.branch_points)
    yield fit_line(
        style(
            f"{plural(len(outline.tree.entries), 'entry', 'entries')} · "
            f"{plural(len(leaves), 'leaf', 'leaves')} · "
            f"{plural(len(branch_points), 'branch point')} · "
            f"● active path to {short.get(outline.leaf_id or '', outline.leaf_id) or '-'}",
            dim=True,
        ),
        width,
    )
    for lead, entry_id in tree_lines(outline):
        # Escaped before they are measured and cut: an escape is wider than what it stands for.
        kind, text = (visible(part) for part in entry_summary(outline.entries[entry_id]))
        shown_id = visible(short.get(entry_id, entry_id))
        on_path = entry_id in active
        marker = "●" if on_path else "○"
        tags = []
        label = outline.labels.get(entry_id)
        if label:
            tags.append(style(f"[{label}]", fg="yellow", bold=True))
        if entry_id == outline.leaf_id:
            tags.append(style("◀ leaf", fg="green", bold=True))
        elif entry_id in leaves:
            tags.append(style("◁ leaf", dim=True))
        tag_text = (" " + Shown(" ").join(tags)) if tags else ""
        start = f"{lead}{marker} {shown_id} {kind}" + (": " if text else "")
        room = None if width is None else width - display_width(start + tag_text)
        body = cut(text, room if room is not None else 100)
        line = (
            style(lead, dim=True)
            + style(marker, fg="green" if on_path else None, dim=not on_path)
            + " "
            + style(shown_id, fg="cyan", dim=not on_path)
            + " "
            + style(kind + (":" if text else ""), bold=on_path, dim=not on_path)
            + (" " + style(body, dim=not on_path) if text else "")
            + tag_text
        )
        yield fit_line(line, width)


# --------------------------------------------------------------------------------------------
# search


def _search_role(value: str | None) -> str | None:
    try:
        return None if value is None else search_role(value)
    except SearchQueryError as error:
        raise click.BadParameter(str(error)) from None


@cli.command("search")
@click.argument("query", nargs=-1, required=True)
@filter_options("cwd", "project")
@click.option(
    "--role",
    callback=lambda _context, _parameter, value: _search_role(value),
    shell_complete=lambda _context, _parameter, typed: [
        role for role in SEARCH_ROLES if role.casefold().startswith(typed.casefold())
    ],
    help="Only messages of this role, in any letter case: user, assistant, toolResult, …",
)
@click.option(
    "--model",
    help="Only entries of this model: an id (claude-sonnet-4-5) or provider/id, as usage shows.",
    shell_complete=complete_model,
)
@filter_options("since", "until", "agents")
@click.option("--limit", "-n", type=count_type(1), default=20, show_default=True, help="Most hits.")
@filter_options("host")
@json_option
@pass_settings
def search_command(
    settings: Settings,
    query: tuple[str, ...],
    filters: SessionFilter,
    role: str | None,
    model: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Full-text search over every session: best match first, newest breaking ties.

    QUERY: plain words (all must match; the last also as a prefix), "exact phrases" and
    -excluded words. Anything else is taken literally, never as search syntax. Put -- before
    a query that starts with a minus.

    \b
    Examples:
      xcsh-store search flaky login test
      xcsh-store search '"connection refused"' --role toolResult --since 7d
      xcsh-store search -- -draft release notes
    """
    team_only(settings, filters.host is not None, "--host")
    with open_index(settings, team=True, fresh=True) as index:
        if settings.db is None and settings.sync:
            _index_pending_text(settings)
        try:
            question = SearchQuery(
                text=" ".join(query),
                filter=filters,
                role=role,
                model=model,
                limit=limit,
                highlight=(MARK_OPEN, MARK_CLOSE),
            )
            hits = index.hits(question)
        except SearchQueryError as error:
            raise click.UsageError(str(error)) from None
        if not hits:
            known_filters(index, model=model, project=filters.project)
        pending = index.text_pending() if settings.db is None else 0
        active = [index.on_active_branch(hit) for hit in hits]
        ids = index.unique_id_prefixes(hit.session_id for hit in hits)
        entries = [
            index.entry_id_prefixes(hit, [hit.entry_id]).get(hit.entry_id, hit.entry_id)
            if hit.entry_id is not None
            else None
            for hit in hits
        ]
    if pending:
        echo(
            f"Partial results: the search text of {pending:,} session file"
            f"{'s' if pending != 1 else ''} is still being indexed (`xcsh-store sync` finishes"
            " it).",
            err=True,
        )
    if as_json:
        emit_json([hit_json(hit, on_branch) for hit, on_branch in zip(hits, active, strict=True)])
        return
    if not hits:
        echo("No matches.")
        return
    print_table(
        (
            (
                ids[hit.session_id],
                entry,
                short_time(hit.timestamp),
                (hit.role or hit.type or "") + ("" if on_branch else " (side)"),
                one_line(hit.title) or where(hit.cwd),
                hit.snippet,
            )
            for hit, on_branch, entry in zip(hits, active, entries, strict=True)
        ),
        headers=("session", "entry", "when", "role", "title / cwd", "match"),
        flexible=(5, 4),
        optional=(4,),
        styles=lambda row, column, text: _hit_style(settings, column, text),
    )


def _index_pending_text(settings: Settings) -> None:
    """The search text a usage-first sync put off, indexed before searching (a sync under way
    is waited for); when it cannot be, the search says its results are partial."""
    if not os.path.exists(get_index_db_path(settings.agent_dir)):
        return
    with SessionIndex.open(settings.agent_dir, read_only=True) as index:
        if not index.text_pending():
            return
    try:
        with SessionIndex.open(settings.agent_dir) as index:
            index.index_pending_text()
    except (XcshStoreError, OSError) as error:
        echo(f"The search text could not be indexed now: {error}", err=True)


def _hit_style(settings: Settings, column: int, text: str) -> str:
    if column == 5:
        return show_marks(text, settings.color)
    if column in (0, 1):
        return settings.style(text, fg="cyan")
    return text


# --------------------------------------------------------------------------------------------
# cat


@cli.command("cat")
@click.argument("url")
@click.option(
    "--session",
    "-s",
    required=True,
    metavar="SESSION",
    help="Session whose artifacts to read: id prefix, file-name prefix or path.",
    shell_complete=complete_session,
)
@click.option("--offset", type=count_type(1), help="First line to print (1-based).")
@click.option("--limit", type=count_type(1), help="Number of lines to print.")
@click.option(
    "--raw", is_flag=True, help="Print the whole resource, without the reader's 50 KB page."
)
@json_option
@pass_settings
def cat_command(
    settings: Settings,
    url: str,
    session: str,
    offset: int | None,
    limit: int | None,
    raw: bool,
    as_json: bool,
) -> None:
    """Print an artifact:// (full tool output) or agent:// (subagent output) of a session.

    \b
    Examples:
      xcsh-store cat artifact://0 --session 0195f3c2
      xcsh-store cat agent://0-Explore --session 0195f3c2 --offset 20 --limit 40
      xcsh-store cat 'agent://0-Review/findings/0' --session 0195f3c2
    """
    session_path = _session_path(settings, session)
    artifacts = artifacts_dir_for(session_path)
    if raw and (offset is not None or limit is not None):
        raise click.UsageError("--raw prints everything; drop --offset/--limit")
    try:
        if raw:
            text = resolve_internal_url(url, artifacts).content
        else:
            text = read_internal_url(url, artifacts, offset, limit)
    except OutputNotFoundError as error:
        raise click.ClickException(no_output(url, error)) from None
    except NoArtifactsError:
        raise click.ClickException(
            f"{url}: the session has no artifacts folder; xcsh and pi keep tool and subagent"
            " outputs there, other agents' subagents are sessions of their own (ls)"
        ) from None
    if as_json:
        emit_json({"url": url, "session_path": session_path, "text": text})
        return
    echo_text(retold_paging_hint(text, "--offset"), newline=not text.endswith("\n"))


def no_output(url: str, error: OutputNotFoundError) -> str:
    """What ``cat agent://ID`` says of an output the session does not have: the outputs it
    has, and the one meant when ID is the number of one (``0`` for ``0-Explore``)."""
    named = f"{url}: the session has no subagent output {error.output_id!r}"
    if not error.available:
        return f"{named}; it has none (its subagents, if any, left no output files)."
    meant = [name for name in error.available if name.startswith(f"{error.output_id}-")]
    if len(meant) == 1:
        return f"{named}; did you mean agent://{meant[0]}?"
    return f"{named}; it has: {', '.join(sorted(error.available))}."


def _session_path(settings: Settings, session: str) -> str:
    """A session file given by path needs no index; anything else is looked up in it."""
    if session.endswith(".jsonl") and os.path.isfile(session):
        return os.path.abspath(session)
    with open_index(settings, fresh=True) as index:
        return index.find_session(session).path


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

"""The picker on the terminal (prompt_toolkit): a line to type in, the list of rows, the
preview of the selected one, and the keys. It draws on the terminal it is given (/dev/tty),
never on stdout, so ``$(xcsh-store pick)`` captures only the choice. Every index call runs in
the worker (worker.py); results come back to this thread through the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO, cast

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, UIContent, UIControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.processors import BeforeInput
from prompt_toolkit.output.color_depth import ColorDepth
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.styles import Style

from xcsh_store.cli.output.render import cut, pad
from xcsh_store.cli.output.safe import visible
from xcsh_store.cli.picker.lines import Line, fit, preview_lines, row_line
from xcsh_store.cli.picker.source import MODES, PROMPTS, SESSIONS, PickSource, Preview, Row
from xcsh_store.cli.picker.worker import Job, Worker

# A search starts once typing pauses this long; a preview once moving does.
SEARCH_DELAY = 0.04
PREVIEW_DELAY = 0.03
# How long a lone ESC waits for the rest of a key's sequence (an arrow) before it is Esc.
ESCAPE_WAIT = 0.05

STYLE = Style.from_dict(
    {
        "mode": "bold",
        "status": "italic",
        "error": "bold fg:ansired",
        "selected": "reverse",
        "match": "bold fg:ansiyellow",
        "bar": "reverse",
        "kind": "bold",
        "hit": "bold",
        "keys": "italic",
    }
)
KEYS = {
    SESSIONS: "Enter: print the session id · ↑↓: move · Tab: prompts · Esc: cancel",
    PROMPTS: "Enter: print the prompt · ↑↓: move · Tab: sessions · Esc: cancel",
}
NOUNS = {SESSIONS: ("session", "sessions"), PROMPTS: ("prompt", "prompts")}


class StatusNotes(logging.Handler):
    """Hands the message of each warning (or worse) logged to ``show``."""

    def __init__(self, show: Callable[[object], None]):
        super().__init__(logging.WARNING)
        self._show = show

    def emit(self, record: logging.LogRecord) -> None:
        self._show(record.getMessage())


class Drawn(UIControl):
    """A pane whose lines are drawn for its size each time (``draw(width, height)``)."""

    def __init__(self, draw: Callable[[int, int], list[Line]]):
        self._draw = draw

    def create_content(self, width: int, height: int) -> UIContent:
        # A line's (style, text) pieces are the two-item form of prompt_toolkit's tuples.
        lines = cast("list[StyleAndTextTuples]", self._draw(width, height))
        return UIContent(get_line=lambda number: lines[number], line_count=len(lines))


@dataclass(frozen=True)
class Chosen:
    """What the picker ended with: the row, and what to do with it (``print`` its value,
    ``resume`` its session in its agent, ``export`` its session)."""

    action: str
    row: Row


@dataclass
class Shown:
    """What the panes show: the rows of the last search, the selection, its preview."""

    mode: str
    rows: list[Row]
    selected: int = 0
    status: str = "searching…"
    failed: bool = False
    note: str = ""  # the last warning the library logged since the rows came
    preview: tuple[Row, Preview | Exception] | None = None


class Picker:
    """The application: ``run()`` gives the chosen row's value, None when cancelled."""

    def __init__(self, source: PickSource, mode: str, query: str, terminal: tuple[TextIO, TextIO],
                 colour: bool):  # fmt: skip
        self._source = source
        self._shown = Shown(mode, [])
        self._worker = Worker(("search", "preview"), source.interrupt)
        # The query typed so far; each change is searched once the picker runs (_started
        # searches the first one: no job may end before the event loop is there to take it).
        self._buffer = Buffer(multiline=False, document=Document(query))
        self._buffer.on_text_changed += lambda _buffer: self._search()
        self._list_height = 1
        self._searches = 0  # searches asked for: only the last one's rows are shown
        self._loop: asyncio.AbstractEventLoop | None = None
        reader, writer = terminal
        self.app: Application[Chosen | None] = Application(
            layout=self._layout(),
            key_bindings=self._keys(),
            style=STYLE,
            include_default_pygments_style=False,
            full_screen=True,
            color_depth=None if colour else ColorDepth.DEPTH_1_BIT,
            input=Vt100Input(reader),
            output=Vt100_Output.from_pty(writer),
        )
        self.app.ttimeoutlen = ESCAPE_WAIT

    def run(self) -> Chosen | None:
        # What the library logs (a missing blob in a previewed session) goes to the status
        # line: on stderr, the terminal the picker draws on, it would tear the screen apart.
        library = logging.getLogger("xcsh_store")
        notes = StatusNotes(self._in_ui(self._note))
        library.addHandler(notes)
        try:
            return self.app.run(pre_run=self._started, handle_sigint=False)
        finally:
            self._worker.close()
            library.removeHandler(notes)

    def _note(self, message: object) -> None:
        self._shown.note = visible(" ".join(str(message).split()))

    def _started(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._search(delay=0.0)

    # -- layout -----------------------------------------------------------------------------

    def _layout(self) -> Layout:
        typed = BufferControl(
            self._buffer, input_processors=[BeforeInput(lambda: [("class:mode", self._label())])]
        )
        return Layout(
            HSplit(
                [
                    Window(typed, height=1),
                    Window(Drawn(self._status_line), height=1),
                    Window(Drawn(self._list_lines), height=Dimension(min=1, weight=2)),
                    Window(Drawn(self._preview_lines), height=Dimension(min=1, weight=3)),
                    Window(Drawn(self._keys_line), height=1),
                ]
            ),
            focused_element=typed,
        )

    def _label(self) -> str:
        return f"{self._shown.mode}> "

    def _status_line(self, width: int, height: int) -> list[Line]:
        shown = self._shown
        pieces = [("class:error" if shown.failed else "class:status", shown.status)]
        if shown.note:
            pieces += [("class:status", " · "), ("class:error", shown.note)]
        return [fit(pieces, width)]

    def _keys_line(self, width: int, height: int) -> list[Line]:
        return [[("class:keys", cut(KEYS[self._shown.mode], width))]]

    def _list_lines(self, width: int, height: int) -> list[Line]:
        self._list_height = height
        shown = self._shown
        top = max(0, min(shown.selected - height // 2, len(shown.rows) - height))
        return [
            row_line(row, shown.mode, width, selected=number == shown.selected)
            for number, row in enumerate(shown.rows[top : top + height], top)
        ]

    def _preview_lines(self, width: int, height: int) -> list[Line]:
        preview = self._shown.preview
        row = self._selected()
        if row is None:
            return []
        if preview is None or preview[0] != row:
            return [[("class:bar", pad(cut(" …", width), width))]]
        if isinstance(preview[1], Exception):
            return [[("class:error", cut(visible(str(preview[1])), width))]]
        return preview_lines(preview[1], width, height)

    # -- keys -------------------------------------------------------------------------------

    def _keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("up")
        @keys.add("c-p")
        def _up(event: KeyPressEvent) -> None:
            self._move(-1)

        @keys.add("down")
        @keys.add("c-n")
        def _down(event: KeyPressEvent) -> None:
            self._move(1)

        @keys.add("pageup")
        def _page_up(event: KeyPressEvent) -> None:
            self._move(-self._list_height)

        @keys.add("pagedown")
        def _page_down(event: KeyPressEvent) -> None:
            self._move(self._list_height)

        @keys.add("tab")
        @keys.add("s-tab")
        @keys.add("c-r")
        def _switch(event: KeyPressEvent) -> None:
            self._shown = Shown(MODES[1 - MODES.index(self._shown.mode)], [])
            self._search(delay=0.0)

        @keys.add("enter")
        def _choose(event: KeyPressEvent) -> None:
            self._exit_with(event, "print")

        @keys.add("c-o")
        def _resume(event: KeyPressEvent) -> None:
            self._exit_with(event, "resume")

        @keys.add("c-x")
        def _export(event: KeyPressEvent) -> None:
            self._exit_with(event, "export")

        @keys.add("escape", eager=True)
        @keys.add("c-c")
        @keys.add("c-g")
        def _cancel(event: KeyPressEvent) -> None:
            event.app.exit(result=None)

        return keys

    def _exit_with(self, event: KeyPressEvent, action: str) -> None:
        """Leave with the selected row and what to do with it (resume and export: a session's
        row only; on a prompt that is in no session they do nothing)."""
        row = self._selected()
        if row is None or (action != "print" and row.path is None):
            return
        event.app.exit(result=Chosen(action, row))

    def _selected(self) -> Row | None:
        shown = self._shown
        return shown.rows[shown.selected] if shown.rows else None

    def _move(self, step: int) -> None:
        shown = self._shown
        if not shown.rows:
            return
        selected = max(0, min(len(shown.rows) - 1, shown.selected + step))
        if selected != shown.selected:
            shown.selected = selected
            self._preview(delay=PREVIEW_DELAY)

    # -- the worker's jobs ------------------------------------------------------------------

    def _search(self, delay: float = SEARCH_DELAY) -> None:
        mode, query = self._shown.mode, self._buffer.text
        self._searches += 1
        number = self._searches
        self._shown.status = "searching…"
        self._worker.submit(
            Job("search", lambda: self._source.rows(mode, query),
                self._in_ui(lambda rows: self._show_rows(number, mode, rows)),
                delay=delay, interruptible=True)
        )  # fmt: skip

    def _show_rows(self, number: int, mode: str, rows: object) -> None:
        if number != self._searches:
            # Rows that were on their way when a key asked for another search (the worker
            # drops the older ones it sees; these had left it).
            return
        if isinstance(rows, Exception):
            self._shown = Shown(mode, [], status=visible(str(rows)), failed=True)
            return
        assert isinstance(rows, list)
        singular, plural = NOUNS[mode]
        count = f"{len(rows)} {singular if len(rows) == 1 else plural}"
        before = self._shown.preview
        self._shown = Shown(mode, rows, status=count if rows else f"No {plural} found.")
        if rows and before is not None and before[0] == rows[0]:
            self._shown.preview = before  # the same hit as before the last key: no flicker
        elif rows:
            self._preview(delay=0.0)

    def _preview(self, delay: float) -> None:
        row = self._selected()
        if row is None:
            return
        self._worker.submit(
            Job("preview", lambda: self._source.preview(row),
                self._in_ui(lambda preview: self._show_preview(row, preview)), delay=delay)
        )  # fmt: skip

    def _show_preview(self, row: Row, preview: object) -> None:
        assert isinstance(preview, (Preview, Exception))
        self._shown.preview = (row, preview)

    def _in_ui(self, show: Callable[[object], None]) -> Callable[[object], None]:
        """``show``, called from the worker's thread, run in this one and redrawn."""

        def call(result: object) -> None:
            def run() -> None:
                show(result)
                self.app.invalidate()

            assert self._loop is not None
            with contextlib.suppress(RuntimeError):  # the loop is closed: the picker has ended
                self._loop.call_soon_threadsafe(run)

        return call

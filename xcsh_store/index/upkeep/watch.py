"""Noticing names that change in folders (Linux inotify): names that arrive in session folders
while a scan runs, so that the blob GC knows whether its sync saw every session file or missed
one that was moving; and every name that changes in the blob folder between two collections,
so that a collection after a new blob looks at that blob instead of listing the folder again."""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable, Iterator

from xcsh_store.files import walk_folders

# From <sys/inotify.h>.
_IN_MODIFY = 0x00000002
_IN_ATTRIB = 0x00000004
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_FROM = 0x00000040
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE = 0x00000200
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_UNMOUNT = 0x00002000
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000
_IN_ISDIR = 0x40000000
_ARRIVED = _IN_MOVED_TO | _IN_CREATE
# A watched folder itself went away, or events were lost: what arrived is unknown.
_LOST = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT | _IN_Q_OVERFLOW | _IN_IGNORED
_MASK = _ARRIVED | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
# Anything that changes what a name of a folder stands for, or its stat: made, removed or
# renamed, written to, its times or mode changed.
_NAME_CHANGED = (
    _ARRIVED | _IN_DELETE | _IN_MOVED_FROM | _IN_MODIFY | _IN_CLOSE_WRITE | _IN_ATTRIB
    | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
)  # fmt: skip
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
# libc's inotify_add_watch(descriptor, path, mask) -> watch descriptor, or -1.
_AddWatch = Callable[[int, bytes, int], int]


class _Inotify:
    """One inotify instance: its descriptor, the function that adds a watch, its events."""

    def __init__(self, descriptor: int, add_watch: _AddWatch) -> None:
        self.descriptor = descriptor
        self._add_watch = add_watch

    @classmethod
    def _create(cls) -> tuple[int, _AddWatch] | None:
        """A new descriptor and add_watch, or None where the system has no inotify (not
        Linux); an OSError where it has, but none can be made now (no instances left)."""
        try:
            # The C library is already loaded into the process: no search for it on disk.
            libc = ctypes.CDLL(None, use_errno=True)
            init, add_watch = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        descriptor = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if descriptor < 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))
        return descriptor, add_watch

    def close(self) -> None:
        os.close(self.descriptor)

    def _events(self) -> Iterator[tuple[int, int, str]]:
        while True:
            try:
                data = os.read(self.descriptor, 1 << 16)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                number, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                raw = data[offset : offset + length].rstrip(b"\0")
                offset += length
                yield number, mask, os.fsdecode(raw)


class FolderWatch(_Inotify):
    """An inotify instance watching every folder below some roots for names that arrive.

    A scan that lists a folder after its watch was added sees everything that was there before;
    anything arriving later is an event. So when no session file, folder or link arrived
    anywhere that the scan did not see, every file present at the end was seen: the view is
    consistent, however the files moved meanwhile.
    """

    def __init__(self, descriptor: int, add_watch: _AddWatch) -> None:
        super().__init__(descriptor, add_watch)
        self.folders: dict[int, str] = {}

    @classmethod
    def create(cls) -> FolderWatch | None:
        """A watch (to be closed), or None where the system has no inotify (not Linux); an
        OSError where it has, but none can be made now (no instances left)."""
        made = cls._create()
        return None if made is None else cls(*made)

    def watch_tree(self, roots: list[str]) -> set[int] | None:
        """Watch every folder below ``roots`` (following folder links once, as the scan does);
        the watch numbers of the folders found, or None when some folder could not be watched
        (a dangling link, whose target may be back while the scan runs; an unreadable folder;
        the system's watch limit). A folder first reached is known by this path from now on."""
        found: set[int] = set()
        complete = True

        def failed(_path: str, _error: OSError) -> None:
            nonlocal complete
            complete = False

        def watch(folder: str) -> bool:
            nonlocal complete
            # Watched before it is listed: what arrives after the listing is an event.
            number = self._add_watch(self.descriptor, os.fsencode(folder), _MASK)
            if number < 0:
                complete = False
                return False
            found.add(number)
            # One number per folder: the first path to it is the one the scan takes too.
            self.folders.setdefault(number, folder)
            return True

        for _folder, entries in walk_folders(roots, failed, watch):
            for entry in entries:
                try:
                    if (
                        entry.name[0] != "."
                        and entry.is_symlink()
                        and not os.path.exists(entry.path)
                    ):
                        complete = False
                except OSError:
                    complete = False
        return found if complete else None

    def forget_events(self) -> None:
        """Drop the events so far and the paths of the folders: a new round begins."""
        for _ in self._events():
            pass
        self.folders = {}

    def arrivals(self) -> list[tuple[str, bool]] | None:
        """(path, is a folder) of every name that arrived since :meth:`forget_events`; None
        when that cannot be known (events lost, a watched folder moved or removed)."""
        arrived: list[tuple[str, bool]] = []
        for number, mask, name in self._events():
            if mask & _LOST:
                return None
            if mask & _ARRIVED and not name.startswith("."):
                folder = self.folders.get(number)
                if folder is None:
                    return None
                arrived.append((os.path.join(folder, name), bool(mask & _IN_ISDIR)))
        return arrived


class FolderChanges(_Inotify):
    """An inotify watch on one folder that says which of its names changed since it last
    said: made, removed, renamed, written to, or their times or mode changed.

    Whatever a listing of the folder made after :meth:`start` missed is an event here: kept
    between two blob collections, it lets the second one look at the names that changed
    instead of listing 100,000 again. ``identity`` is the (device, inode) of the folder
    watched: a name that points elsewhere now (a symlink moved) is another folder.
    """

    def __init__(self, descriptor: int, add_watch: _AddWatch, identity: tuple[int, int]) -> None:
        super().__init__(descriptor, add_watch)
        self.identity = identity

    @classmethod
    def start(cls, folder: str) -> FolderChanges | None:
        """A watch on ``folder`` (to be closed), or None when none can be made (no inotify,
        no instances or watches left, no such folder)."""
        try:
            made = cls._create()
        except OSError:
            return None
        if made is None:
            return None
        descriptor, add_watch = made
        try:
            before = os.stat(folder)
            if add_watch(descriptor, os.fsencode(folder), _NAME_CHANGED) < 0:
                raise FileNotFoundError(folder)  # gone, or no watches left: no watch
            after = os.stat(folder)
        except OSError:
            os.close(descriptor)
            return None
        if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
            os.close(descriptor)  # the name moved on to another folder meanwhile
            return None
        return cls(descriptor, add_watch, (after.st_dev, after.st_ino))

    def changed_names(self) -> set[str] | None:
        """The names that changed since the last call (or :meth:`start`); None when that
        cannot be known (events lost, the folder itself removed, moved or unmounted): then
        nothing this watch says can be trusted again."""
        changed: set[str] = set()
        lost = False
        for _number, mask, name in self._events():
            if mask & _LOST:
                lost = True  # read on, so that the queue is empty
            elif name:
                changed.add(name)
        return None if lost else changed

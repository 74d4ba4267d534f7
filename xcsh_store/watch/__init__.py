"""The live index: ``index.db`` kept current from file-system events (``xcsh-store watch``,
``serve --watch``). This package front is what the CLI and the web app use.

* ``watcher``: the event loop (watchfiles, i.e. the Rust notify crate: inotify, FSEvents,
  kqueue), debounced, each batch of events applied as one incremental sync, and the changes it
  applied, one per file.
"""

from xcsh_store.watch.watcher import AppliedChange, IndexWatcher, WatchOptions

__all__ = ["AppliedChange", "IndexWatcher", "WatchOptions"]

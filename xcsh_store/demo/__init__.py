"""The sample agent dir of ``xcsh-store demo``, written through the library: the story as data
files (story/: the sessions' turns, the long outputs they show, the files outside any session)
and the code that plays it (story: the data and its steps; script: one session through the
session manager on a virtual clock; build: the whole sample, its history and its index;
folder: the marker of the demo's files and the refusal to touch any other).

This package's front imports nothing: the CLI's health check needs only the marker's name.
"""

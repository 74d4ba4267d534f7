"""``python -m xcsh_store``: the same command line as ``xcsh-store``."""

from xcsh_store.cli.launch import main

main()

"""The interactive search of ``xcsh-store pick`` (the verb is cli/pick.py): ``source`` asks
the index (the picker's only caller of it), ``worker`` runs those calls off the drawing
thread, ``lines`` draws rows and previews to a width, ``screen`` is the prompt_toolkit
application, ``shells`` holds the shells' key bindings."""

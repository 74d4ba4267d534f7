"""How the CLI prints for people and programs: the one sanitiser every human line passes
through (safe), text cut and wrapped to the terminal, numbers and times (render), tables fitted
to its width (table), the usage charts for the terminal and as an HTML page (chart), and the
``--json`` shapes of every record (shapes). No verb is defined here and nothing here imports
the group (app) or a verb.
"""

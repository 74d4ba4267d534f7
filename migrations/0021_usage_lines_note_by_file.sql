-- A usage_lines row inserted is no longer noted row by row (issue 40): the usage-first writer
-- (index/write/usage_first.py), the only one that inserts them, writes the file's
-- usage_sessions row in the same transaction, and usage_sessions_ai notes the file then. The
-- trigger's note per row cost the 327 MB Claude tree's first usage 0.15-0.2 CPU-s of its 0.34
-- for 35,740 inserts (benchmarks/README.md). Deletes and updates of usage_lines are still
-- noted row by row (usage_lines_ad, usage_lines_au: the keys a row held).
DROP TRIGGER usage_lines_ai;

-- No new columns: the rows themselves change (D27, D26). A session_info entry now names its
-- session (sessions.title, title_source 'user') and is searchable; a model_change written as
-- {provider, modelId} counts only with both non-empty; an assistant message that names no model
-- gets, in entries.provider/model, the default model in effect on its path, so usage by model
-- and search --model count it. Rows written before this migration lack all that: derive them
-- again on the next sync.
INSERT INTO meta (key, value) VALUES ('resync_required', '0005_pi_names_and_models')
ON CONFLICT (key) DO NOTHING;

-- How close each host is to its plan's limits and to its own spend limits (issue 37): the
-- rate-limit readings its agents wrote into their files (the local index's quota_observations,
-- migration 0015) and the budgets its config sets. Neither holds any text, so a push sends
-- them at every tier, ``usage`` included (team/upload.py).

-- A file's readings, kept like its entries: written with its rows, in their transaction, and
-- gone with its files row.
CREATE TABLE quota_observations (
    host text NOT NULL,
    path text NOT NULL,
    seq integer NOT NULL,
    slot text NOT NULL,
    observed_at text NOT NULL,
    used_percent double precision NOT NULL,
    window_minutes integer,
    resets_at text,
    limit_id text,
    plan_type text,
    PRIMARY KEY (host, path, seq, slot),
    FOREIGN KEY (host, path) REFERENCES files (host, path) ON DELETE CASCADE
);
-- The newest reading of each window of a host (TeamIndex.quota).
CREATE INDEX quota_observations_time ON quota_observations (host, observed_at);

-- A host's budgets, replaced whole by a push when they changed (hosts.budgets_state). A
-- project budget's name is a folder: labelled as the host's paths are when it redacts them.
CREATE TABLE budgets (
    host text NOT NULL REFERENCES hosts (host) ON DELETE CASCADE,
    period text NOT NULL,
    scope text NOT NULL,
    name text NOT NULL DEFAULT '',
    amount double precision NOT NULL,
    warn_percent double precision NOT NULL,
    PRIMARY KEY (host, period, scope, name)
);
ALTER TABLE hosts ADD COLUMN budgets_state text;

-- Row-level security as every host-keyed table has it (migration 0003).
DO $$
DECLARE
    name text;
    own_host constant text := 'host = ANY (ARRAY(SELECT m.host FROM public.host_roles AS m'
        ' JOIN pg_catalog.pg_roles AS r ON r.rolname = m.role'
        ' WHERE pg_catalog.pg_has_role(current_user, r.oid, ''MEMBER'')))';
BEGIN
    FOREACH name IN ARRAY ARRAY['quota_observations', 'budgets'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', name);
        EXECUTE format('CREATE POLICY read_every_host ON %I FOR SELECT USING (true)', name);
        EXECUTE format(
            'CREATE POLICY write_own_host ON %I FOR ALL USING (%s) WITH CHECK (%s)',
            name, own_host, own_host
        );
    END LOOP;
END
$$;

-- The roles that push (those that may write entries) may write the new tables too: a team that
-- gave its pushers their tables by name (docs/security.md) keeps pushing after the upgrade.
DO $$
DECLARE
    pusher text;
BEGIN
    FOR pusher IN
        SELECT DISTINCT grantee FROM information_schema.role_table_grants
        WHERE table_schema = 'public' AND table_name = 'entries' AND privilege_type = 'INSERT'
            AND grantee <> current_user
    LOOP
        EXECUTE format(
            'GRANT INSERT, UPDATE, DELETE ON quota_observations, budgets TO %I', pusher
        );
    END LOOP;
END
$$;

-- The Codex files pushed before: their watermarks no longer match, so the next push sends
-- them again, whole, with their readings.
UPDATE files SET state = 'before quota_observations' FROM sessions AS s
WHERE s.host = files.host AND s.path = files.path AND s.agent = 'codex';

-- Per-host roles (issue 26): a role the admin gives a host writes that host's rows and no
-- other's, enforced by PostgreSQL itself with row-level security, so a host's credentials
-- cannot push as another host nor delete its rows. Every role reads every host's rows.
-- The owner of the tables (the admin, who created them) and superusers bypass row-level
-- security, as PostgreSQL has it: a team where one role pushes every host works as before.
-- Setting up the roles: docs/security.md, "Per-host roles".

-- Which role writes which host: a host belongs to one role (a group role can hold several
-- hosts' login roles: a CI fleet). Only the admin writes it; pushers read it (the policies
-- below read it as the role that writes).
CREATE TABLE host_roles (
    host text PRIMARY KEY,
    role text NOT NULL
);

-- Each host-keyed table: every row readable; a row written (inserted, updated, deleted, or
-- locked FOR UPDATE) only when its host is one of the current role's, i.e. given to that role
-- or to a role it is a member of. The list is a sub-select that depends on no row, which
-- PostgreSQL runs once per statement. (COPY FROM refuses a table under row-level security:
-- a role subject to it pushes through temporary tables, team/upload.py.)
DO $$
DECLARE
    name text;
    own_host constant text := 'host = ANY (ARRAY(SELECT m.host FROM public.host_roles AS m'
        ' JOIN pg_catalog.pg_roles AS r ON r.rolname = m.role'
        ' WHERE pg_catalog.pg_has_role(current_user, r.oid, ''MEMBER'')))';
BEGIN
    FOREACH name IN ARRAY ARRAY[
        'hosts', 'files', 'sessions', 'entries', 'blob_refs', 'history', 'usage_rollup'
    ] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', name);
        EXECUTE format('CREATE POLICY read_every_host ON %I FOR SELECT USING (true)', name);
        EXECUTE format(
            'CREATE POLICY write_own_host ON %I FOR ALL USING (%s) WITH CHECK (%s)',
            name, own_host, own_host
        );
    END LOOP;
END
$$;

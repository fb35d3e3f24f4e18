-- queen.partitions_safe_time_v1() -> timestamptz
--
-- The safeTime of POST /api/v1/partitions/changed: a time T such that every write to a
-- partition that a read started after this call cannot see will carry last_write_at >= T.
-- The caller must run it as a statement of its own BEFORE the statement that reads the
-- partitions (queen.partitions_changed_v1), outside a transaction block, so that read
-- takes a later snapshot. The argument:
--
--   Every writer of log_partitions.last_write_at (the push's statements in
--   src/db/push/single_append.rs, queen.log_push_v3, queen.dead_letter_requeue_v2) sets it
--   to date_trunc('second', t) where t >= clock_timestamp() at the write, itself >= the
--   start of the writing transaction (pg_stat_activity.xact_start), whichever node's
--   broker runs it: all nodes share this one PostgreSQL server and its clock.
--   Take a write W of transaction X that the later read does not see. Then X had not
--   committed when the read's snapshot was taken, so X was either
--     (a) running when this function read pg_stat_activity: its xact_start is in the
--         minimum below, so last_write_at >= date_trunc('second', xact_start) >= T; or
--     (b) started after that read: its start, hence t, is later than this statement's
--         start, and T is at least one second before that; or
--     (c) started just before the read but not yet listed there (a backend takes its
--         start time a moment before publishing it): covered by the same second.
--   A transaction that committed before the read of pg_stat_activity is visible to the
--   later snapshot. Commit order does not matter: a slow transaction that commits after
--   faster ones is case (a) until it commits, and holds T at its own start meanwhile.
--   So no write missed by a page carries a last_write_at below T, and since = T (the
--   client's next call, inclusive) finds it. Truncating T to the second loses nothing:
--   last_write_at is truncated the same way.
--
-- Conservative on purpose: any open transaction of a client backend of this database
-- (another broker's push, an operator's idle session, a long report) holds T at its
-- start; partitions written since then are listed again, never skipped. Backends of other
-- roles are listed with their xact_start only to a superuser, a member of
-- pg_read_all_stats or the same role: every node must connect as one such role (the
-- README says so). Prepared (two-phase) transactions are not seen; the broker never
-- prepares one.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.partitions_safe_time_v1()
RETURNS timestamptz LANGUAGE sql VOLATILE AS $$
    SELECT date_trunc('second',
                      least(statement_timestamp() - interval '1 second',
                            min(a.xact_start)))
    FROM pg_stat_activity a
    WHERE a.datname = current_database()
      AND a.backend_type = 'client backend'
      AND a.pid <> pg_backend_pid()
      AND a.xact_start IS NOT NULL;
$$;

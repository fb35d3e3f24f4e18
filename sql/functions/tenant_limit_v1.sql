-- queen.tenant_limit_v1(p_name text) -> integer
--
-- The value of one tenant limit: the session setting p_name (queen.max_queues,
-- queen.max_partitions or queen.max_groups) as an integer; NULL when it is unset, empty or
-- 0, meaning no limit. The limit triggers (queues_limit and partitions_limit, both
-- queen.tenant_limit_guard_v1) and the group check (queen.tenant_group_admit_v1) read it.
--
-- How the tenant limits work (this is the one place that explains them). The limits are
-- the broker's settings QUEEN_TENANT_MAX_QUEUES, QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE and
-- QUEEN_TENANT_MAX_CONSUMER_GROUPS, handed to PostgreSQL as those session settings on
-- every pooled connection. The queue and partition checks are BEFORE INSERT triggers on
-- tables written through the coordinator on the Citus layout, so every path that creates
-- a queue or a partition is covered (the push functions, configure, the pop) without
-- touching those functions, and they cost nothing on the per-message paths: a row is
-- inserted once per queue or partition. The consumer-group check is
-- queen.tenant_group_admit_v1, called by each function that creates a cursor (the pop
-- drivers before a first contact, registration, seek): a cursor is inserted on its
-- worker on the layout, where a trigger has no session settings (it says more).
--
-- Each check takes a transaction-scoped advisory lock (per tenant for queues and groups,
-- per queue for partitions) before it counts, so concurrent creations are counted one
-- after the other and never overshoot: the second waits for the first's commit, then its
-- count (a new statement, a new snapshot) sees the first's row. A row that exists already
-- (an INSERT ... ON CONFLICT DO NOTHING of a known name) always passes. Over a limit: an
-- exception with SQLSTATE QLIMT and a message naming the setting; the caller's transaction
-- rolls back, so nothing is stored. The broker answers it 403.
--
-- Stable, reads no table: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.tenant_limit_v1(p_name text)
RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT nullif(nullif(current_setting(p_name, true), ''), '0')::integer;
$$;

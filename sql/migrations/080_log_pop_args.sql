-- 080_log_pop_args: what every pop entry point is asked, declared once.
--
-- The four pop entry points (queen.log_pop_wildcard_bin, log_pop_specific, log_pop_list and
-- log_pop_discover_wire) took the same nine arguments one by one, so each of their
-- signatures repeated the others'. Their _v2 versions take this row instead, beside what is
-- their own (the queue, the partition, the candidates, the namespace and task); it is the
-- SQL side of the broker's ClaimParams (src/db/pop/mod.rs). The _v1 versions stay for one
-- release, for nodes of the previous release during a rolling upgrade (README, "Rolling
-- upgrades").
--
-- Also left for one release, no longer called: queen.resources_namespaces_v1 and
-- queen.resources_tasks_v1 (the broker calls queen.resources_grouped_v1, their one body),
-- and queen.log_register_group_v1 (the broker calls queen.log_register_group_at_v1 on
-- the id queen.queue_ensure_v1 gives).
--
-- Also marks this release's edited function files (no signature change): the header
-- comments of the PL/pgSQL listings now point to docs/scale-out.md for why they are
-- PL/pgSQL; queen.log_pending_partitions_v1 and queen.partitions_changed_v1 no longer set
-- to NULL the columns of their one row without a partition (they are NULL already). No data; takes no lock beyond the type's creation; no notifications.
CREATE TYPE queen.log_pop_args AS (
    tenant         text,
    consumer_group text,
    -- The lease id; NULL with auto-ack.
    worker         text,
    -- The message budget of the whole pop.
    batch          integer,
    -- The most partitions one pop claims (wildcard, list and discover pops).
    partitions     integer,
    -- NULL: the queue's lease_time, else 60 s.
    lease_seconds  integer,
    auto_ack       boolean,
    -- 'new' or 'all', and a start time that wins over it, for a group's first contact.
    sub_mode       text,
    sub_from       timestamptz
);

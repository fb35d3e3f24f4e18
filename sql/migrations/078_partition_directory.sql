-- 078_partition_directory: the partitions' name-to-id directory, apart from their counters.
--
-- queen.log_partitions holds a partition's counters (last_offset, last_write_at), which
-- every push updates, beside its name. On Citus a table found by (queue_id, name) must be
-- a reference table (a unique key without the distribution column is refused), and a
-- reference table is written on every node: so every push wrote every node
-- (docs/scale-out.md). This table is the directory: one row per partition, written when
-- the partition is created (queen.log_partition_ensure_v1) and never by a push. The Citus
-- layout (src/db/schema/citus.rs) makes it the reference table and distributes
-- queen.log_partitions by id, co-located with the segments, so a push touches only its
-- partition's worker. On plain PostgreSQL both stay plain tables and queen.log_partitions
-- keeps its (queue_id, name) key: nothing on the hot path reads the directory there.
--
-- Rows are copied from queen.log_partitions. A partition a node of an older release
-- creates during a rolling upgrade has no directory row until queen.log_partition_ensure_v1
-- or the Citus layout meets it (both add it). No foreign key from queen.log_partitions to
-- it here, for the same reason (the layout adds one on Citus). Takes no lock on
-- queen.log_partitions beyond the copy's read; no notifications.
--
-- Also marks this release's edited function files beside 077's: log_push_v3 (a partition
-- is created through log_partition_ensure_v1), log_ack_v2 and configure_queue_v1 (the
-- directory), log_pop_options_v1 (PL/pgSQL: Citus refuses a parameterized SQL function
-- that reads distributed tables), timers_apply_v1 and locks_apply_v1 (their ops read once),
-- and for the Citus layout queue_delete_v1 and log_partitions_delete_segments_v1 (one
-- partition at a time), consumer_group_seek_v1, consumer_group_lags_v1 and
-- consumer_groups_v1 (PL/pgSQL, one statement per partition).

CREATE TABLE IF NOT EXISTS queen.log_partition_names (
    id       bigint NOT NULL PRIMARY KEY,
    queue_id bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name     text   NOT NULL,
    UNIQUE (queue_id, name)
);

INSERT INTO queen.log_partition_names (id, queue_id, name)
SELECT p.id, p.queue_id, p.name FROM queen.log_partitions p
ON CONFLICT DO NOTHING;

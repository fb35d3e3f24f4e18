-- queen.tenant_limit_guard_v1() RETURNS trigger, called FOR EACH ROW by the triggers
--   queues_limit (BEFORE INSERT ON queen.queues) and partitions_limit (BEFORE INSERT ON
--   queen.log_partition_names, the partitions' directory), each naming its session
--   setting as the trigger's argument,
--   which also tells the function which table NEW belongs to (on Citus the trigger fires
--   on a shard or placement, whose table name carries a shard id)
--
-- Enforces the tenant limits (queen.tenant_limit_v1 explains them) when a row that may be
-- new is inserted; the setting unset, the row passes:
--   queues_limit      QUEEN_TENANT_MAX_QUEUES (queen.max_queues): a tenant's queues.
--   partitions_limit  QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE (queen.max_partitions): a
--                     queue's named partitions. Its `Default` partition never counts and
--                     always passes, since configuring a queue creates it (configuring a
--                     queue whose named partitions are at the limit must still work) and a
--                     push naming no partition lands in it.
-- The consumer-group limit is no trigger any more: queen.tenant_group_admit_v1, called by
-- the functions that create cursors. Its trigger groups_limit (BEFORE INSERT ON
-- queen.log_consumers) fired on the Citus layout on the cursor's worker, where the
-- session settings are not set, so it did not hold there; this file drops it.
-- partitions_limit sits on the directory (one row per partition, written once where the
-- partition is created, by queen.log_partition_ensure_v1 and the first-push statement),
-- not on queen.log_partitions: on the Citus layout the directory is a reference table,
-- written through the coordinator, whose copy fires the trigger in the writing session
-- (the one that has the limit settings) and holds every partition of the queue to count;
-- a shard of queen.log_partitions fires on its worker, which has neither.
-- A row that is not new passes uncounted: a queue or partition that exists (an INSERT ...
-- ON CONFLICT DO NOTHING of a known name).
--
-- Locks: the transaction-scoped advisory lock 'queen.limit.queues/<tenant>' or
-- 'queen.limit.partitions/<queue id>' before it looks
-- whether the row is new and counts, in a later statement, so it sees the rows the lock's
-- previous holder committed. Over the limit queen.tenant_limit_check_v1 raises SQLSTATE
-- QLIMT; the insert and the caller's transaction roll back. No notifications.
CREATE OR REPLACE FUNCTION queen.tenant_limit_guard_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max    integer;
    v_lock   text;
    v_new    boolean;
    v_count  bigint;
BEGIN
    -- NEW's fields are named only in the branch of NEW's table: an expression that names a
    -- field the row lacks fails even where it need not be evaluated.
    v_max := queen.tenant_limit_v1(TG_ARGV[0]);
    IF v_max IS NULL THEN
        RETURN NEW;
    END IF;
    CASE TG_ARGV[0]
    WHEN 'queen.max_queues' THEN
        v_lock := 'queues/' || NEW.tenant;
    ELSE
        IF NEW.name = 'Default' THEN
            RETURN NEW;
        END IF;
        v_lock := 'partitions/' || NEW.queue_id;
    END CASE;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.' || v_lock, 0));
    CASE TG_ARGV[0]
    WHEN 'queen.max_queues' THEN
        v_new := NOT EXISTS (SELECT 1 FROM queen.queues q
                             WHERE q.tenant = NEW.tenant AND q.name = NEW.name);
        v_count := CASE WHEN v_new THEN
            (SELECT count(*) FROM queen.queues q WHERE q.tenant = NEW.tenant) END;
    ELSE
        v_new := NOT EXISTS (SELECT 1 FROM queen.log_partition_names n
                             WHERE n.queue_id = NEW.queue_id AND n.name = NEW.name);
        v_count := CASE WHEN v_new THEN
            (SELECT count(*) FROM queen.log_partition_names n
             WHERE n.queue_id = NEW.queue_id AND n.name <> 'Default') END;
    END CASE;
    IF v_new THEN
        PERFORM queen.tenant_limit_check_v1(v_max, v_count, CASE TG_ARGV[0]
            WHEN 'queen.max_queues' THEN 'queues (QUEEN_TENANT_MAX_QUEUES)'
            ELSE 'partitions per queue (QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE)' END);
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER queues_limit BEFORE INSERT ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.tenant_limit_guard_v1('queen.max_queues');
-- Moved to the directory (see above); a database of an earlier release has it here.
DROP TRIGGER IF EXISTS partitions_limit ON queen.log_partitions;
CREATE OR REPLACE TRIGGER partitions_limit BEFORE INSERT ON queen.log_partition_names
    FOR EACH ROW EXECUTE FUNCTION queen.tenant_limit_guard_v1('queen.max_partitions');
-- The consumer-group limit is queen.tenant_group_admit_v1's now (see above).
DROP TRIGGER IF EXISTS groups_limit ON queen.log_consumers;

-- queen.partitions_limit_v1() RETURNS trigger, called by trigger partitions_limit
--   (BEFORE INSERT ON queen.log_partitions, FOR EACH ROW)
--
-- Enforces QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE (the session setting queen.max_partitions)
-- when a partition row is inserted: a queue may have at most that many named partitions.
-- Its `Default` partition never counts and always passes, since configuring a queue
-- creates it (configuring a queue whose named partitions are at the limit must still work)
-- and a push naming no partition lands in it. A partition that exists already passes too.
--
-- Locks: the transaction-scoped advisory lock 'queen.limit.partitions/<queue id>' before it
-- counts. Over the limit queen.tenant_limit_check_v1 raises SQLSTATE QLIMT; the caller's
-- transaction rolls back. The rationale shared by the three limit triggers is in
-- queen.tenant_limit_v1. No notifications.
CREATE OR REPLACE FUNCTION queen.partitions_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max integer := queen.tenant_limit_v1('queen.max_partitions');
BEGIN
    -- Every queue may have its Default partition besides the limit: configure creates it
    -- (configuring a queue whose named partitions are at the limit must still work).
    IF v_max IS NULL OR NEW.name = 'Default' THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.partitions/' || NEW.queue_id, 0));
    IF NOT EXISTS (SELECT 1 FROM queen.log_partitions p
                   WHERE p.queue_id = NEW.queue_id AND p.name = NEW.name) THEN
        PERFORM queen.tenant_limit_check_v1(v_max,
            (SELECT count(*) FROM queen.log_partitions p
             WHERE p.queue_id = NEW.queue_id AND p.name <> 'Default'),
            'partitions per queue (QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE)');
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER partitions_limit BEFORE INSERT ON queen.log_partitions
    FOR EACH ROW EXECUTE FUNCTION queen.partitions_limit_v1();

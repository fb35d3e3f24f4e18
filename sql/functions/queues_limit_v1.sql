-- queen.queues_limit_v1() RETURNS trigger, called by trigger queues_limit
--   (BEFORE INSERT ON queen.queues, FOR EACH ROW)
--
-- Enforces QUEEN_TENANT_MAX_QUEUES (the session setting queen.max_queues) when a queue row
-- is inserted: a tenant may have at most that many queues. A queue that exists already (an
-- INSERT ... ON CONFLICT DO NOTHING of a known name) passes.
--
-- Locks: the transaction-scoped advisory lock 'queen.limit.queues/<tenant>' before it
-- counts. Over the limit queen.tenant_limit_check_v1 raises SQLSTATE QLIMT; the caller's
-- transaction rolls back.
-- See queen.tenant_limit_v1 for how the limits reach PostgreSQL and why they are triggers.
-- No notifications.
CREATE OR REPLACE FUNCTION queen.queues_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max integer := queen.tenant_limit_v1('queen.max_queues');
BEGIN
    IF v_max IS NULL THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.queues/' || NEW.tenant, 0));
    IF NOT EXISTS (SELECT 1 FROM queen.queues q
                   WHERE q.tenant = NEW.tenant AND q.name = NEW.name) THEN
        PERFORM queen.tenant_limit_check_v1(v_max,
            (SELECT count(*) FROM queen.queues q WHERE q.tenant = NEW.tenant),
            'queues (QUEEN_TENANT_MAX_QUEUES)');
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER queues_limit BEFORE INSERT ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.queues_limit_v1();

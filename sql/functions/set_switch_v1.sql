-- queen.set_switch_v1(p_key text, p_field text, p_on boolean) -> boolean
--
-- Stores one maintenance switch for every node: upserts the p_key row of
-- queen.system_state with the value {p_field: p_on} and updated_at = now(). Returns the
-- stored value. The one body of queen.set_maintenance_v1 ('maintenance', 'pop') and
-- queen.set_push_maintenance_v1 ('maintenance_push', 'push'); no other row is touched.
--
-- PL/pgSQL with the time in a variable: on the Citus layout system_state is a reference
-- table, whose upsert takes no function that is not IMMUTABLE, and the same upsert as a
-- LANGUAGE sql body crashed the coordinator (docs/scale-out.md).
--
-- Locks: the p_key row, briefly (an upsert). No notifications: nodes learn it by polling.
CREATE OR REPLACE FUNCTION queen.set_switch_v1(p_key text, p_field text, p_on boolean)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now timestamptz := now();
    v_on  boolean;
BEGIN
    INSERT INTO queen.system_state (key, value, updated_at)
    VALUES (p_key, jsonb_build_object(p_field, p_on), v_now)
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
    RETURNING (value->>p_field)::boolean INTO v_on;
    RETURN v_on;
END;
$$;

-- queen.set_switch_v1(p_key text, p_field text, p_on boolean) -> boolean
--
-- Stores one maintenance switch for every node: upserts the p_key row of
-- queen.system_state with the value {p_field: p_on} and updated_at = now(). Returns the
-- stored value. The one body of queen.set_maintenance_v1 ('maintenance', 'pop') and
-- queen.set_push_maintenance_v1 ('maintenance_push', 'push'); no other row is touched.
--
-- Locks: the p_key row, briefly (an upsert). No notifications: nodes learn it by polling.
CREATE OR REPLACE FUNCTION queen.set_switch_v1(p_key text, p_field text, p_on boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    INSERT INTO queen.system_state (key, value, updated_at)
    VALUES (p_key, jsonb_build_object(p_field, p_on), now())
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
    RETURNING (value->>p_field)::boolean;
$$;

-- queen.lock_slots_v1(p_tenant, p_name, p_now)
--   -> (slot, value, version, expires_at, updated_at) rows
--
-- The live permits of lock p_name of tenant p_tenant at p_now: the rows of queen.kv in
-- namespace 'queen-locks' keyed '<p_name>#<slot>' (slot 0 to 9999, written without leading
-- zeros) whose expires_at is after p_now, with the slot as a number. A range scan of the
-- primary key from '<p_name>#' to '<p_name>$'.
--
-- The one reading of a lock's holders that queen.locks_apply_v1 makes for get and for a
-- refused acquire or renew. PL/pgSQL, STABLE: Citus plans no parameterized LANGUAGE sql
-- body reading a distributed table (queen.kv is distributed by tenant on the layout;
-- docs/scale-out.md), so on the layout every lock op failed with it as LANGUAGE sql. On
-- PostgreSQL it is no longer inlined into the caller's statement: one function call more
-- per read. Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.lock_slots_v1(
    p_tenant text,
    p_name   text,
    p_now    timestamptz
) RETURNS TABLE (
    slot       integer,
    value      jsonb,
    version    bigint,
    expires_at timestamptz,
    updated_at timestamptz
) LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
        SELECT substr(k.key, length(p_name) + 2)::integer, k.value, k.version,
               k.expires_at, k.updated_at
        FROM queen.kv k
        WHERE k.tenant = p_tenant AND k.namespace = 'queen-locks'
          AND k.key >= p_name || '#' AND k.key < p_name || '$'
          AND COALESCE(k.expires_at, 'infinity') > p_now
          AND substr(k.key, length(p_name) + 2) ~ '^(0|[1-9][0-9]{0,3})$';
END;
$$;

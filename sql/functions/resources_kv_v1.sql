-- queen.resources_kv_v1(p_tenant) -> jsonb
--
-- The tenant's KV namespaces, for the console and operators: {namespaces: [{namespace,
-- keys, expiring, bytes, updatedAt}]} by namespace name, counting live keys only (a row
-- past its expires_at is invisible, as to every KV op): `expiring` of them have a TTL,
-- `bytes` is the JSON text of their values, `updatedAt` the newest write. The keys
-- themselves are read with POST /api/v1/kv getPrefix, which pages; the namespace
-- `queen-locks` holds the lock permits (sql/functions/locks_apply_v1.sql).
--
-- One scan of the tenant's rows (the primary key's tenant prefix). Read only: no locks.
-- No notifications.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
CREATE OR REPLACE FUNCTION queen.resources_kv_v1(p_tenant text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT jsonb_build_object('namespaces', COALESCE(jsonb_agg(jsonb_build_object(
               'namespace', n.namespace, 'keys', n.keys, 'expiring', n.expiring,
               'bytes', n.bytes,
               'updatedAt', to_char(n.updated_at AT TIME ZONE 'UTC',
                                    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             ORDER BY n.namespace), '[]'::jsonb))
      FROM (SELECT k.namespace, count(*) AS keys,
                   count(k.expires_at) AS expiring,
                   sum(octet_length(k.value::text)) AS bytes,
                   max(k.updated_at) AS updated_at
              FROM queen.kv k
             WHERE k.tenant = p_tenant
               AND (k.expires_at IS NULL OR k.expires_at > clock_timestamp())
             GROUP BY k.namespace) n
    );
END;
$$;

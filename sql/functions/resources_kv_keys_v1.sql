-- queen.resources_kv_keys_v1(p_tenant, p_namespace, p_prefix, p_after, p_limit) -> jsonb
--
-- One page of a namespace's live keys for the console and operators, in byte order:
-- {rows: [{key, value, version, expiresAt, updatedAt}], truncated, nextAfter}. Unlike
-- POST /api/v1/kv getPrefix (which the client contract bounds to a non-empty prefix), the
-- prefix may be empty: an operator looks at a whole namespace, a page at a time.
-- p_after (exclusive) is the nextAfter of the page before, or NULL; p_limit rows at most
-- (the route clamps it). A row past its expires_at is invisible, as to every KV op.
--
-- One index range of the primary key from the larger of p_prefix and p_after. Read only:
-- no locks. No notifications.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
CREATE OR REPLACE FUNCTION queen.resources_kv_keys_v1(p_tenant text, p_namespace text,
                                                      p_prefix text, p_after text,
                                                      p_limit integer)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    WITH page AS (
        SELECT k.key, k.value, k.version, k.expires_at, k.updated_at
          FROM queen.kv k
         WHERE k.tenant = p_tenant AND k.namespace = p_namespace
           AND k.key >= p_prefix COLLATE "C"
           AND (p_after IS NULL OR k.key > p_after COLLATE "C")
           AND starts_with(k.key, p_prefix)
           AND (k.expires_at IS NULL OR k.expires_at > clock_timestamp())
         ORDER BY k.key
         LIMIT p_limit + 1
    ), numbered AS (
        SELECT p.*, row_number() OVER (ORDER BY p.key) AS n FROM page p
    )
    SELECT jsonb_build_object(
        'rows', COALESCE(jsonb_agg(jsonb_build_object(
                    'key', n.key, 'value', n.value, 'version', n.version,
                    'expiresAt', to_char(n.expires_at AT TIME ZONE 'UTC',
                                         'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                    'updatedAt', to_char(n.updated_at AT TIME ZONE 'UTC',
                                         'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                  ORDER BY n.key) FILTER (WHERE n.n <= p_limit), '[]'::jsonb),
        'truncated', count(*) > p_limit,
        'nextAfter', CASE WHEN count(*) > p_limit
                          THEN max(n.key) FILTER (WHERE n.n <= p_limit) END)
      FROM numbered n
    );
END;
$$;

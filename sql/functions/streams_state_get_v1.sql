-- queen.streams_state_get_v1(p_tenant, p_query, p_pid, p_keys, p_prefix, p_ripe) -> jsonb
--
-- Reads the state of streams query p_query (of p_tenant) for source partition p_pid
-- (POST /streams/v1/state/get): {"success": true, "rows": [{"key", "value"}, ...]} in key
-- order, or NULL when p_tenant has no such query. Filters, all optional (NULL: no filter):
--   p_keys    only these keys (an empty array is no filter: every key);
--   p_prefix  keys starting with this text, literally (`%` and `_` are plain characters);
--   p_ripe    only rows whose value.windowEnd is a JSON number <= p_ripe (epoch ms); a
--             row without one, or with a string or other type there, is left out.
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.streams_state_get_v1(
    p_tenant text,
    p_query  uuid,
    p_pid    bigint,
    p_keys   text[],
    p_prefix text,
    p_ripe   bigint
) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'success', true,
        'rows', coalesce((
            SELECT jsonb_agg(jsonb_build_object('key', s.key, 'value', s.value)
                             ORDER BY s.key)
            FROM queen.streams_state s
            WHERE s.partition_id = p_pid AND s.query_id = p_query
              AND (p_keys IS NULL OR cardinality(p_keys) = 0 OR s.key = ANY (p_keys))
              AND (p_prefix IS NULL OR starts_with(s.key, p_prefix))
              AND (p_ripe IS NULL
                   OR (jsonb_typeof(s.value -> 'windowEnd') = 'number'
                       AND (s.value ->> 'windowEnd')::numeric <= p_ripe))),
            '[]'::jsonb))
    FROM queen.streams_queries q
    WHERE q.id = p_query AND q.tenant = p_tenant;
$$;

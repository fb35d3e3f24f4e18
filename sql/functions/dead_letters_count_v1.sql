-- queen.dead_letters_count_v1(p_tenant, p_queue, p_group, p_partition, p_from, p_to)
--   -> bigint
--
-- The number of the tenant's dead letters that match the filters of
-- queen.dead_letters_list_v2 (queue name, consumer group, partition name, failed_at in
-- [p_from, p_to]; each ignored when NULL): the `total` of the list's first row, 0 when
-- there is none. The broker asks it only when a page of the list comes back empty, since
-- then no row carries the list's `total`.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.dead_letters_count_v1(
    p_tenant    text,
    p_queue     text,
    p_group     text,
    p_partition text,
    p_from      timestamptz,
    p_to        timestamptz
) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    -- The list's total over a one-row page: the filters live in one place.
    SELECT coalesce((SELECT l.total
                     FROM queen.dead_letters_list_v2(p_tenant, p_queue, p_group,
                                                     p_partition, p_from, p_to, 1, 0,
                                                     9223372036854775807) l), 0)
    );
END;
$$;

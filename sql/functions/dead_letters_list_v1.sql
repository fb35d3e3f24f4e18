-- queen.dead_letters_list_v1(p_tenant, p_queue, p_group, p_partition, p_from, p_to,
--                            p_limit, p_offset) -> SETOF queen.dead_letter_row
--
-- The previous release's signature, kept for its nodes during a rolling upgrade (README
-- "Schema migrations"); this release calls queen.dead_letters_list_v2. Answers as v2
-- without a bound on the bytes a page reads: p_limit rows from p_offset, as the previous
-- release paged.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.dead_letters_list_v1(
    p_tenant    text,
    p_queue     text,
    p_group     text,
    p_partition text,
    p_from      timestamptz,
    p_to        timestamptz,
    p_limit     integer,
    p_offset    integer
) RETURNS SETOF queen.dead_letter_row LANGUAGE sql STABLE AS $$
    SELECT * FROM queen.dead_letters_list_v2(p_tenant, p_queue, p_group, p_partition, p_from,
                                             p_to, p_limit, p_offset,
                                             9223372036854775807);
$$;

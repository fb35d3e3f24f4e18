-- queen.retention_segments_v1(p_after, p_budget, p_default_secs, p_default_completed_secs)
--   -> (tenant, queue, segments, bytes, dedup_rows, resume_after) rows
--
-- The previous release's signature, kept for its nodes during a rolling upgrade (README
-- "Schema migrations"); this release calls queen.retention_segments_v2. Answers as v2 with
-- no broker-wide dedup window (p_default_dedup_secs 0): a queue that sets
-- dedup_window_seconds keeps its segments inside that window, one that does not is swept
-- by its retention alone, as the previous release swept every queue.
--
-- Locks and notifications: as queen.retention_segments_v2.
CREATE OR REPLACE FUNCTION queen.retention_segments_v1(
    p_after                  bigint,
    p_budget                 integer,
    p_default_secs           integer,
    p_default_completed_secs integer
) RETURNS TABLE (
    tenant       text,
    queue        text,
    segments     bigint,
    bytes        bigint,
    dedup_rows   bigint,
    resume_after bigint
) LANGUAGE sql VOLATILE AS $$
    SELECT * FROM queen.retention_segments_v2(p_after, p_budget, p_default_secs,
                                              p_default_completed_secs, 0);
$$;

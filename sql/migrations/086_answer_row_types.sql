-- 086_answer_row_types: the rows that the push, the ack and the per-candidate pop answer,
-- each declared once.
--
-- Two functions answered each of these rows and each listed its columns: the push's
-- (queen.log_push_v3 and queen.log_push_at_v1, which the first calls), the ack's
-- (queen.log_ack_v2 and queen.log_ack_v3, which calls it) and a pop candidate's verdict
-- (queen.log_pop_list_v2 and queen.log_pop_at_v1, which calls it). They now return SETOF
-- these types: the same columns, in the same order, with the same names and types, so a
-- caller of either release reads the same rows. Their files change only that (the
-- installer replaces a function whose result changes form but not columns: README,
-- "Rolling upgrades"), and this migration marks them as this release's.
-- No data; takes no lock beyond the types' creation; no notifications.

-- A push's answer (queen.log_push_at_v1 says what each column holds).
CREATE TYPE queen.log_push_answer_row AS (
    stale          boolean,
    partition_id   bigint,
    last_offset    bigint,
    window_seconds integer,
    seg_base       bigint,
    seg_end        bigint,
    seg_age_ms     bigint,
    seg_keys_hi    integer[],
    seg_keys_lo    smallint[],
    seg_hashes     bigint[],
    seg_codec      smallint,
    seg_blob       bytea
);

-- One acked item's answer (queen.log_ack_v2 says what each column holds).
CREATE TYPE queen.log_ack_answer_row AS (
    idx            integer,
    success        boolean,
    error          text,
    lease_released boolean,
    dlq            boolean,
    queue_name     text,
    partition_name text,
    pending_after  bigint
);

-- A claimed slice or a candidate's verdict (queen.log_pop_list_v2 says which).
CREATE TYPE queen.log_pop_verdict_row AS (
    verdict       text,
    retry_at      timestamptz,
    pending_after bigint,
    slice         queen.log_pop_wire_row
);

-- 065_drop_unused_functions: functions that neither this release nor the previous one
-- calls, from any other function or from the broker.
--
-- They were earlier versions kept for brokers of older releases during a rolling upgrade:
-- log_push_v1 (the push before segments carried transaction-id hashes), log_pop_v2 (the
-- claim before log_pop_v3), log_ack_v1 (the ack before log_ack_v2), log_lease_extend_v1
-- and lease_require_v1 (before tenants), dead_letter_requeue_v1 (before
-- dead_letter_requeue_v2), log_push_v2 (the push that stored 64-bit hashes, before
-- log_push_v3 and its 48-bit keys; the previous release, which created log_push_v3, calls
-- only that one, and queen.dead_letter_requeue_v2 now stores keys itself). The releases
-- that called them are two or more back, which no rolling upgrade runs beside this one
-- (README, "Schema migrations"). Segments log_push_v2 wrote keep their txn_hashes, which
-- every reader still takes.
--
-- Also words the comment of log_consumers.failed_count after where the charge lives now.
-- Takes only the functions' catalog locks; no data; no notifications.

DROP FUNCTION IF EXISTS queen.log_push_v1(p_tenant text, p_queue text, p_partition text,
    p_txn_ids text[], p_msg_ids uuid[], p_blob bytea, p_codec smallint, p_producer text);
DROP FUNCTION IF EXISTS queen.log_push_v2(p_tenant text, p_queue text, p_partition text,
    p_known_last bigint, p_default_window integer, p_counts integer[], p_codecs smallint[],
    p_blobs bytea[], p_hashes bigint[], p_producer text);
DROP FUNCTION IF EXISTS queen.log_pop_v2(p_qid bigint, p_pid bigint, p_group text,
    p_worker text, p_budget integer, p_lease_seconds integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from timestamp with time zone, p_skip_window boolean,
    p_delay integer, p_window integer, p_conflate boolean);
DROP FUNCTION IF EXISTS queen.log_ack_v1(p_pid bigint, p_group text, p_lease text,
    p_txn_ids text[], p_offsets bigint[], p_statuses text[], p_errors text[]);
DROP FUNCTION IF EXISTS queen.log_lease_extend_v1(p_lease text, p_seconds integer);
DROP FUNCTION IF EXISTS queen.lease_require_v1(p_leases text[]);
DROP FUNCTION IF EXISTS queen.dead_letter_requeue_v1(p_tenant text, p_partition_id bigint,
    p_transaction_id text, p_message_id uuid, p_blob bytea, p_codec smallint,
    p_producer text);

COMMENT ON COLUMN queen.log_consumers.failed_count IS
    'the retry budget spent on the message at failed_offset: failed acks, and leases that '
    'expired with it as the first undone message (charged by the next claim, '
    'sql/functions/log_pop_v3.sql)';

-- 050_queue_options: the storage the honoured queue options need, and defaults that keep
-- a queue which configures nothing behaving as before.
--
-- Contract: schema changes only, re-runnable; no functions, no notifications. Takes the
-- ACCESS EXCLUSIVE lock of queen.queues and queen.log_consumers for a catalog-only change
-- (a nullable column without a default, defaults, NOT NULL dropped) under the installer's
-- lock_timeout, and updates the queue rows that still hold the old never-honoured defaults.
--
-- Until now ttl, maxWaitTimeSeconds, retryDelay, deadLetterQueue and dlqAfterMaxRetries were
-- stored and ignored, so what a queue did was "no expiry, redelivery at once, dead letters
-- after retryLimit" whatever its row said. Their column defaults (ttl 3600 s, retryDelay
-- 1000 ms, both switches false) would change that behaviour now that they are read, so:
--   * ttl_seconds and retry_delay_ms default to 0 (off); rows holding exactly the old
--     default (3600, 1000), which no client sends unless its user asked, become 0;
--   * dead_letter_queue and dlq_after_max_retries become nullable, NULL meaning "not set":
--     dead letters are kept, as they always were; the stored `false`, which never switched
--     anything off, becomes NULL. An explicit false from now on switches them off.

ALTER TABLE queen.queues ALTER COLUMN ttl_seconds SET DEFAULT 0;
ALTER TABLE queen.queues ALTER COLUMN retry_delay_ms SET DEFAULT 0;
ALTER TABLE queen.queues ALTER COLUMN dead_letter_queue DROP NOT NULL;
ALTER TABLE queen.queues ALTER COLUMN dead_letter_queue SET DEFAULT NULL;
ALTER TABLE queen.queues ALTER COLUMN dlq_after_max_retries DROP NOT NULL;
ALTER TABLE queen.queues ALTER COLUMN dlq_after_max_retries SET DEFAULT NULL;

UPDATE queen.queues SET ttl_seconds = 0 WHERE ttl_seconds = 3600;
UPDATE queen.queues SET retry_delay_ms = 0 WHERE retry_delay_ms = 1000;
UPDATE queen.queues SET dead_letter_queue = NULL WHERE dead_letter_queue = false;
UPDATE queen.queues SET dlq_after_max_retries = NULL WHERE dlq_after_max_retries = false;

-- retryDelay: a failed ack that rewinds the partition sets this; no claim takes the row
-- before it (NULL or past: claimable).
ALTER TABLE queen.log_consumers ADD COLUMN IF NOT EXISTS retry_at timestamptz;

COMMENT ON COLUMN queen.log_consumers.attempt_count IS
    'deliveries of the batch starting at attempt_offset (the answer''s deliveryAttempt); '
    'telemetry: the retry budget is failed_count';
COMMENT ON COLUMN queen.log_consumers.failed_count IS
    'the retry budget spent on the message at failed_offset: failed acks, and leases that '
    'expired with it as the first undone message (charged by the next claim, sql/051)';
COMMENT ON COLUMN queen.log_consumers.retry_at IS
    'retryDelay: not claimable before this time (set by a failed ack that rewinds)';

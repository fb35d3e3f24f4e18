-- 069_timers: durable timers of /api/v1/timers (sql/functions/timers_apply_v1.sql) and
-- the fire loop that turns a due timer into one message (src/timers/fire.rs).
--
-- One row per pending timer. The primary key starts with the tenant, then the queue and
-- the timer key, as every tenant-owned table here is reached through (tenant, ...): when
-- Citus distributes the table by tenant, a call, which names one tenant, runs on one
-- worker. `timer_key` is COLLATE "C" so a queue's keyset page is one index range in byte
-- order.
--
-- `payload` holds the bytes the message will carry (one JSON document, decompressed when
-- the client flagged payloadZstd). `message_id` is the id promised at schedule time.
-- `deliver_at` is the promised "not before" (PostgreSQL's clock + delayMs); `due_at` is
-- when the fire loop may next claim the row: deliver_at at first, later after a fire that
-- could not push (a backoff, `attempts` counting them). timers_due_idx serves the claim
-- (ORDER BY due_at ... FOR UPDATE SKIP LOCKED) and the loop's min(due_at) look.
-- No locks beyond DDL; no notifications; no data.

CREATE TABLE IF NOT EXISTS queen.timers (
    tenant     text        NOT NULL,
    queue      text        NOT NULL,
    timer_key  text        COLLATE "C" NOT NULL,
    partition  text        NOT NULL,
    payload    bytea       NOT NULL,
    txn        text        NOT NULL,
    message_id uuid        NOT NULL,
    deliver_at timestamptz NOT NULL,
    due_at     timestamptz NOT NULL,
    attempts   integer     NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, queue, timer_key)
);

CREATE INDEX IF NOT EXISTS timers_due_idx ON queen.timers (due_at);

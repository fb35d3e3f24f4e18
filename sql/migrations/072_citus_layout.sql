-- 072_citus_layout: keys every table Citus distributes by partition can carry.
--
-- Citus refuses a PRIMARY KEY or UNIQUE constraint on a distributed table unless it holds
-- the distribution column (docs/scale-out.md). Of the tables keyed by partition, only
-- queen.dead_letters had a key without partition_id: its bigserial id alone. Its key
-- becomes (partition_id, id): the same rows stay unique (id still comes from its
-- sequence), and a lookup by id alone keeps an index of its own (dead_letters_id_idx, not
-- unique, which Citus allows). Nothing refers to a dead letter by foreign key.
--
-- The same on plain PostgreSQL and on Citus; the distribution itself is not a migration
-- but a step of the installer that runs only where the citus extension is
-- (src/db/schema/citus.rs). One subcommand per ALTER TABLE, as Citus requires for a table
-- it already manages. Takes the table's ACCESS EXCLUSIVE lock while the key is rebuilt
-- (dead letters are few); no data change; no notifications.

ALTER TABLE queen.dead_letters DROP CONSTRAINT IF EXISTS dead_letters_pkey;
ALTER TABLE queen.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (partition_id, id);
CREATE INDEX IF NOT EXISTS dead_letters_id_idx ON queen.dead_letters (id);

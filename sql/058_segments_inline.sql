-- Segments stay in the table row up to the page's size instead of being cut into TOAST
-- chunks from 2 kB on. A push of 100 small messages is a blob of about 5 kB: toasted, its
-- INSERT wrote three chunk rows and three entries of the TOAST index besides the segment
-- row (more WAL per message), and every pop that read it fetched the chunks back through
-- that index. The blob is zstd already (its storage is EXTERNAL: never compressed again),
-- so keeping it inline costs no compression either. Larger segments are toasted as before.
-- Rows written before keep their TOAST chunks; only new rows are affected.
ALTER TABLE queen.log_segments SET (toast_tuple_target = 8160);

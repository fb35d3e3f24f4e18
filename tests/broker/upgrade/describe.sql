-- One line per column, relation, index, constraint, trigger, type and function of the
-- queen schema, sorted; the installer's history tables are left out (a database upgraded
-- from before the baseline also keeps refinery's). Read by tests/broker/upgrade.rs.
WITH rel AS (
    SELECT c.oid, c.relname, c.relkind, c.reloptions
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'queen'
      AND c.relname NOT IN ('schema_migrations', 'schema_versions', 'schema_functions',
                            'schema_migrations_pkey', 'schema_versions_pkey',
                            'schema_functions_pkey')
)
SELECT 'column ' || r.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
       || ' storage ' || a.attstorage::text || ' #' || a.attnum
       || coalesce(' comment ' || col_description(r.oid, a.attnum), '')
FROM pg_attribute a JOIN rel r ON r.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND r.relkind IN ('r', 'c', 'v', 'S')
UNION ALL
SELECT 'relation ' || r.relname || ' kind ' || r.relkind::text
       || coalesce(' options ' || array_to_string(r.reloptions, ','), '')
       || coalesce(' comment ' || obj_description(r.oid, 'pg_class'), '')
FROM rel r
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN rel r ON r.oid = i.indrelid
UNION ALL
SELECT 'constraint ' || r.relname || '.' || k.conname || ' ' || pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN rel r ON r.oid = k.conrelid
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN rel r ON r.oid = t.tgrelid
WHERE NOT t.tgisinternal
UNION ALL
SELECT 'type ' || t.typname || ' ' || t.typtype::text
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = 'queen' AND t.typtype IN ('c', 'e', 'd')
  AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.typrelid AND c.relkind <> 'c')
UNION ALL
SELECT 'function ' || pg_get_functiondef(p.oid)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'queen'
ORDER BY 1

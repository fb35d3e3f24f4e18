//! A function file whose function answers the same columns in another form.
//!
//! `CREATE OR REPLACE FUNCTION` refuses to change a function's result type (SQLSTATE
//! 42P13), even from `RETURNS TABLE (..)` to `RETURNS SETOF` a composite type of the same
//! columns (migration 086 made three such types). Callers of either form read the same
//! rows, so such a file is a body change, not a new `_vN`: the installer drops the old
//! definition and creates the file's in the same transaction, and refuses the file if the
//! columns its callers read changed ([`DbError::SchemaResultChanged`]).

use tokio_postgres::error::SqlState;
use tokio_postgres::Transaction;

use super::files::SqlFile;
use super::history::failed;
use crate::db::DbError;

/// Whether the installer's error is `CREATE OR REPLACE` refusing `file`'s new result form
/// (or another part of its definition that only a drop can change, as a parameter's name).
pub fn refused_in_place(error: &DbError) -> Option<&str> {
    match error {
        DbError::Schema { step, source }
            if source.code() == Some(&SqlState::INVALID_FUNCTION_DEFINITION) =>
        {
            Some(step)
        }
        _ => None,
    }
}

/// The columns `queen.<file's function>` answers, as `name type` pairs (behind `SETOF ` for
/// a set), whichever form declares them: a `TABLE (..)`, a composite type, or a plain
/// type. None when the function does not exist.
async fn result_columns(tx: &Transaction<'_>, file: &SqlFile) -> Result<Option<String>, DbError> {
    let row = tx
        .query_opt(
            "SELECT CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END || coalesce(
                 (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, NULL), ', '
                                    ORDER BY a.attnum)
                  FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid
                  WHERE t.oid = p.prorettype AND t.typtype = 'c'
                    AND a.attnum > 0 AND NOT a.attisdropped),
                 (SELECT string_agg(u.name || ' ' || format_type(u.type, NULL), ', '
                                    ORDER BY u.i)
                  FROM unnest(p.proallargtypes, p.proargmodes::text[], p.proargnames)
                       WITH ORDINALITY AS u (type, mode, name, i)
                  WHERE u.mode IN ('o', 'b', 't')),
                 format_type(p.prorettype, NULL))
             FROM pg_proc p WHERE p.oid = to_regproc('queen.' || $1)",
            &[&file.stem()],
        )
        .await
        .map_err(failed(file.file))?;
    Ok(row.map(|r| r.get(0)))
}

/// Replaces `file`'s function by dropping it first: its statements run between the read of
/// the old columns and the read of the new ones, which must be equal.
pub async fn replace(tx: &Transaction<'_>, file: &SqlFile) -> Result<(), DbError> {
    let before = result_columns(tx, file).await?;
    tx.batch_execute(&format!("DROP FUNCTION IF EXISTS queen.{}", file.stem()))
        .await
        .map_err(failed(file.file))?;
    for statement in file.statements() {
        tx.batch_execute(statement)
            .await
            .map_err(failed(file.file))?;
    }
    let after = result_columns(tx, file).await?;
    match (before, after) {
        (Some(before), Some(after)) if before != after => Err(DbError::SchemaResultChanged {
            file: file.file.to_owned(),
            before,
            after,
        }),
        _ => Ok(()),
    }
}

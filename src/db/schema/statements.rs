//! Splits an `sql/` file into its statements, so the installer sends them one at a time.
//!
//! A Citus coordinator propagates DDL on a distributed table (a trigger created or dropped
//! on `queen.log_partitions`, `queen.log_consumers`, …) to the workers with the text of the
//! statement it received; a simple-protocol query holding several statements hands it the
//! whole file, and the workers refuse it ("cannot insert multiple commands into a
//! prepared statement"; docs/scale-out.md, "What still fails"). One statement per query
//! is what it needs, and on plain PostgreSQL it changes nothing: the statements still run
//! in the caller's one transaction, in order.
//!
//! The split knows as much SQL as the files use: `;` ends a statement outside quotes, a
//! quoted identifier, a dollar-quoted body (`$$ … $$`, `$tag$ … $tag$`), a `--` comment or
//! a `/* */` comment (nested, as PostgreSQL nests them). It does not parse anything else;
//! it leaves the parsing to the server.

/// The statements of `sql` in order, each without its `;`, leading comments kept with the
/// statement they precede; pieces holding nothing but whitespace and comments are left out.
pub fn split(sql: &str) -> Vec<&str> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b';' => {
                push_statement(&mut out, &sql[start..i]);
                start = i + 1;
                i += 1;
            }
            b'\'' | b'"' => i = quoted_end(bytes, i),
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = sql[i..].find('\n').map_or(bytes.len(), |n| i + n + 1);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = block_comment_end(bytes, i),
            b'$' => i = dollar_quoted_end(sql, i),
            _ => i += 1,
        }
    }
    push_statement(&mut out, &sql[start..]);
    out
}

/// Adds `piece` to `out` unless it holds only whitespace and comments.
fn push_statement<'a>(out: &mut Vec<&'a str>, piece: &'a str) {
    if has_code(piece) {
        out.push(piece.trim());
    }
}

/// Whether `piece` holds anything besides whitespace and comments.
fn has_code(piece: &str) -> bool {
    let bytes = piece.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = piece[i..].find('\n').map_or(bytes.len(), |n| i + n + 1);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = block_comment_end(bytes, i),
            _ => return true,
        }
    }
    false
}

/// The index just past the string or quoted identifier opening at `open` (a doubled quote
/// inside is part of it); the end of the text when it is not closed.
fn quoted_end(bytes: &[u8], open: usize) -> usize {
    let quote = bytes[open];
    let mut i = open + 1;
    while i < bytes.len() {
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

/// The index just past the `/* */` comment opening at `open`, nested comments included.
fn block_comment_end(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0;
    let mut i = open;
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index just past the dollar-quoted text opening at `open` (`$$` or `$tag$`, the tag
/// an identifier), or `open + 1` when the `$` opens none (a parameter such as `$1`).
fn dollar_quoted_end(sql: &str, open: usize) -> usize {
    let rest = &sql[open + 1..];
    let tag_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let tag = &rest[..tag_len];
    let opens = rest[tag_len..].starts_with('$') && !tag.starts_with(|c: char| c.is_ascii_digit());
    if !opens {
        return open + 1;
    }
    let delimiter = &sql[open..open + tag_len + 2];
    let body = open + delimiter.len();
    sql[body..]
        .find(delimiter)
        .map_or(sql.len(), |n| body + n + delimiter.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{FUNCTIONS, MIGRATIONS};

    #[test]
    fn semicolons_inside_bodies_strings_identifiers_and_comments_do_not_split() {
        let sql = "-- head; comment\n\
                   CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$\n\
                   BEGIN PERFORM 'a;b'; RETURN 1; END;\n$$;\n\
                   /* a; /* nested; */ still; */ SELECT \"x;y\", 'it''s;', $1, $q$;$q$;\n\
                   CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW EXECUTE FUNCTION f();\n\
                   -- tail only; nothing after\n";
        let parts = split(sql);
        assert_eq!(parts.len(), 3, "{parts:#?}");
        assert!(parts[0].starts_with("-- head; comment\nCREATE FUNCTION f()"));
        assert!(parts[0].ends_with("END;\n$$"));
        assert!(parts[1].ends_with("$q$;$q$"));
        assert!(parts[2].starts_with("CREATE TRIGGER t"));
    }

    #[test]
    fn every_embedded_file_splits_into_the_statements_it_holds() {
        // Rejoined, the pieces are the file again (whitespace and the dropped trailing
        // comments aside), and a function file's first piece is its one function.
        for file in MIGRATIONS.iter().chain(FUNCTIONS) {
            let parts = split(file.sql);
            assert!(!parts.is_empty(), "{}", file.file);
            let flat = |s: &str| s.split_whitespace().collect::<String>();
            let joined = flat(&parts.join(";"));
            assert!(
                flat(file.sql).starts_with(&joined),
                "{}: the pieces are not the file",
                file.file
            );
        }
        for file in FUNCTIONS {
            let parts = split(file.sql);
            let functions = parts
                .iter()
                .filter(|p| p.to_lowercase().contains("create or replace function"))
                .count();
            assert_eq!(functions, 1, "{}: {parts:#?}", file.file);
        }
    }
}

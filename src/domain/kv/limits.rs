//! The bounds of one KV call, checked before anything reaches the database.

/// Ops in one call at most.
pub const MAX_OPS: usize = 256;
/// Keys in one call at most (a `getMany`'s keys each count, every other op one).
pub const MAX_KEYS: usize = 1024;
/// Bytes of a key (or prefix, or `after` cursor) at most.
pub const MAX_KEY_BYTES: usize = 512;
/// Bytes of a value, as JSON text, at most.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Rows of a `getPrefix` page when it names no `limit`.
pub const PREFIX_LIMIT_DEFAULT: i64 = 100;
/// Rows of a `getPrefix` page at most: a larger `limit` is clamped, not refused.
pub const PREFIX_LIMIT_MAX: i64 = 1000;
/// The longest TTL: a hundred years, so the expiry stays a valid timestamp.
pub const MAX_TTL_SECONDS: i64 = 100 * 365 * 24 * 3600;

/// Whether `ns` is a namespace: `^[a-z0-9][a-z0-9._-]{0,63}$`.
pub fn is_namespace(ns: &str) -> bool {
    let bytes = ns.as_bytes();
    let first_ok = bytes
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    first_ok
        && bytes.len() <= 64
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_follow_the_pattern() {
        for good in ["a", "0", "queen-supervisor", "a.b_c-d", &"a".repeat(64)] {
            assert!(is_namespace(good), "{good}");
        }
        for bad in ["", "A", "-a", ".a", "a b", "a/b", "é", &"a".repeat(65)] {
            assert!(!is_namespace(bad), "{bad}");
        }
    }
}

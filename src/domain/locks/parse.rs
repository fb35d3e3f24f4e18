//! Checks a locks call's `operations` and turns them into a [`LockBatch`], or says what is
//! wrong. Nothing here touches the database: a refused call changes nothing.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::ops::{LockBatch, LockOp, LockOpKind};
use super::{MAX_LIMIT, MAX_NAME_BYTES, MAX_OPS};
use crate::domain::kv::limits::MAX_TTL_SECONDS;

/// Why a call was refused before it ran (always a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct LocksInputError {
    /// A stable identifier of the fault (`locks_bad_name`, `locks_bad_token`, ...).
    pub reason: &'static str,
    /// Prose for a person, naming the op.
    pub detail: String,
}

fn refuse(reason: &'static str, detail: impl Into<String>) -> LocksInputError {
    LocksInputError {
        reason,
        detail: detail.into(),
    }
}

/// Checks `operations` (the call body's array) and answers the batch.
pub fn parse_ops(operations: &Value) -> Result<LockBatch, LocksInputError> {
    let Some(list) = operations.as_array() else {
        return Err(refuse(
            "locks_operations",
            "`operations` must be an array of ops",
        ));
    };
    if list.len() > MAX_OPS {
        return Err(refuse(
            "locks_too_many_ops",
            format!("{} ops in one call; at most {MAX_OPS}", list.len()),
        ));
    }
    let mut named: HashSet<String> = HashSet::new();
    let mut batch = LockBatch::default();
    for (i, raw) in list.iter().enumerate() {
        let op = parse_op(i, raw)?;
        if !named.insert(op.name.clone()) {
            return Err(refuse(
                "locks_duplicate_in_call",
                format!("op {i} names lock {:?} a second time in one call", op.name),
            ));
        }
        batch.ops.push(op);
    }
    Ok(batch)
}

fn parse_op(i: usize, raw: &Value) -> Result<LockOp, LocksInputError> {
    let Some(obj) = raw.as_object() else {
        return Err(refuse("locks_bad_op", format!("op {i} is not an object")));
    };
    let op = match obj.get("op") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(refuse("locks_bad_op", format!("op {i} has no `op` string"))),
    };
    if !matches!(op, "acquire" | "renew" | "release" | "get") {
        return Err(refuse(
            "locks_unknown_op",
            format!(
                "op {i}: unknown op `{}` (acquire, renew, release, get)",
                op.chars().take(64).collect::<String>()
            ),
        ));
    }
    let name = name(i, obj)?;
    let kind = match op {
        "acquire" => LockOpKind::Acquire {
            ttl: ttl(i, obj)?,
            owner: owner(i, obj)?,
            limit: match obj.get("limit") {
                None | Some(Value::Null) => 1,
                Some(v) => whole(v)
                    .filter(|l| (1..=MAX_LIMIT).contains(l))
                    .ok_or_else(|| {
                        refuse(
                            "locks_bad_limit",
                            format!("op {i}: `limit` is an integer from 1 to {MAX_LIMIT}"),
                        )
                    })?,
            },
        },
        "renew" => LockOpKind::Renew {
            token: token(i, obj)?,
            ttl: ttl(i, obj)?,
            slot: slot(i, obj)?,
            owner: owner(i, obj)?,
        },
        "release" => LockOpKind::Release {
            token: token(i, obj)?,
            slot: slot(i, obj)?,
        },
        _ => LockOpKind::Get,
    };
    Ok(LockOp { name, kind })
}

/// An integer JSON number (not a float, not a bool).
fn whole(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// Whether `s` is a name or owner: non-empty, at most [`MAX_NAME_BYTES`], no control
/// character (the client's own rule: U+0000..U+001F and U+007F..U+009F).
fn is_label(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME_BYTES && !s.chars().any(char::is_control)
}

fn name(i: usize, obj: &Map<String, Value>) -> Result<String, LocksInputError> {
    match obj.get("name") {
        Some(Value::String(s)) if is_label(s) && !s.contains('#') => Ok(s.clone()),
        _ => Err(refuse(
            "locks_bad_name",
            format!(
                "op {i}: `name` is a non-empty string of at most {MAX_NAME_BYTES} bytes, \
                 without control characters and without '#'"
            ),
        )),
    }
}

fn owner(i: usize, obj: &Map<String, Value>) -> Result<Option<String>, LocksInputError> {
    match obj.get("owner") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if is_label(s) => Ok(Some(s.clone())),
        Some(_) => Err(refuse(
            "locks_bad_owner",
            format!(
                "op {i}: `owner` is a non-empty string of at most {MAX_NAME_BYTES} bytes, \
                 without control characters"
            ),
        )),
    }
}

/// `ttlSeconds`: mandatory, an integer from 1 to the KV store's longest TTL; no `forever`.
fn ttl(i: usize, obj: &Map<String, Value>) -> Result<i64, LocksInputError> {
    if obj.contains_key("forever") {
        return Err(refuse(
            "locks_ttl_required",
            format!("op {i}: a permit has no `forever`; give `ttlSeconds` and renew"),
        ));
    }
    match obj.get("ttlSeconds") {
        None | Some(Value::Null) => Err(refuse(
            "locks_ttl_required",
            format!("op {i}: `ttlSeconds` is missing; a permit needs a lifetime"),
        )),
        Some(v) => whole(v)
            .filter(|t| (1..=MAX_TTL_SECONDS).contains(t))
            .ok_or_else(|| {
                refuse(
                    "locks_bad_ttl",
                    format!("op {i}: `ttlSeconds` is an integer from 1 to {MAX_TTL_SECONDS}"),
                )
            }),
    }
}

fn token(i: usize, obj: &Map<String, Value>) -> Result<i64, LocksInputError> {
    obj.get("token")
        .and_then(whole)
        .filter(|t| *t > 0)
        .ok_or_else(|| {
            refuse(
                "locks_bad_token",
                format!("op {i}: `token` is the permit's token, an integer above 0"),
            )
        })
}

fn slot(i: usize, obj: &Map<String, Value>) -> Result<i64, LocksInputError> {
    match obj.get("slot") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => whole(v)
            .filter(|s| (0..MAX_LIMIT).contains(s))
            .ok_or_else(|| {
                refuse(
                    "locks_bad_slot",
                    format!("op {i}: `slot` is an integer from 0 to {}", MAX_LIMIT - 1),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(ops: Value) -> &'static str {
        parse_ops(&ops).expect_err("refused").reason
    }

    #[test]
    fn a_well_formed_call_is_normalised() {
        let batch = parse_ops(&json!([
            {"op": "acquire", "name": "a", "ttlSeconds": 5, "owner": "me", "limit": 3},
            {"op": "renew", "name": "b", "token": 7, "ttlSeconds": 5},
            {"op": "release", "name": "c", "token": 8, "slot": 2},
            {"op": "get", "name": "d"},
        ]))
        .expect("accepted");
        assert!(batch.writes());
        let sql = batch.to_sql_json();
        assert_eq!(sql[0]["limit"], 3);
        assert_eq!(
            (&sql[1]["slot"], &sql[1]["owner"]),
            (&json!(0), &Value::Null)
        );
        assert_eq!(sql[2]["slot"], 2);
        let read = parse_ops(&json!([{"op": "get", "name": "d"}])).expect("accepted");
        assert!(!read.writes());
    }

    #[test]
    fn bad_input_names_its_fault() {
        let get = |name: Value| json!([{"op": "get", "name": name}]);
        assert_eq!(refused(get(json!(""))), "locks_bad_name");
        assert_eq!(refused(get(json!("a#b"))), "locks_bad_name");
        assert_eq!(refused(get(json!("a\u{7}b"))), "locks_bad_name");
        assert_eq!(refused(get(json!("a\u{85}b"))), "locks_bad_name");
        assert_eq!(refused(get(json!("é".repeat(129)))), "locks_bad_name");
        assert!(parse_ops(&get(json!("é".repeat(128)))).is_ok());
        let acquire = |extra: Value| {
            let mut op = json!({"op": "acquire", "name": "a", "ttlSeconds": 5});
            if let (Some(op), Some(extra)) = (op.as_object_mut(), extra.as_object()) {
                op.extend(extra.clone());
            }
            json!([op])
        };
        assert_eq!(
            refused(acquire(json!({"ttlSeconds": null}))),
            "locks_ttl_required"
        );
        assert_eq!(
            refused(acquire(json!({"forever": true}))),
            "locks_ttl_required"
        );
        assert_eq!(refused(acquire(json!({"ttlSeconds": 0}))), "locks_bad_ttl");
        assert_eq!(
            refused(acquire(json!({"ttlSeconds": 1.5}))),
            "locks_bad_ttl"
        );
        assert_eq!(refused(acquire(json!({"limit": 1025}))), "locks_bad_limit");
        assert_eq!(refused(acquire(json!({"owner": ""}))), "locks_bad_owner");
        let renew = json!([{"op": "renew", "name": "a", "token": 0, "ttlSeconds": 5}]);
        assert_eq!(refused(renew), "locks_bad_token");
        let release = json!([{"op": "release", "name": "a", "token": 3, "slot": 1024}]);
        assert_eq!(refused(release), "locks_bad_slot");
        assert_eq!(
            refused(json!([{"op": "steal", "name": "a"}])),
            "locks_unknown_op"
        );
        assert_eq!(refused(json!([7])), "locks_bad_op");
        let twice = json!([{"op": "get", "name": "a"}, {"op": "get", "name": "a"}]);
        assert_eq!(refused(twice), "locks_duplicate_in_call");
        let many: Vec<Value> = (0..65)
            .map(|i| json!({"op": "get", "name": format!("l{i}")}))
            .collect();
        assert_eq!(refused(Value::Array(many)), "locks_too_many_ops");
    }
}

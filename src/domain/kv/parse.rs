//! Checks a KV call's `operations` and turns them into a [`KvBatch`], or says what is wrong.
//! Nothing here touches the database: a refused call changes nothing.

use std::collections::HashSet;

use serde_json::{Map, Number, Value};

use super::limits::{
    is_namespace, MAX_KEYS, MAX_KEY_BYTES, MAX_OPS, MAX_TTL_SECONDS, MAX_VALUE_BYTES,
    PREFIX_LIMIT_DEFAULT, PREFIX_LIMIT_MAX,
};
use super::ops::{KvBatch, KvOp, KvOpKind};

/// Why a call was refused before it ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct KvInputError {
    /// A size bound (413) rather than a malformed call (400).
    pub too_large: bool,
    /// A stable identifier of the fault (`namespace`, `key_too_long`, `duplicate_key`, ...).
    pub reason: &'static str,
    /// Prose for a person, naming the op.
    pub detail: String,
}

fn shape(reason: &'static str, detail: impl Into<String>) -> KvInputError {
    KvInputError {
        too_large: false,
        reason,
        detail: detail.into(),
    }
}

fn size(reason: &'static str, detail: impl Into<String>) -> KvInputError {
    KvInputError {
        too_large: true,
        reason,
        detail: detail.into(),
    }
}

/// Checks `operations` (the call body's array) and answers the batch.
pub fn parse_ops(operations: &Value) -> Result<KvBatch, KvInputError> {
    let Some(list) = operations.as_array() else {
        return Err(shape("operations", "`operations` must be an array of ops"));
    };
    if list.len() > MAX_OPS {
        return Err(size(
            "too_many_ops",
            format!("{} ops in one call; at most {MAX_OPS}", list.len()),
        ));
    }
    let mut keys = 0usize;
    let mut written: HashSet<(&str, &str)> = HashSet::new();
    let mut batch = KvBatch::default();
    for (i, raw) in list.iter().enumerate() {
        let op = parse_op(i, raw)?;
        keys += match &op.kind {
            KvOpKind::GetMany { keys } => keys.len(),
            _ => 1,
        };
        if keys > MAX_KEYS {
            return Err(size(
                "too_many_keys",
                format!("more than {MAX_KEYS} keys in one call"),
            ));
        }
        batch.ops.push(op);
    }
    for (i, op) in batch.ops.iter().enumerate() {
        if op.writes() && !written.insert((op.ns.as_str(), op.key.as_str())) {
            return Err(shape(
                "duplicate_key",
                format!(
                    "op {i} writes {}/{} a second time in one call",
                    op.ns, op.key
                ),
            ));
        }
    }
    Ok(batch)
}

fn parse_op(i: usize, raw: &Value) -> Result<KvOp, KvInputError> {
    let Some(obj) = raw.as_object() else {
        return Err(shape("op", format!("op {i} is not an object")));
    };
    let name = match obj.get("op") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(shape("op", format!("op {i} has no `op` string"))),
    };
    let ns = match obj.get("ns") {
        Some(Value::String(s)) if is_namespace(s) => s.clone(),
        _ => {
            return Err(shape(
                "namespace",
                format!("op {i}: `ns` must match ^[a-z0-9][a-z0-9._-]{{0,63}}$"),
            ))
        }
    };
    let required = match obj.get("required") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(shape(
                "required",
                format!("op {i}: `required` is a boolean"),
            ))
        }
    };
    let key = |field: &str| text(i, obj, field);
    let (key, kind) = match name {
        "get" => (key("key")?, KvOpKind::Get),
        "getMany" => {
            let Some(Value::Array(list)) = obj.get("keys") else {
                return Err(shape("keys", format!("op {i}: `keys` is an array of keys")));
            };
            if list.is_empty() {
                return Err(shape("keys", format!("op {i}: `keys` is empty")));
            }
            if list.len() > MAX_KEYS {
                return Err(size(
                    "too_many_keys",
                    format!("more than {MAX_KEYS} keys in one call"),
                ));
            }
            let keys = list
                .iter()
                .map(|k| key_text(i, "keys", k))
                .collect::<Result<Vec<_>, _>>()?;
            (String::new(), KvOpKind::GetMany { keys })
        }
        "getPrefix" => {
            let prefix = key("prefix")?;
            let after = match obj.get("after") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.is_empty() => None,
                Some(v) => Some(key_text(i, "after", v)?),
            };
            let limit = match obj.get("limit") {
                None | Some(Value::Null) => PREFIX_LIMIT_DEFAULT,
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n
                    .as_i64()
                    .unwrap_or(PREFIX_LIMIT_MAX)
                    .clamp(1, PREFIX_LIMIT_MAX),
                Some(_) => return Err(shape("limit", format!("op {i}: `limit` is an integer"))),
            };
            let keys_only = matches!(obj.get("keysOnly"), Some(Value::Bool(true)));
            let kind = KvOpKind::GetPrefix {
                prefix,
                after,
                limit,
                keys_only,
            };
            (String::new(), kind)
        }
        "put" => {
            let kind = KvOpKind::Put {
                value: value(i, obj)?,
                ttl: expiry(i, obj)?,
                expect: expect(i, obj)?,
            };
            (key("key")?, kind)
        }
        "putIfAbsent" => {
            refuse_expect(i, obj, name)?;
            let kind = KvOpKind::PutIfAbsent {
                value: value(i, obj)?,
                ttl: expiry(i, obj)?,
            };
            (key("key")?, kind)
        }
        "delete" => (
            key("key")?,
            KvOpKind::Delete {
                expect: expect(i, obj)?,
            },
        ),
        "check" => {
            let Some(expect) = expect(i, obj)? else {
                return Err(shape("expect", format!("op {i}: `check` needs `expect`")));
            };
            (key("key")?, KvOpKind::Check { expect })
        }
        "incr" => {
            refuse_expect(i, obj, name)?;
            let delta = match obj.get("delta") {
                None | Some(Value::Null) => Number::from(1),
                Some(_) => number(i, obj, "delta")?.unwrap_or_else(|| Number::from(1)),
            };
            let kind = KvOpKind::Incr {
                delta,
                min: number(i, obj, "min")?,
                max: number(i, obj, "max")?,
                ttl: expiry(i, obj)?,
            };
            (key("key")?, kind)
        }
        other => {
            return Err(shape(
                "unknown_op",
                format!(
                    "op {i}: unknown op `{}`",
                    other.chars().take(64).collect::<String>()
                ),
            ))
        }
    };
    Ok(KvOp {
        ns,
        key,
        required,
        kind,
    })
}

/// A key-like field: a non-empty string of at most [`MAX_KEY_BYTES`] bytes without NUL.
fn text(i: usize, obj: &Map<String, Value>, field: &str) -> Result<String, KvInputError> {
    match obj.get(field) {
        Some(v) => key_text(i, field, v),
        None => Err(shape("key", format!("op {i}: `{field}` is missing"))),
    }
}

fn key_text(i: usize, field: &str, v: &Value) -> Result<String, KvInputError> {
    let Value::String(s) = v else {
        return Err(shape("key", format!("op {i}: `{field}` must be a string")));
    };
    if s.is_empty() {
        return Err(shape("key", format!("op {i}: `{field}` is empty")));
    }
    if s.contains('\0') {
        return Err(shape("key", format!("op {i}: `{field}` holds a NUL")));
    }
    if s.len() > MAX_KEY_BYTES {
        return Err(size(
            "key_too_long",
            format!(
                "op {i}: `{field}` is {} bytes; at most {MAX_KEY_BYTES}",
                s.len()
            ),
        ));
    }
    Ok(s.clone())
}

fn value(i: usize, obj: &Map<String, Value>) -> Result<Value, KvInputError> {
    let Some(v) = obj.get("value") else {
        return Err(shape("value", format!("op {i}: `value` is missing")));
    };
    let text = v.to_string();
    if text.len() > MAX_VALUE_BYTES {
        return Err(size(
            "value_too_large",
            format!(
                "op {i}: the value is {} bytes; at most {MAX_VALUE_BYTES}",
                text.len()
            ),
        ));
    }
    // PostgreSQL's jsonb holds no NUL character in a string.
    if holds_nul(v) {
        return Err(shape(
            "value",
            format!("op {i}: the value holds a NUL character"),
        ));
    }
    Ok(v.clone())
}

/// Whether a string or object key anywhere in `v` holds a NUL character.
fn holds_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Exactly one of `ttlSeconds` (an integer > 0) or `forever: true`; `None` is forever.
fn expiry(i: usize, obj: &Map<String, Value>) -> Result<Option<i64>, KvInputError> {
    let forever = match obj.get("forever") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(shape("expiry", format!("op {i}: `forever` is a boolean"))),
    };
    let ttl = match obj.get("ttlSeconds") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(t) if t > 0 && t <= MAX_TTL_SECONDS => Some(t),
            _ => {
                return Err(shape(
                    "expiry",
                    format!("op {i}: `ttlSeconds` is an integer from 1 to {MAX_TTL_SECONDS}"),
                ))
            }
        },
        Some(_) => {
            return Err(shape(
                "expiry",
                format!("op {i}: `ttlSeconds` is an integer"),
            ))
        }
    };
    match (ttl, forever) {
        (Some(t), false) => Ok(Some(t)),
        (None, true) => Ok(None),
        _ => Err(shape(
            "expiry",
            format!("op {i}: a write needs exactly one of `ttlSeconds` or `forever: true`"),
        )),
    }
}

fn expect(i: usize, obj: &Map<String, Value>) -> Result<Option<i64>, KvInputError> {
    match obj.get("expect") {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(e) if e >= 0 => Ok(Some(e)),
            _ => Err(shape(
                "expect",
                format!("op {i}: `expect` is an integer >= 0"),
            )),
        },
        Some(_) => Err(shape(
            "expect",
            format!("op {i}: `expect` is an integer >= 0"),
        )),
    }
}

fn refuse_expect(i: usize, obj: &Map<String, Value>, op: &str) -> Result<(), KvInputError> {
    if obj.contains_key("expect") {
        return Err(shape("expect", format!("op {i}: `{op}` takes no `expect`")));
    }
    Ok(())
}

fn number(i: usize, obj: &Map<String, Value>, field: &str) -> Result<Option<Number>, KvInputError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.clone())),
        Some(_) => Err(shape(
            "number",
            format!("op {i}: `{field}` must be a number"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(ops: Value) -> KvInputError {
        parse_ops(&ops).expect_err("refused")
    }

    #[test]
    fn a_well_formed_batch_is_normalised() {
        let batch = parse_ops(&json!([
            {"op": "put", "ns": "a", "key": "k", "value": null, "forever": true},
            {"op": "incr", "ns": "a", "key": "c", "ttlSeconds": 5},
            {"op": "getPrefix", "ns": "a", "prefix": "k", "limit": 5000},
        ]))
        .expect("accepted");
        assert!(batch.writes());
        let sql = batch.to_sql_json();
        assert_eq!(sql[0]["ttl"], Value::Null);
        assert_eq!(sql[1]["delta"], json!(1));
        assert_eq!(sql[2]["limit"], json!(1000));
    }

    #[test]
    fn bad_shapes_are_400_and_sizes_413() {
        let ns = refused(json!([{"op": "get", "ns": "Bad", "key": "k"}]));
        assert_eq!((ns.too_large, ns.reason), (false, "namespace"));
        let both = refused(json!([{"op": "put", "ns": "a", "key": "k", "value": 1,
                                    "forever": true, "ttlSeconds": 3}]));
        assert_eq!(both.reason, "expiry");
        let twice = refused(json!([
            {"op": "put", "ns": "a", "key": "k", "value": 1, "forever": true},
            {"op": "delete", "ns": "a", "key": "k"},
        ]));
        assert_eq!(twice.reason, "duplicate_key");
        let long = refused(json!([{"op": "get", "ns": "a", "key": "k".repeat(513)}]));
        assert_eq!((long.too_large, long.reason), (true, "key_too_long"));
        let big = refused(json!([{"op": "put", "ns": "a", "key": "k", "forever": true,
                                   "value": "x".repeat(MAX_VALUE_BYTES)}]));
        assert_eq!((big.too_large, big.reason), (true, "value_too_large"));
        let ops: Vec<Value> = (0..257)
            .map(|i| json!({"op": "get", "ns": "a", "key": format!("k{i}")}))
            .collect();
        assert_eq!(refused(Value::Array(ops)).reason, "too_many_ops");
        let delta = refused(json!([{"op": "incr", "ns": "a", "key": "c", "delta": true,
                                     "forever": true}]));
        assert_eq!(delta.reason, "number");
        let check = refused(json!([{"op": "check", "ns": "a", "key": "c"}]));
        assert_eq!(check.reason, "expect");
        let nul = refused(json!([{"op": "put", "ns": "a", "key": "k", "forever": true,
                                   "value": {"deep": ["a\u{0}b"]}}]));
        assert_eq!(nul.reason, "value");
        let escaped = json!([{"op": "put", "ns": "a", "key": "k", "forever": true,
                              "value": "a literal \\u0000"}]);
        assert!(parse_ops(&escaped).is_ok(), "a backslash is not a NUL");
    }
}

//! A checked KV batch: what each op asks, in the normalised form
//! `queen.kv_apply_v1` takes (`sql/functions/kv_apply_v1.sql`).

use serde_json::{json, Number, Value};

/// Which op, with its own fields.
#[derive(Debug, Clone, PartialEq)]
pub enum KvOpKind {
    /// Read one key.
    Get,
    /// Read several keys of one namespace.
    GetMany {
        /// The keys, in the order asked.
        keys: Vec<String>,
    },
    /// A page of the keys starting with a prefix, in byte order.
    GetPrefix {
        /// Non-empty.
        prefix: String,
        /// Exclusive keyset cursor.
        after: Option<String>,
        /// Rows at most, already clamped.
        limit: i64,
        /// Leave the values out.
        keys_only: bool,
    },
    /// Write a value (compare-and-set with `expect`).
    Put {
        /// Any JSON.
        value: Value,
        /// Seconds to live; `None`: forever.
        ttl: Option<i64>,
        /// 0: must not exist; N: must be at version N.
        expect: Option<i64>,
    },
    /// Write a value only where the key does not exist (or has expired).
    PutIfAbsent {
        /// Any JSON.
        value: Value,
        /// Seconds to live; `None`: forever.
        ttl: Option<i64>,
    },
    /// Remove a key.
    Delete {
        /// As `Put`'s.
        expect: Option<i64>,
    },
    /// A precondition only: applied when the key is at `expect` (0: absent).
    Check {
        /// As `Put`'s.
        expect: i64,
    },
    /// Add to a number.
    Incr {
        /// What to add.
        delta: Number,
        /// The least result allowed.
        min: Option<Number>,
        /// The greatest result allowed.
        max: Option<Number>,
        /// Seconds to live when the increment creates the key; `None`: forever.
        ttl: Option<i64>,
    },
}

/// One checked op.
#[derive(Debug, Clone, PartialEq)]
pub struct KvOp {
    /// The namespace (matches `limits::is_namespace`).
    pub ns: String,
    /// The key (empty for `getMany` and `getPrefix`).
    pub key: String,
    /// A lost precondition rolls the whole batch back.
    pub required: bool,
    /// What it does.
    pub kind: KvOpKind,
}

impl KvOp {
    /// Whether the op changes stored data (and so needs the `read-write` role).
    pub fn writes(&self) -> bool {
        matches!(
            self.kind,
            KvOpKind::Put { .. }
                | KvOpKind::PutIfAbsent { .. }
                | KvOpKind::Delete { .. }
                | KvOpKind::Incr { .. }
        )
    }

    /// The op as `queen.kv_apply_v1` reads it.
    pub fn to_sql_json(&self) -> Value {
        let (ns, key, required) = (&self.ns, &self.key, self.required);
        match &self.kind {
            KvOpKind::Get => json!({"op": "get", "ns": ns, "key": key}),
            KvOpKind::GetMany { keys } => json!({"op": "getMany", "ns": ns, "keys": keys}),
            KvOpKind::GetPrefix {
                prefix,
                after,
                limit,
                keys_only,
            } => json!({"op": "getPrefix", "ns": ns, "prefix": prefix, "after": after,
                        "limit": limit, "keysOnly": keys_only}),
            KvOpKind::Put { value, ttl, expect } => json!({"op": "put", "ns": ns, "key": key,
                "value": value, "ttl": ttl, "expect": expect, "required": required}),
            KvOpKind::PutIfAbsent { value, ttl } => json!({"op": "putIfAbsent", "ns": ns,
                "key": key, "value": value, "ttl": ttl, "required": required}),
            KvOpKind::Delete { expect } => json!({"op": "delete", "ns": ns, "key": key,
                "expect": expect, "required": required}),
            KvOpKind::Check { expect } => json!({"op": "check", "ns": ns, "key": key,
                "expect": expect, "required": required}),
            KvOpKind::Incr {
                delta,
                min,
                max,
                ttl,
            } => json!({"op": "incr", "ns": ns, "key": key, "delta": delta, "min": min,
                        "max": max, "ttl": ttl, "required": required}),
        }
    }
}

/// A checked call: its ops in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KvBatch {
    /// The ops, index-aligned with the answer.
    pub ops: Vec<KvOp>,
}

impl KvBatch {
    /// Whether any op changes stored data.
    pub fn writes(&self) -> bool {
        self.ops.iter().any(KvOp::writes)
    }

    /// The ops array `queen.kv_apply_v1` takes.
    pub fn to_sql_json(&self) -> Value {
        Value::Array(self.ops.iter().map(KvOp::to_sql_json).collect())
    }
}

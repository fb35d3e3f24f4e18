//! A checked locks call: what each op asks, in the normalised form `queen.locks_apply_v1`
//! takes (`sql/functions/locks_apply_v1.sql`).

use serde_json::{json, Value};

/// Which op, with its own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOpKind {
    /// Take a free permit (or answer the one `owner` already holds).
    Acquire {
        /// Seconds the permit lives unless renewed.
        ttl: i64,
        /// The holder's identity, which makes a resent acquire answer the first one's permit.
        owner: Option<String>,
        /// Permits of the lock (1: a lock; more: a semaphore); the caller's, stored nowhere.
        limit: i64,
    },
    /// Extend a permit, which changes its token.
    Renew {
        /// The permit's current token.
        token: i64,
        /// Seconds from now the permit lives.
        ttl: i64,
        /// The permit's slot.
        slot: i64,
        /// The holder, whose own earlier renew may have changed the token already.
        owner: Option<String>,
    },
    /// Give a permit back.
    Release {
        /// The permit's current token.
        token: i64,
        /// The permit's slot.
        slot: i64,
    },
    /// Who holds the lock.
    Get,
}

/// One checked op on one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockOp {
    /// The lock's name: non-empty, at most 256 bytes, no control character, no `#`.
    pub name: String,
    /// What it does.
    pub kind: LockOpKind,
}

impl LockOp {
    /// Whether the op may change a permit (and so needs the `read-write` role).
    pub fn writes(&self) -> bool {
        !matches!(self.kind, LockOpKind::Get)
    }

    /// The op as `queen.locks_apply_v1` reads it.
    pub fn to_sql_json(&self) -> Value {
        let name = &self.name;
        match &self.kind {
            LockOpKind::Acquire { ttl, owner, limit } => json!({"op": "acquire", "name": name,
                "ttl": ttl, "owner": owner, "limit": limit}),
            LockOpKind::Renew {
                token,
                ttl,
                slot,
                owner,
            } => json!({"op": "renew", "name": name, "token": token, "ttl": ttl,
                        "slot": slot, "owner": owner}),
            LockOpKind::Release { token, slot } => {
                json!({"op": "release", "name": name, "token": token, "slot": slot})
            }
            LockOpKind::Get => json!({"op": "get", "name": name}),
        }
    }
}

/// A checked call: its ops in order, each on a different lock.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockBatch {
    /// The ops, index-aligned with the answer.
    pub ops: Vec<LockOp>,
}

impl LockBatch {
    /// Whether any op may change a permit.
    pub fn writes(&self) -> bool {
        self.ops.iter().any(LockOp::writes)
    }

    /// The ops array `queen.locks_apply_v1` takes.
    pub fn to_sql_json(&self) -> Value {
        Value::Array(self.ops.iter().map(LockOp::to_sql_json).collect())
    }
}

//! A push made ready to be stored, and one request's part of a staging: plain data, so
//! the combiner's queue can hold pushes without knowing how they are stored.

use uuid::Uuid;

use crate::domain::{PrebuiltSegment, PushItem};

/// A push's items made ready for `stage`: message ids minted (or the client's, for
/// prebuilt groups), effective transaction ids, payloads of encrypted queues sealed, and
/// which prebuilt group each item came in. Built before any pooled connection is held.
#[derive(Debug, Clone)]
pub struct PreparedPush {
    pub(super) message_ids: Vec<Uuid>,
    pub(super) txn_ids: Vec<String>,
    pub(super) keys: Vec<i64>,
    pub(super) sealed: Vec<Option<Vec<u8>>>,
    pub(super) prebuilt: Vec<PrebuiltSegment>,
    pub(super) segment_of: Vec<Option<usize>>,
}

impl PreparedPush {
    /// Each item's message id, in request order.
    pub fn message_ids(&self) -> &[Uuid] {
        &self.message_ids
    }

    /// Each item's effective transaction id (the given one, or its message id's text).
    pub fn transaction_ids(&self) -> &[String] {
        &self.txn_ids
    }
}

/// One request's part of `stage_many`: its items and what `prepare` made of them.
#[derive(Clone, Copy)]
pub struct Staged<'a> {
    /// The items, in request order.
    pub items: &'a [PushItem],
    /// Their preparation.
    pub prepared: &'a PreparedPush,
}

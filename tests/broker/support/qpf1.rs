//! A test-side `QPF1` decoder, written from wire contract §2.5 and independent of the
//! broker's encoder. It turns an answer into the message dicts the published client makes,
//! so tests can compare them with JSON pops and ack them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use uuid::Uuid;

/// A decoded answer.
#[derive(Debug)]
pub struct Answer {
    /// The own-keys JSON (`Null` when the section is empty).
    pub own_keys: Value,
    /// Queue of the claims.
    pub queue: String,
    /// The answer's lease.
    pub lease_id: String,
    /// The group, or `__QUEUE_MODE__`.
    pub consumer_group: String,
    /// The claims.
    pub claims: Vec<Claim>,
}

/// One claimed partition.
#[derive(Debug)]
pub struct Claim {
    /// Partition id.
    pub partition_id: u64,
    /// Partition name.
    pub partition: String,
    /// First delivered offset.
    pub start: u64,
    /// Last delivered offset (inclusive).
    pub end: u64,
    /// Delivery attempt.
    pub delivery_attempt: u32,
    /// Whole stored records.
    pub records: Vec<Record>,
}

/// One record (a stored segment).
#[derive(Debug)]
pub struct Record {
    /// Offset of its first message.
    pub base_offset: u64,
    /// Its time, µs since the epoch.
    pub created_at_us: i64,
    /// Messages in it.
    pub count: u32,
    /// 0 raw, 1 zstd.
    pub codec: u8,
    /// The bytes as shipped.
    pub bytes: Vec<u8>,
}

struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        assert!(
            n <= self.0.len(),
            "QPF1 truncated: need {n}, have {}",
            self.0.len()
        );
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        head
    }
    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take(2).try_into().unwrap())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn str16(&mut self) -> String {
        let n = self.u16() as usize;
        String::from_utf8(self.take(n).to_vec()).expect("utf-8 string")
    }
}

/// Decodes a whole answer; panics (failing the test) on anything malformed or left over.
pub fn decode(body: &[u8]) -> Answer {
    let mut c = Cur(body);
    assert_eq!(c.take(4), b"QPF1", "magic");
    let version = c.u8();
    assert!(version <= 1, "version {version}");
    let own_keys = if version == 1 {
        let n = c.u32() as usize;
        let bytes = c.take(n);
        if n == 0 {
            Value::Null
        } else {
            serde_json::from_slice(bytes).expect("own keys are JSON")
        }
    } else {
        Value::Null
    };
    let queue = c.str16();
    let lease_id = c.str16();
    let consumer_group = c.str16();
    let claims = (0..c.u32())
        .map(|_| {
            let partition_id = c.u64();
            let partition = c.str16();
            let start = c.u64();
            let end = c.u64();
            let delivery_attempt = c.u32();
            let records = (0..c.u32())
                .map(|_| {
                    let base_offset = c.u64();
                    let created_at_us = c.u64() as i64;
                    let count = c.u32();
                    let codec = c.u8();
                    let n = c.u32() as usize;
                    Record {
                        base_offset,
                        created_at_us,
                        count,
                        codec,
                        bytes: c.take(n).to_vec(),
                    }
                })
                .collect();
            Claim {
                partition_id,
                partition,
                start,
                end,
                delivery_attempt,
                records,
            }
        })
        .collect();
    assert!(c.0.is_empty(), "{} bytes after the last claim", c.0.len());
    Answer {
        own_keys,
        queue,
        lease_id,
        consumer_group,
        claims,
    }
}

impl Record {
    /// The record's stored frames, decompressed when codec 1.
    pub fn frames(&self) -> Vec<u8> {
        match self.codec {
            0 => self.bytes.clone(),
            1 => zstd::stream::decode_all(&self.bytes[..]).expect("record decompresses"),
            other => panic!("unknown codec {other}"),
        }
    }
}

impl Answer {
    /// The delivered messages as the client's dicts, in order.
    pub fn messages(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for claim in &self.claims {
            for record in &claim.records {
                let frames = record.frames();
                let mut c = Cur(&frames);
                for i in 0..u64::from(record.count) {
                    let body_len = c.u32() as usize;
                    let mut f = Cur(c.take(body_len));
                    let flags = f.u8();
                    assert_eq!(flags & 4, 0, "encrypted frame in a framed answer");
                    let id = Uuid::from_slice(f.take(16)).unwrap();
                    let trace = (flags & 1 != 0).then(|| Uuid::from_slice(f.take(16)).unwrap());
                    let txn = f.str16();
                    let producer = (flags & 2 != 0).then(|| f.str16());
                    let payload = f.0;
                    let offset = record.base_offset + i;
                    if offset < claim.start || offset > claim.end {
                        continue;
                    }
                    let created = DateTime::<Utc>::from_timestamp_micros(record.created_at_us)
                        .expect("a valid time")
                        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                        .to_string();
                    let data: Value = if payload.is_empty() {
                        Value::Null
                    } else {
                        serde_json::from_slice(payload).expect("payload is JSON")
                    };
                    out.push(json!({
                        "id": id.to_string(),
                        "transactionId": txn,
                        "partitionId": claim.partition_id.to_string(),
                        "partition": claim.partition,
                        "leaseId": self.lease_id,
                        "consumerGroup": self.consumer_group,
                        "data": data,
                        "traceId": trace.map(|t| t.to_string()),
                        "producerSub": producer,
                        "createdAt": created,
                        "deliveryAttempt": claim.delivery_attempt,
                        "offset": offset,
                    }));
                }
                assert!(
                    c.0.is_empty(),
                    "record holds more than {} frames",
                    record.count
                );
            }
        }
        out
    }
}

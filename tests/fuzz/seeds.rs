//! The seed corpus: valid and near-valid inputs of every target, built with the broker's
//! own encoders so they stay valid as formats move, and the interesting cases found so far.
//! Files under `corpus/<target>/` (inputs that once failed) are added by `main`.

use bytes::Bytes;
use queen::mesh::message::MeshMessage;
use queen::mesh::{frame, sealed};
use queen::segment::NewFrame;
use uuid::Uuid;

/// The seeds of target `name`.
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    match name {
        "json_push" => json_push(),
        "qpb1" => qpb1(),
        "transaction" => transaction(),
        "segment_frames" => vec![frames(3, true), frames(1, false), Vec::new()],
        "mesh_frame" => mesh_frames(),
        "query" => [
            "consumerGroup=g&batch=10&wait=true&timeout=100&autoAck=1",
            "batch=abc&wait=maybe",
            "a=%zz&b=%E2%82&c=+x+",
            "",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect(),
        other => panic!("no seeds for target {other}"),
    }
}

fn str16(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn json_push() -> Vec<Vec<u8>> {
    let mut tiny = b"{\"items\":[".to_vec();
    for i in 0..2_000 {
        tiny.extend_from_slice(if i == 0 { b"{}" } else { b",{}" });
    }
    tiny.extend_from_slice(b"]}");
    vec![
        br#"{"items":[{"queue":"q","partition":"p","payload":{"a":[1,2]},"transactionId":"t1","traceId":"0190b6a2-0000-7000-8000-000000000001"},{"queue":"q","payload":null}]}"#.to_vec(),
        br#"{"items":[],"extra":{"x":1}}"#.to_vec(),
        br#"{"items":[{"queue":"q/x","partition":7,"transactionId":"","payload":"s"}]}"#.to_vec(),
        tiny,
    ]
}

/// Stored frames, as a flag 8 group or a segment holds them.
fn frames(n: usize, extras: bool) -> Vec<u8> {
    let mut raw = Vec::new();
    for i in 0..n {
        let txn = format!("txn-{i}");
        NewFrame {
            message_id: Uuid::now_v7(),
            trace_id: extras.then(Uuid::now_v7),
            transaction_id: &txn,
            producer: extras.then_some("producer"),
            payload: br#"{"n":1}"#,
        }
        .encode(&mut raw)
        .expect("a small frame encodes");
    }
    raw
}

/// A `QPB1` body of `items` flag 0 messages of 5 bytes each, under `name_bytes`-long queue
/// and partition names: the shape that once cost the broker 400 bytes per body byte.
pub fn long_names_tiny_items(name_bytes: usize, items: usize) -> Vec<u8> {
    let mut b = b"QPB1\x00".to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    str16(&mut b, &"q".repeat(name_bytes));
    str16(&mut b, &"p".repeat(name_bytes));
    b.extend_from_slice(&(items as u32).to_le_bytes());
    for _ in 0..items {
        b.extend_from_slice(&1u32.to_le_bytes());
        b.push(b'1');
    }
    b
}

fn qpb1_groups(flags: u8) -> Vec<u8> {
    let mut g = 2u32.to_le_bytes().to_vec();
    for (queue, partition) in [("q", "p"), ("q2", "")] {
        str16(&mut g, queue);
        str16(&mut g, partition);
        g.extend_from_slice(&2u32.to_le_bytes());
        if flags & 8 != 0 {
            let z = zstd::bulk::compress(&frames(2, false), 1).expect("zstd compresses");
            g.extend_from_slice(&(z.len() as u32).to_le_bytes());
            g.extend_from_slice(&z);
        } else {
            for (txn, payload) in [("a", "{\"x\":1}"), ("", "[1]")] {
                if flags & 4 != 0 {
                    str16(&mut g, txn);
                }
                g.extend_from_slice(&(payload.len() as u32).to_le_bytes());
                g.extend_from_slice(payload.as_bytes());
            }
        }
    }
    g
}

fn qpb1() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for flags in [0u8, 2, 4, 6, 8, 10] {
        let mut b = b"QPB1".to_vec();
        b.push(flags);
        b.extend_from_slice(&qpb1_groups(flags));
        out.push(b.clone());
        // The same groups as one zstd body (flag 1).
        let groups = qpb1_groups(flags);
        let mut z = b"QPB1".to_vec();
        z.push(flags | 1);
        z.extend_from_slice(&(groups.len() as u32).to_le_bytes());
        z.extend_from_slice(&zstd::bulk::compress(&groups, 3).expect("zstd compresses"));
        out.push(z);
    }
    out.push(long_names_tiny_items(512, 8_000));
    out
}

fn transaction() -> Vec<Vec<u8>> {
    let head = br#"{"operations":[{"type":"ack","transactionId":"t","partitionId":"0190b6a2-0000-7000-8000-000000000001","status":"completed"}],"requiredLeases":[]}"#;
    let mut qtb1 = b"QTB1\x02".to_vec();
    qtb1.extend_from_slice(&(head.len() as u32).to_le_bytes());
    qtb1.extend_from_slice(head);
    qtb1.extend_from_slice(&qpb1_groups(8));
    vec![
        br#"{"operations":[{"type":"push","items":[{"queue":"q","payload":{"a":1}}]},{"type":"ack","transactionId":"t","partitionId":"0190b6a2-0000-7000-8000-000000000001","status":"failed","consumerGroup":"g","leaseId":"l"}],"requiredLeases":["l"]}"#.to_vec(),
        br#"{"operations":[{"type":"nope"}]}"#.to_vec(),
        qtb1,
    ]
}

fn mesh_frames() -> Vec<Vec<u8>> {
    let messages = [
        MeshMessage::Challenge {
            cluster: "c".into(),
            node_id: "n".into(),
            instance: [3; 16],
            nonce: [4; 16],
        },
        MeshMessage::Hello {
            cluster: "c".into(),
            node_id: "n".into(),
            proof: vec![1, 2, 3],
            nonce: [5; 16],
        },
        MeshMessage::Welcome,
        MeshMessage::ConfigChanged {
            tenant: String::new(),
            queue: "q".into(),
        },
        MeshMessage::MaintenanceChanged { pop: true },
        MeshMessage::Ping,
    ];
    let secret = queen::config::Secret::new("fuzz secret".to_owned());
    let mut out = Vec::new();
    for m in &messages {
        let plain: Bytes = frame::encode(m);
        let key = sealed::frame_key(Some(&secret), &[1; 16], &[2; 16], "node-a");
        out.push(sealed::Sealer::new(key).seal(&plain).to_vec());
        out.push(plain.to_vec());
    }
    out
}

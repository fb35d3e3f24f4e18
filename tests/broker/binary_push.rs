//! `QPB1` binary push: flags 1, 2, 4 and 8 round-trip through a JSON pop, flag-8 groups are
//! stored byte for byte, retries are duplicates, and every malformed body is a JSON 400
//! that stores nothing.

use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::qpb1::{
    compress_frames, framed, plain, Bytes, Frame, Item, COUNTS, FRAMES, TXN, ZSTD,
};
use crate::support::{payloads, TestBroker};

const CONTENT_TYPE: &str = "application/x-queen-push";

/// POSTs a binary body to the push route.
async fn push_bin(b: &TestBroker, body: Vec<u8>) -> (StatusCode, Value) {
    b.post_raw("/api/v1/push", CONTENT_TYPE, body).await
}

/// Number of stored segments.
async fn segments(b: &TestBroker) -> i64 {
    b.sql()
        .await
        .query_one("SELECT count(*) FROM queen.log_segments", &[])
        .await
        .unwrap()
        .get(0)
}

fn statuses(answer: &Value) -> Vec<String> {
    answer
        .as_array()
        .expect("push answers an array")
        .iter()
        .map(|a| a["status"].as_str().unwrap().to_owned())
        .collect()
}

/// Flag 4 items pop back as JSON with their payloads, order and transaction ids; an empty
/// transaction id gets one minted by the broker.
#[actix_rt::test]
async fn a_flag_4_push_pops_back_as_json_with_payloads_order_and_transaction_ids() {
    // Arrange
    let b = TestBroker::start().await;
    let items = vec![
        Item {
            txn: "t-1",
            payload: r#"{"n":1}"#,
        },
        Item {
            txn: "t-2",
            payload: r#"[1,"two",null]"#,
        },
        Item {
            txn: "",
            payload: r#""text""#,
        },
    ];

    // Act
    let (status, answer) = push_bin(&b, plain(TXN, &[("binq", "lane", items)])).await;
    let messages = b
        .pop_messages("/api/v1/pop/queue/binq/partition/lane?batch=10")
        .await;

    // Assert
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(statuses(&answer), ["queued", "queued", "queued"]);
    assert_eq!(answer[0]["transactionId"], "t-1");
    assert_eq!(
        answer[2]["transactionId"], answer[2]["messageId"],
        "minted from the id"
    );
    assert_eq!(
        payloads(&messages),
        [json!({"n": 1}), json!([1, "two", null]), json!("text")]
    );
    let txns: Vec<&Value> = messages.iter().map(|m| &m["transactionId"]).collect();
    assert_eq!(
        txns,
        [
            &answer[0]["transactionId"],
            &answer[1]["transactionId"],
            &answer[2]["transactionId"]
        ]
    );
    let offsets: Vec<&Value> = messages.iter().map(|m| &m["offset"]).collect();
    assert_eq!(offsets, [&json!(0), &json!(1), &json!(2)]);
}

/// A flag-8 group is stored as the client's compressed bytes, keeps the client's message ids,
/// and pops back as JSON with payloads, transaction ids and trace ids.
#[actix_rt::test]
async fn a_flag_8_group_is_stored_byte_for_byte_and_keeps_the_client_message_ids() {
    // Arrange
    let b = TestBroker::start().await;
    let mut frames: Vec<Frame> = (0..5)
        .map(|i| Frame::new(&format!("f-{i}"), &format!(r#"{{"i":{i}}}"#)))
        .collect();
    let trace = Uuid::new_v4();
    frames[2].flags = 1;
    frames[2].trace = Some(trace);
    let z = compress_frames(&frames);

    // Act
    let (status, answer) = push_bin(&b, framed(&[("zq", "p", 5, &z)])).await;
    let stored: Vec<u8> = b
        .sql()
        .await
        .query_one("SELECT blob FROM queen.log_segments", &[])
        .await
        .unwrap()
        .get(0);
    let messages = b
        .pop_messages("/api/v1/pop/queue/zq/partition/p?batch=10")
        .await;

    // Assert
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(statuses(&answer), vec!["queued"; 5]);
    assert_eq!(stored, z, "the group's bytes are stored as sent");
    let ids: Vec<String> = frames.iter().map(|f| f.id.to_string()).collect();
    let answered: Vec<&str> = answer
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["messageId"].as_str().unwrap())
        .collect();
    let popped: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(answered, ids);
    assert_eq!(popped, ids);
    let want: Vec<Value> = (0..5).map(|i| json!({ "i": i })).collect();
    assert_eq!(payloads(&messages), want);
    assert_eq!(messages[4]["transactionId"], "f-4");
    assert_eq!(messages[2]["traceId"], trace.to_string());
    assert_eq!(messages[1]["traceId"], Value::Null);
}

/// A zstd-compressed body (flag 1) with per-item transaction ids is stored like a plain one.
#[actix_rt::test]
async fn a_flag_1_compressed_body_is_decompressed_and_stored() {
    // Arrange
    let b = TestBroker::start().await;
    let items = (0..20)
        .map(|_| Item {
            txn: "",
            payload: r#"{"x":"yyyyyyyyyyyyyyyy"}"#,
        })
        .collect();

    // Act
    let (status, answer) = push_bin(&b, plain(ZSTD | TXN, &[("z1", "p", items)])).await;
    let messages = b
        .pop_messages("/api/v1/pop/queue/z1/partition/p?batch=50")
        .await;

    // Assert
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(statuses(&answer).len(), 20);
    assert_eq!(
        payloads(&messages),
        vec![json!({"x": "yyyyyyyyyyyyyyyy"}); 20]
    );
}

/// Flag 2 answers with totals: a transaction id repeated in the body counts as a duplicate.
#[actix_rt::test]
async fn a_flag_2_push_answers_with_totals_counting_repeats_as_duplicates() {
    // Arrange
    let b = TestBroker::start().await;
    let items = vec![
        Item {
            txn: "a",
            payload: "1",
        },
        Item {
            txn: "b",
            payload: "2",
        },
        Item {
            txn: "a",
            payload: "3",
        },
    ];

    // Act
    let (status, answer) = push_bin(&b, plain(COUNTS | TXN, &[("c2", "p", items)])).await;

    // Assert
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        answer,
        json!({"count": 3, "queued": 2, "duplicate": 1, "error": 0})
    );
}

/// Resending the identical bytes (a client retry) answers duplicates with the original ids
/// and stores nothing more, for flag 4 and for flag 8.
#[actix_rt::test]
async fn a_retry_of_identical_bytes_answers_duplicates_and_stores_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    let flag4 = plain(
        TXN,
        &[(
            "r",
            "p4",
            vec![
                Item {
                    txn: "x1",
                    payload: "{}",
                },
                Item {
                    txn: "x2",
                    payload: "{}",
                },
            ],
        )],
    );
    let frames = vec![Frame::new("y1", "1"), Frame::new("y2", "2")];
    let z = compress_frames(&frames);
    let flag8 = framed(&[("r", "p8", 2, &z)]);
    let (_, first4) = push_bin(&b, flag4.clone()).await;
    let (_, first8) = push_bin(&b, flag8.clone()).await;
    let before = segments(&b).await;

    // Act
    let (s4, again4) = push_bin(&b, flag4).await;
    let (s8, again8) = push_bin(&b, flag8).await;

    // Assert
    assert_eq!((s4, s8), (StatusCode::CREATED, StatusCode::CREATED));
    assert_eq!(statuses(&again4), ["duplicate", "duplicate"]);
    assert_eq!(statuses(&again8), ["duplicate", "duplicate"]);
    for (first, again) in [(&first4, &again4), (&first8, &again8)] {
        for k in 0..2 {
            assert_eq!(first[k]["messageId"], again[k]["messageId"]);
            assert_eq!(first[k]["offset"], again[k]["offset"]);
        }
    }
    assert_eq!(again8[1]["messageId"], frames[1].id.to_string());
    assert_eq!(segments(&b).await, before);
}

/// A flag-8 group whose transaction ids are partly stored already is rebuilt without them:
/// the new ones are queued with the client's ids, the old ones answer duplicate.
#[actix_rt::test]
async fn a_flag_8_group_meeting_stored_transaction_ids_stores_only_the_new_messages() {
    // Arrange
    let b = TestBroker::start().await;
    let old = Frame::new("dup", r#""old""#);
    let z_old = compress_frames(std::slice::from_ref(&old));
    let (status, _) = push_bin(&b, framed(&[("part", "p", 1, &z_old)])).await;
    assert_eq!(status, StatusCode::CREATED);
    let frames = vec![
        Frame::new("new-1", r#""a""#),
        Frame::new("dup", r#""again""#),
        Frame::new("new-2", r#""b""#),
    ];
    let z = compress_frames(&frames);

    // Act
    let (status, answer) = push_bin(&b, framed(&[("part", "p", 3, &z)])).await;
    let messages = b
        .pop_messages("/api/v1/pop/queue/part/partition/p?batch=10")
        .await;

    // Assert
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(statuses(&answer), ["queued", "duplicate", "queued"]);
    assert_eq!(answer[1]["messageId"], old.id.to_string());
    assert_eq!(answer[2]["messageId"], frames[2].id.to_string());
    assert_eq!(payloads(&messages), [json!("old"), json!("a"), json!("b")]);
    assert_eq!(messages[2]["id"], frames[2].id.to_string());
}

/// One body addressing several queues and partitions, a partition appearing twice, answers
/// in wire order and lands every message in its own partition in order.
#[actix_rt::test]
async fn a_body_mixing_queues_and_partitions_answers_in_wire_order() {
    // Arrange
    let b = TestBroker::start().await;
    let body = plain(
        TXN,
        &[
            (
                "qa",
                "p1",
                vec![
                    Item {
                        txn: "1",
                        payload: "1",
                    },
                    Item {
                        txn: "2",
                        payload: "2",
                    },
                ],
            ),
            (
                "qb",
                "p1",
                vec![Item {
                    txn: "3",
                    payload: "3",
                }],
            ),
            (
                "qa",
                "p2",
                vec![Item {
                    txn: "4",
                    payload: "4",
                }],
            ),
            (
                "qa",
                "p1",
                vec![Item {
                    txn: "5",
                    payload: "5",
                }],
            ),
        ],
    );
    let za = compress_frames(&[Frame::new("6", "6")]);
    let zb = compress_frames(&[Frame::new("7", "7"), Frame::new("8", "8")]);
    let framed_body = framed(&[("qb", "p1", 1, &za), ("qa", "p1", 2, &zb)]);

    // Act
    let (status, answer) = push_bin(&b, body).await;
    let (status8, answer8) = push_bin(&b, framed_body).await;
    let qa_p1 = b
        .pop_messages("/api/v1/pop/queue/qa/partition/p1?batch=10")
        .await;
    let qa_p2 = b
        .pop_messages("/api/v1/pop/queue/qa/partition/p2?batch=10")
        .await;
    let qb_p1 = b
        .pop_messages("/api/v1/pop/queue/qb/partition/p1?batch=10")
        .await;

    // Assert
    assert_eq!(
        (status, status8),
        (StatusCode::CREATED, StatusCode::CREATED),
        "{answer} {answer8}"
    );
    let txns: Vec<&str> = answer
        .as_array()
        .unwrap()
        .iter()
        .chain(answer8.as_array().unwrap())
        .map(|a| a["transactionId"].as_str().unwrap())
        .collect();
    assert_eq!(txns, ["1", "2", "3", "4", "5", "6", "7", "8"]);
    assert_eq!(
        payloads(&qa_p1),
        [json!(1), json!(2), json!(5), json!(7), json!(8)]
    );
    assert_eq!(payloads(&qa_p2), [json!(4)]);
    assert_eq!(payloads(&qb_p1), [json!(3), json!(6)]);
}

/// Every malformed body answers 400 with a JSON error and stores nothing, even when the
/// groups before the broken one are fine.
#[actix_rt::test]
async fn every_malformed_binary_body_is_a_json_400_and_stores_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    let (ok, _) = push_bin(
        &b,
        plain(
            TXN,
            &[(
                "m",
                "p",
                vec![Item {
                    txn: "seed",
                    payload: "{}",
                }],
            )],
        ),
    )
    .await;
    assert_eq!(ok, StatusCode::CREATED);
    let before = segments(&b).await;
    let good_group = |b: &mut Bytes| {
        b.str16("m").str16("p").u32(1).str16("t").bytes32(b"{}");
    };
    let good = Frame::new("g", "{}");
    let zgood = compress_frames(std::slice::from_ref(&good));
    let with_frames = |frames: &[Frame], n: u32| framed(&[("m", "p", n, &compress_frames(frames))]);
    let frame_bytes = |bytes: Vec<u8>| zstd::bulk::compress(&bytes, 1).unwrap();
    let inner = crate::support::qpb1::plain_groups(
        true,
        &[(
            "m",
            "p",
            vec![Item {
                txn: "t",
                payload: "{}",
            }],
        )],
    );

    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("magic QPB2", {
            let mut x = plain(TXN, &[]);
            x[3] = b'2';
            x
        }),
        ("magic QPBX", {
            let mut x = plain(TXN, &[]);
            x[3] = b'X';
            x
        }),
        ("unknown flag 16", Bytes::envelope(16).u32(0).build()),
        (
            "unknown flag 128",
            Bytes::envelope(0x80 | TXN).u32(0).build(),
        ),
        (
            "groups far beyond the body",
            Bytes::envelope(TXN).u32(u32::MAX).build(),
        ),
        (
            "n far beyond the body",
            Bytes::envelope(TXN)
                .u32(1)
                .str16("m")
                .str16("p")
                .u32(u32::MAX)
                .build(),
        ),
        (
            "payload length far beyond the body",
            Bytes::envelope(TXN)
                .u32(1)
                .str16("m")
                .str16("p")
                .u32(1)
                .str16("t")
                .u32(u32::MAX)
                .raw(b"{}")
                .build(),
        ),
        (
            "queue length beyond the body",
            Bytes::envelope(TXN).u32(1).u16(500).raw(b"m").build(),
        ),
        (
            "payload not JSON",
            Bytes::envelope(TXN)
                .u32(1)
                .str16("m")
                .str16("p")
                .u32(1)
                .str16("t")
                .bytes32(b"{nope")
                .build(),
        ),
        (
            "payload empty",
            Bytes::envelope(TXN)
                .u32(1)
                .str16("m")
                .str16("p")
                .u32(1)
                .str16("t")
                .bytes32(b"")
                .build(),
        ),
        (
            "queue not UTF-8",
            Bytes::envelope(TXN)
                .u32(1)
                .u16(2)
                .raw(&[0xff, 0xfe])
                .str16("p")
                .u32(0)
                .build(),
        ),
        (
            "empty queue name",
            Bytes::envelope(TXN)
                .u32(1)
                .str16("")
                .str16("p")
                .u32(0)
                .build(),
        ),
        ("trailing bytes", {
            let mut x = Bytes::envelope(TXN);
            x.u32(1);
            good_group(&mut x);
            x.raw(b"junk").build()
        }),
        ("good group then a broken one", {
            let mut x = Bytes::envelope(TXN);
            x.u32(2);
            good_group(&mut x);
            x.str16("m").str16("p").u32(1).str16("t").bytes32(b"{nope");
            x.build()
        }),
        (
            "raw_len one too many",
            Bytes::envelope(ZSTD | TXN)
                .u32(inner.len() as u32 + 1)
                .raw(&zstd::bulk::compress(&inner, 1).unwrap())
                .build(),
        ),
        (
            "raw_len one too few",
            Bytes::envelope(ZSTD | TXN)
                .u32(inner.len() as u32 - 1)
                .raw(&zstd::bulk::compress(&inner, 1).unwrap())
                .build(),
        ),
        (
            "raw_len far beyond the limit",
            Bytes::envelope(ZSTD | TXN)
                .u32(u32::MAX)
                .raw(&zstd::bulk::compress(&inner, 1).unwrap())
                .build(),
        ),
        (
            "zstd body garbage",
            Bytes::envelope(ZSTD | TXN)
                .u32(10)
                .raw(b"this is not zstd")
                .build(),
        ),
        (
            "zstd body then trailing bytes",
            Bytes::envelope(ZSTD | TXN)
                .u32(inner.len() as u32)
                .raw(&zstd::bulk::compress(&inner, 1).unwrap())
                .raw(b"xx")
                .build(),
        ),
        (
            "flag 8 zstd garbage",
            framed(&[("m", "p", 1, b"garbage bytes")]),
        ),
        (
            "flag 8 z_len beyond the body",
            Bytes::envelope(FRAMES)
                .u32(1)
                .str16("m")
                .str16("p")
                .u32(1)
                .u32(u32::MAX)
                .raw(&zgood)
                .build(),
        ),
        (
            "flag 8 zstd frame then trailing bytes",
            framed(&[("m", "p", 1, &[zgood.clone(), b"xx".to_vec()].concat())]),
        ),
        (
            "flag 8 without a recorded content size",
            framed(&[(
                "m",
                "p",
                1,
                &zstd::stream::encode_all(&good.encode()[..], 1).unwrap(),
            )]),
        ),
        (
            "flag 8 n larger than the frames",
            with_frames(std::slice::from_ref(&good), 2),
        ),
        (
            "flag 8 n smaller than the frames",
            with_frames(&[good.clone(), Frame::new("h", "{}")], 1),
        ),
        (
            "flag 8 payload not JSON",
            with_frames(&[Frame::new("j", "{bad")], 1),
        ),
        (
            "flag 8 empty transaction id",
            with_frames(&[Frame::new("", "{}")], 1),
        ),
        (
            "flag 8 nil message id",
            with_frames(
                &[Frame {
                    id: Uuid::nil(),
                    ..good.clone()
                }],
                1,
            ),
        ),
        (
            "flag 8 encrypted frame",
            with_frames(
                &[Frame {
                    flags: 4,
                    ..good.clone()
                }],
                1,
            ),
        ),
        (
            "flag 8 producer frame",
            with_frames(
                &[Frame {
                    flags: 2,
                    // u16 length + producer, then the payload.
                    payload: b"\x03\x00eve{}".to_vec(),
                    ..good.clone()
                }],
                1,
            ),
        ),
        (
            "flag 8 unknown frame flag",
            with_frames(
                &[Frame {
                    flags: 0x40,
                    ..good.clone()
                }],
                1,
            ),
        ),
        ("flag 8 body_len overflow", {
            let mut f = good.encode();
            f[..4].copy_from_slice(&u32::MAX.to_le_bytes());
            framed(&[("m", "p", 1, &frame_bytes(f))])
        }),
        ("flag 8 body_len one past the end", {
            let mut f = good.encode();
            let n = f.len() as u32 - 4 + 1;
            f[..4].copy_from_slice(&n.to_le_bytes());
            framed(&[("m", "p", 1, &frame_bytes(f))])
        }),
        (
            "flag 8 frame shorter than its id",
            framed(&[("m", "p", 1, &frame_bytes(vec![5, 0, 0, 0, 0, 1, 2, 3, 4]))]),
        ),
        ("flag 8 transaction id past the frame", {
            let mut f = good.encode();
            f[21] = 0xff;
            f[22] = 0xff;
            framed(&[("m", "p", 1, &frame_bytes(f))])
        }),
    ];
    // Truncated at every byte: a flag-4 body, a flag-8 body and a flag-1 body.
    for whole in [
        plain(
            TXN,
            &[(
                "m",
                "p",
                vec![Item {
                    txn: "t",
                    payload: r#"{"a":1}"#,
                }],
            )],
        ),
        framed(&[("m", "p", 1, &zgood)]),
        plain(
            ZSTD | TXN,
            &[(
                "m",
                "p",
                vec![Item {
                    txn: "t",
                    payload: "{}",
                }],
            )],
        ),
    ] {
        for cut in 0..whole.len() {
            cases.push(("truncated", whole[..cut].to_vec()));
        }
    }

    // Act
    let mut answers = Vec::new();
    for (name, body) in cases {
        let len = body.len();
        let (status, answer) = push_bin(&b, body).await;
        answers.push((name, len, status, answer));
    }

    // Assert
    for (name, len, status, answer) in &answers {
        assert_eq!(
            *status,
            StatusCode::BAD_REQUEST,
            "{name} ({len} bytes): {answer}"
        );
        assert!(
            answer["error"].is_string(),
            "{name} ({len} bytes): no JSON error: {answer}"
        );
    }
    assert_eq!(
        segments(&b).await,
        before,
        "a refused body stored something"
    );
}

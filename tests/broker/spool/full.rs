//! A full spool: the push that does not fit answers 503 with a JSON error saying so, and
//! nothing of it is stored, then or after the replay.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{assert_all, items, push, read_partition, spool_metric, wait_replayed};
use crate::support::TestBroker;

#[actix_rt::test]
async fn a_push_the_full_spool_cannot_take_answers_503_json_and_is_never_stored() {
    // Arrange: a spool of 2 KB, and push maintenance on.
    let b = TestBroker::start_with(&[("FILE_BUFFER_MAX_BYTES", "2048")]).await;
    let queue = "spool-full";
    let (status, _) = b
        .post("/api/v1/system/maintenance", &json!({"push": true}))
        .await;
    assert_eq!(status, StatusCode::OK);

    // Act: pushes of three messages until one is refused.
    let mut buffered = Vec::new();
    let refused = loop {
        let n = buffered.len() as u64;
        assert!(n < 300, "the 2 KB spool never filled");
        let (status, body) = push(&b.http, &b.base, &items(queue, "p", n..n + 3)).await;
        if status == StatusCode::CREATED {
            assert_all("buffered", &body);
            buffered.extend(n..n + 3);
            continue;
        }
        break (status, body, n);
    };
    let (_, _) = b
        .post("/api/v1/system/maintenance", &json!({"push": false}))
        .await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(30)).await;

    // Assert
    let (status, body, first_refused) = refused;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let text = body["error"].as_str().unwrap_or_default();
    assert!(
        text.contains("spool is full") && text.contains("FILE_BUFFER_MAX_BYTES"),
        "{body}"
    );
    assert!(!buffered.is_empty(), "not even one push fitted");
    let got = read_partition(&b.http, &b.base, queue, "p").await;
    assert_eq!(got, buffered, "stored: exactly what was answered buffered");
    assert!(!got.contains(&first_refused));
    assert!(spool_metric(&b.http, &b.base, "refusedFull").await >= 1);
    b.stop().await;
}

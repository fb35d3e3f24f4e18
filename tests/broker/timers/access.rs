//! Who sees what: tenants never see, cancel or receive each other's timers, and reads
//! need read-only while writes need read-write.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{pending, schedule};
use crate::support::caller::{tenant_claims, Caller};
use crate::support::tokens::{hs256, SECRET};
use crate::support::TestBroker;
use crate::tenants::HS256;

#[actix_rt::test]
async fn tenants_are_isolated_and_writes_need_read_write() {
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let umbrella = Caller::admin_of(&b.base, "umbrella");
    let reader = Caller::new(
        &b.base,
        &hs256(SECRET, &tenant_claims("r", Some("acme"), "read-only")),
    );
    let call = |op| json!({"operations": [op]});
    let (status, body) = acme
        .post(
            "/api/v1/timers",
            &call(schedule("tq", "k", json!(1), 60_000)),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (_, theirs) = umbrella.get("/api/v1/timers/tq/k").await;
    let (_, their_list) = umbrella.get("/api/v1/timers/tq").await;
    let (_, their_cancel) = umbrella.delete("/api/v1/timers/tq/k").await;
    let (read_status, mine) = reader.get("/api/v1/timers/tq/k").await;
    let (list_status, my_list) = reader.get("/api/v1/timers/tq").await;
    let (write_status, refused) = reader
        .post("/api/v1/timers", &call(schedule("tq", "k2", json!(1), 0)))
        .await;
    let (cancel_status, _) = reader.delete("/api/v1/timers/tq/k").await;

    assert_eq!(theirs["found"], false, "{theirs}");
    assert_eq!(their_list["rows"], json!([]), "{their_list}");
    assert_eq!(their_cancel["status"], "absent", "{their_cancel}");
    assert_eq!(read_status, StatusCode::OK, "{mine}");
    assert_eq!(mine["found"], true, "{mine}");
    assert_eq!(list_status, StatusCode::OK);
    assert_eq!(my_list["rows"][0]["timerKey"], "k", "{my_list}");
    assert_eq!(write_status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(cancel_status, StatusCode::FORBIDDEN);
    assert_eq!(pending(&b).await, 1);

    // The fire pushes into the scheduling tenant's queue only.
    let (_, now) = acme
        .post(
            "/api/v1/timers",
            &call(schedule("tq", "k", json!("due"), 0)),
        )
        .await;
    assert_eq!(now["results"][0]["status"], "rescheduled", "{now}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (status, _) = umbrella.get("/api/v1/pop/queue/tq?wait=false").await;
    assert_eq!(
        status,
        StatusCode::NO_CONTENT,
        "umbrella sees acme's message"
    );
    let (status, popped) = acme.get("/api/v1/pop/queue/tq?wait=false").await;
    assert_eq!(status, StatusCode::OK, "{popped}");
    assert_eq!(popped["messages"][0]["data"], "due", "{popped}");
}

//! The few wire calls the phases make (configure, pop, batch ack, metrics), with the
//! checks every caller wants.

use serde_json::{json, Value};
pub(crate) async fn configure(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
) -> anyhow::Result<()> {
    let response = http
        .post(format!("{base}/api/v1/configure"))
        .json(&json!({"queue": queue, "options": {}}))
        .send()
        .await?;
    anyhow::ensure!(
        response.status().is_success(),
        "configure answered {}",
        response.status()
    );
    Ok(())
}

/// The messages of one pop; empty on 204.
pub(crate) async fn pop(http: &reqwest::Client, url: &str) -> anyhow::Result<Vec<Value>> {
    let response = http.get(url).send().await?;
    match response.status().as_u16() {
        204 => Ok(Vec::new()),
        200 => match response.json::<Value>().await?["messages"].take() {
            Value::Array(messages) => Ok(messages),
            _ => Ok(Vec::new()),
        },
        status => anyhow::bail!("pop answered {status}: {}", response.text().await?),
    }
}

pub(crate) async fn metrics(http: &reqwest::Client, base: &str) -> anyhow::Result<Value> {
    Ok(http
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .json()
        .await?)
}

/// `after - before` for each numeric field of a flat counter object.
pub(crate) fn counter_delta(before: &Value, after: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (key, value) in after.as_object().into_iter().flatten() {
        if let (Some(a), Some(b)) = (value.as_i64(), before[key].as_i64()) {
            out.insert(key.clone(), json!(a - b));
        }
    }
    Value::Object(out)
}

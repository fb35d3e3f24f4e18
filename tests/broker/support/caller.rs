//! A caller of a broker with one bearer token: the tenant tests speak as two tenants to
//! the same brokers at once, so each tenant has its own client carrying its own token.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::read;
use super::tokens::{hs256, now, SECRET};

/// HS256 claims of an admin of `tenant` (no tenant claim when `None`), valid ten minutes.
pub fn tenant_claims(sub: &str, tenant: Option<&str>, role: &str) -> Value {
    let mut claims = json!({ "sub": sub, "role": role, "exp": now() + 600 });
    if let Some(tenant) = tenant {
        claims["tenant"] = json!(tenant);
    }
    claims
}

/// One token's client for one broker.
#[derive(Clone)]
pub struct Caller {
    /// `http://127.0.0.1:<port>` of the broker.
    pub base: String,
    /// A client sending the token with every request.
    pub http: reqwest::Client,
}

impl Caller {
    /// A caller of `base` sending `Authorization: Bearer <token>`.
    pub fn new(base: &str, token: &str) -> Self {
        let mut headers = reqwest::header::HeaderMap::new();
        let value = format!("Bearer {token}").parse().expect("a header value");
        headers.insert(reqwest::header::AUTHORIZATION, value);
        Caller {
            base: base.to_owned(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .pool_idle_timeout(Duration::from_secs(2))
                .default_headers(headers)
                .build()
                .expect("http client"),
        }
    }

    /// A caller of `base` as an admin of `tenant`, with an HS256 token under [`SECRET`].
    pub fn admin_of(base: &str, tenant: &str) -> Self {
        Self::new(
            base,
            &hs256(SECRET, &tenant_claims(tenant, Some(tenant), "admin")),
        )
    }

    /// The same token on another broker.
    pub fn on(&self, base: &str) -> Self {
        Caller {
            base: base.to_owned(),
            http: self.http.clone(),
        }
    }

    /// Any request with an optional JSON body; status and parsed body (Null when empty).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path} on {}: {e}", self.base));
        read(response).await
    }

    /// POSTs raw bytes with a content type (a binary push); status and parsed body.
    pub async fn post_bytes(
        &self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path} on {}: {e}", self.base));
        read(response).await
    }

    /// GETs the raw answer (a framed pop); status and bytes.
    pub async fn get_bytes(&self, path: &str) -> (StatusCode, Vec<u8>) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path} on {}: {e}", self.base));
        let status = response.status();
        let bytes = response.bytes().await.expect("read the answer");
        (status, bytes.to_vec())
    }

    /// GET.
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None).await
    }

    /// POST with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body)).await
    }

    /// DELETE.
    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::DELETE, path, None).await
    }

    /// Pushes payloads to one partition; asserts every item was queued.
    pub async fn push(&self, queue: &str, partition: &str, payloads: &[Value]) {
        let items: Vec<Value> = payloads
            .iter()
            .map(|p| json!({"queue": queue, "partition": partition, "payload": p}))
            .collect();
        let (status, body) = self.post("/api/v1/push", &json!({ "items": items })).await;
        assert!(
            status.is_success(),
            "push on {} answered {status}: {body}",
            self.base
        );
        for answer in body.as_array().expect("push answers an array") {
            assert_eq!(answer["status"], "queued", "{answer}");
        }
    }

    /// Pops; the messages (empty on 204), panicking on any other status.
    pub async fn pop(&self, path_and_query: &str) -> Vec<Value> {
        let (status, body) = self.get(path_and_query).await;
        match status {
            StatusCode::NO_CONTENT => Vec::new(),
            StatusCode::OK => body["messages"].as_array().expect("messages").clone(),
            other => panic!(
                "pop {path_and_query} on {} answered {other}: {body}",
                self.base
            ),
        }
    }
}

//! The three pop routes: parse the query into a [`PopRequest`], run it, answer `200` with the
//! JSON delivery (or the `QPF1` framed one with `frames=true`) or `204` with no body at all.

use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};

use super::binary::qpf1;
use super::query::Query;
use super::{ApiError, AppState};
use crate::domain::{ConsumerGroup, PartitionName, QueueName};
use crate::log::pop::{pop, PopRequest, Scope, SubscriptionMode};

mod render;

/// Default message budget of a pop (the seed's).
const DEFAULT_BATCH: u64 = 200;
/// Largest accepted budget: one answer is built in memory.
const MAX_BATCH: u64 = 100_000;
/// Largest number of partitions one pop may claim.
const MAX_PARTITIONS: u64 = 10_000;
/// Longest accepted long-poll deadline (one hour).
const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// Longest accepted lease (one day).
const MAX_LEASE_SECONDS: u64 = 86_400;

/// `GET /api/v1/pop/queue/{queue}`: any partition of a queue.
pub async fn pop_queue(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let queue =
        QueueName::parse(path.into_inner()).map_err(|e| ApiError::bad_request(e.to_string()))?;
    serve(&state, &req, Scope::Queue(queue)).await
}

/// `GET /api/v1/pop/queue/{queue}/partition/{partition}`: one named partition.
pub async fn pop_partition(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (queue, partition) = path.into_inner();
    let queue = QueueName::parse(queue).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let partition =
        PartitionName::parse(partition).map_err(|e| ApiError::bad_request(e.to_string()))?;
    serve(&state, &req, Scope::Partition(queue, partition)).await
}

/// `GET /api/v1/pop?namespace=&task=`: any matching queue; a bare pop is a 400.
pub async fn pop_discover(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let namespace = query.text("namespace").map(str::to_owned);
    let task = query.text("task").map(str::to_owned);
    if namespace.is_none() && task.is_none() {
        return Err(ApiError::bad_request(
            "a pop without a queue needs a namespace or a task",
        ));
    }
    serve(&state, &req, Scope::Discover { namespace, task }).await
}

async fn serve(
    state: &AppState,
    req: &HttpRequest,
    scope: Scope,
) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let request = parse_request(&query, scope, state.broker.config.pop.default_timeout)?;
    let framed = query.flag("frames", false)?;
    let delivery = pop(&state.broker, &state.tenant(req), &request).await?;
    match delivery {
        None => Ok(HttpResponse::NoContent().finish()),
        Some(delivery) if framed => {
            let body = qpf1::framed_answer(&delivery, request.group.as_str())
                .map_err(|e| ApiError::Corrupt(Box::new(e)))?;
            Ok(HttpResponse::Ok()
                .content_type(qpf1::CONTENT_TYPE)
                .body(body))
        }
        Some(delivery) => {
            let body = render::json_answer(&delivery, request.group.as_str())
                .map_err(|e| ApiError::Corrupt(Box::new(e)))?;
            Ok(HttpResponse::Ok()
                .content_type("application/json")
                .body(body))
        }
    }
}

fn parse_request(
    q: &Query,
    scope: Scope,
    default_timeout: Duration,
) -> Result<PopRequest, ApiError> {
    let group = ConsumerGroup::parse(q.text("consumerGroup"))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let subscription_from = match q.text("subscriptionFrom") {
        None => None,
        Some("now") => None,
        Some(raw) => Some(parse_time(raw).ok_or_else(|| {
            ApiError::bad_request(format!(
                "subscriptionFrom must be 'now' or an ISO-8601 timestamp, got {raw:?}"
            ))
        })?),
    };
    let subscription_mode = match (q.text("subscriptionMode"), q.text("subscriptionFrom")) {
        (_, Some("now")) => SubscriptionMode::New,
        (None | Some("all" | "from_beginning"), _) => SubscriptionMode::All,
        (Some("new" | "new-only"), _) => SubscriptionMode::New,
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "subscriptionMode must be all or new, got {other:?}"
            )))
        }
    };
    let timeout_default = u64::try_from(default_timeout.as_millis()).unwrap_or(u64::MAX);
    Ok(PopRequest {
        scope,
        group,
        batch: q.number("batch", DEFAULT_BATCH, 1, MAX_BATCH)? as u32,
        partitions: q.number("partitions", 1, 1, MAX_PARTITIONS)? as u32,
        wait: q.flag("wait", false)?,
        timeout: Duration::from_millis(q.number("timeout", timeout_default, 0, MAX_TIMEOUT_MS)?),
        auto_ack: q.flag("autoAck", false)?,
        lease_seconds: match q.text("leaseSeconds") {
            None => None,
            Some(_) => Some(q.number("leaseSeconds", 0, 1, MAX_LEASE_SECONDS)? as i32),
        },
        subscription_mode,
        subscription_from,
    })
}

fn parse_time(raw: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|n| n.and_utc())
        })
}

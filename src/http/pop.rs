//! The three pop routes: parse the query into a [`PopRequest`], run it, answer `200` with the
//! JSON delivery (or the `QPF1` framed one with `frames=true`) or `204` with no body at all
//! (a `200` with the echoes instead when the request asked for conflation or autopilot).
//!
//! The answer is rendered before an auto-ack claim commits (a failed render rolls it back),
//! and a leased delivery that cannot be rendered in full is given back (see
//! `log::pop::unrenderable`) and answered with what can be.

use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};

use super::binary::qpf1;
use super::error::ApiError;
use super::query::Query;
use super::state::AppState;
use crate::config::LimitsConfig;
use crate::domain::{ConsumerGroup, PartitionName, QueueName, Tenant};
use crate::log::groups::conflation_policy;
use crate::log::pop::{pop, unrenderable, Claim, Delivery, PopRequest, Scope, SubscriptionMode};
use crate::segment::Codec;
use echo::{Autopilot, Echo, AUTOPILOT_BATCH, AUTOPILOT_PARTITIONS};

mod ceilings;
mod echo;
pub mod headers;
mod render;

/// The codec of segments holding sealed payloads, which never ship framed.
const SEALED: i16 = Codec::SealedZstd as i16;

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
#[utoipa::path(
    get,
    path = "/api/v1/pop/queue/{queue}",
    tag = "messages",
    params(crate::http::openapi::params::PopQuery, ("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)")),
    responses(
        (status = 200, description = "messages", body = Object),
        (status = 204, description = "nothing to pop"),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
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
#[utoipa::path(
    get,
    path = "/api/v1/pop/queue/{queue}/partition/{partition}",
    tag = "messages",
    params(crate::http::openapi::params::PopQuery, ("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)"), ("partition" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Partition name (at most 512 bytes)")),
    responses(
        (status = 200, description = "messages", body = Object),
        (status = 204, description = "nothing to pop"),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
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
#[utoipa::path(
    get,
    path = "/api/v1/pop",
    tag = "messages",
    params(crate::http::openapi::params::PopQuery),
    responses(
        (status = 200, description = "messages", body = Object),
        (status = 204, description = "nothing to pop"),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn pop_discover(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    // The parsed query (a map of owned strings) is not kept while the pop waits.
    let (namespace, task) = {
        let query = Query::parse(req.query_string())?;
        let owned = |name| query.text(name).map(str::to_owned);
        (owned("namespace"), owned("task"))
    };
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
    // The parsed query (a map of owned strings) lives only while the request is read: a
    // parked pop keeps what it waits with, not its query (README, "Parked long-polls").
    let (request, asked, framed) = {
        let query = Query::parse(req.query_string())?;
        let config = &state.broker.config;
        let (request, asked) =
            parse_request(&query, scope, config.pop.default_timeout, &config.limits)?;
        (request, asked, query.flag("frames", false)?)
    };
    let tenant = state.tenant(req);
    let mut echo = Echo::default();
    if asked.conflation {
        let queue = match &request.scope {
            Scope::Queue(queue) | Scope::Partition(queue, _) => queue,
            Scope::Discover { .. } => {
                return Err(ApiError::bad_request(
                    "conflation needs a queue in the path",
                ))
            }
        };
        echo.conflation = Some(
            Box::pin(conflation_policy(
                &state.broker,
                &tenant,
                queue,
                &request.group,
                request.subscription_mode,
                request.subscription_from,
            ))
            .await?,
        );
    }
    let claim = pop(&state.broker, &tenant, &request).await?;
    let delivered: usize = claim.as_ref().map_or(0, |c| {
        c.delivery.slices.iter().map(|s| s.take as usize).sum()
    });
    echo.autopilot = asked
        .autopilot
        .map(|knobs| knobs.advise(delivered, state.broker.config.pop.wait_max));
    let Some(claim) = claim else {
        if echo.needs_body() {
            return Ok(HttpResponse::Ok()
                .content_type("application/json")
                .body(echo.empty_answer(request.group.as_str())));
        }
        return Ok(HttpResponse::NoContent().finish());
    };
    let answer = Answer {
        group: request.group.as_str(),
        framed,
        echo: &echo,
        state,
    };
    // Boxed: a parked pop keeps this future, which then need not be sized for the
    // answer's state (README, "Parked long-polls").
    Box::pin(deliver(&answer, claim, &tenant, &request)).await
}

/// Renders a claim's delivery and commits it; a delivery that cannot be rendered in full
/// is given back and answered with what can be.
async fn deliver(
    answer: &Answer<'_>,
    claim: Claim<'_>,
    tenant: &Tenant,
    request: &PopRequest,
) -> Result<HttpResponse, ApiError> {
    let state = answer.state;
    match answer.render(&claim.delivery) {
        Ok(response) => {
            Box::pin(claim.commit()).await?;
            Ok(response)
        }
        Err(error) => {
            let delivery = Box::pin(claim.abandon()).await?;
            if request.auto_ack {
                return Err(ApiError::Corrupt(error));
            }
            let key = state.broker.config.push.payload_key.as_ref();
            let bad = unrenderable::find(&delivery, key);
            let rest = Box::pin(unrenderable::give_back(
                &state.broker,
                tenant,
                &request.group,
                delivery,
                &bad,
            ))
            .await?;
            if rest.slices.is_empty() || bad.is_empty() {
                return Err(ApiError::Corrupt(error));
            }
            answer.render(&rest).map_err(ApiError::Corrupt)
        }
    }
}

/// How one pop's answer is rendered.
struct Answer<'a> {
    group: &'a str,
    framed: bool,
    echo: &'a Echo,
    state: &'a AppState,
}

impl Answer<'_> {
    fn render(&self, delivery: &Delivery) -> Result<HttpResponse, render::RenderError> {
        // Sealed payloads must be opened first: such a delivery answers JSON (the contract
        // allows it; a client fails a framed answer carrying frame flag 4).
        if self.framed && !delivery.slices.iter().any(|s| s.codec == SEALED) {
            let body = qpf1::framed_answer(delivery, self.group, &self.echo.own_keys())?;
            return Ok(HttpResponse::Ok()
                .content_type(qpf1::CONTENT_TYPE)
                .body(body));
        }
        let key = self.state.broker.config.push.payload_key.as_ref();
        let body = render::json_answer(delivery, self.group, self.echo, key)?;
        Ok(HttpResponse::Ok()
            .content_type("application/json")
            .body(body))
    }
}

/// What the request asked the broker to echo.
struct Asked {
    conflation: bool,
    autopilot: Option<Autopilot>,
}

fn parse_request(
    q: &Query,
    scope: Scope,
    default_timeout: Duration,
    limits: &LimitsConfig,
) -> Result<(PopRequest, Asked), ApiError> {
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
    let auto_ack = q.flag("autoAck", false)?;
    let conflation = q.flag("conflation", false)?;
    if conflation && group.is_queue_mode() {
        return Err(ApiError::bad_request(
            "conflation requires a consumerGroup: it is a policy of the group",
        ));
    }
    if conflation && auto_ack {
        return Err(ApiError::bad_request(
            "conflation cannot be combined with autoAck",
        ));
    }
    // Autopilot picks whichever knob the caller left out; the caller's own values stand.
    let autopilot = q.flag("autopilot", false)?;
    let default_partitions = match (&scope, autopilot) {
        (Scope::Partition(..), _) | (_, false) => 1,
        (_, true) => u64::from(AUTOPILOT_PARTITIONS),
    };
    let default_batch = if autopilot {
        u64::from(AUTOPILOT_BATCH)
    } else {
        DEFAULT_BATCH
    };
    let (default_batch, default_timeout) =
        ceilings::defaults(limits, default_batch, default_timeout);
    let batch = q.number("batch", default_batch, 1, MAX_BATCH)? as u32;
    let partitions = q.number("partitions", default_partitions, 1, MAX_PARTITIONS)? as u32;
    let timeout_default = u64::try_from(default_timeout.as_millis()).unwrap_or(u64::MAX);
    let request = PopRequest {
        scope,
        group,
        batch,
        partitions,
        wait: q.flag("wait", false)?,
        timeout: Duration::from_millis(q.number("timeout", timeout_default, 0, MAX_TIMEOUT_MS)?),
        auto_ack,
        lease_seconds: match q.text("leaseSeconds") {
            None => None,
            Some(_) => Some(q.number("leaseSeconds", 0, 1, MAX_LEASE_SECONDS)? as i32),
        },
        subscription_mode,
        subscription_from,
    };
    ceilings::check(limits, &request)?;
    let asked = Asked {
        conflation,
        autopilot: autopilot.then_some(Autopilot {
            partitions,
            batch,
            wait_ms: 0,
        }),
    };
    Ok((request, asked))
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

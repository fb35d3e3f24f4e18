//! The error envelope of `POST /api/v1/kv` and `POST /api/v1/locks`: `{"error": <stable
//! code>, "reason": <identifier>, "detail": <prose>}`, the shape the published client reads
//! for its tier-3 routes (it branches on `error`, and keeps `reason` and `detail` for the
//! caller). Both routes answer it, so it is one type.
//!
//! A call over the broker's limit of concurrent database work (no limiter permit within the
//! pool timeout) answers 429 `overloaded` with `Retry-After`, which the client retries in
//! place; nothing was applied. A 5xx is answered only when nothing of the batch was applied, since the client sends a
//! call again after a 5xx and an `incr` must not count twice; a batch whose commit is in
//! doubt answers 409 `kv_outcome_unknown`, which the client does not resend.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use tracing::{error, warn};

use crate::db::kv::KvApplyError;
use crate::domain::kv::KvInputError;
use crate::domain::locks::LocksInputError;
use crate::http::error::ApiError;

/// A KV or locks call that ends in an error answer; nothing of it was applied unless it
/// says so.
#[derive(Debug, thiserror::Error)]
#[error("{error}: {detail}")]
pub struct KvError {
    status: StatusCode,
    error: &'static str,
    reason: &'static str,
    detail: String,
}

impl KvError {
    fn new(status: StatusCode, error: &'static str, reason: &'static str, detail: String) -> Self {
        KvError {
            status,
            error,
            reason,
            detail,
        }
    }

    /// A malformed call: 400.
    pub fn bad_request(reason: &'static str, detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            reason,
            detail.into(),
        )
    }

    /// A caller whose role may read but not write: 403.
    pub fn read_only(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "read_write_required",
            detail.into(),
        )
    }
}

impl From<KvInputError> for KvError {
    fn from(e: KvInputError) -> Self {
        if e.too_large {
            Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                e.reason,
                e.detail,
            )
        } else {
            Self::new(StatusCode::BAD_REQUEST, "bad_request", e.reason, e.detail)
        }
    }
}

impl From<LocksInputError> for KvError {
    fn from(e: LocksInputError) -> Self {
        Self::bad_request(e.reason, e.detail)
    }
}

impl From<ApiError> for KvError {
    /// The body reader's errors: a body over the limit, or a broken stream.
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::TooLarge { .. } => Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                "body_too_large",
                e.to_string(),
            ),
            ApiError::Db(db) => KvError::from(KvApplyError::NotApplied(db)),
            other => Self::new(
                other.status_code(),
                "bad_request",
                "body",
                other.to_string(),
            ),
        }
    }
}

impl From<KvApplyError> for KvError {
    fn from(e: KvApplyError) -> Self {
        match e {
            KvApplyError::NotApplied(crate::db::DbError::PoolExhausted) => {
                warn!("kv or locks call refused: no limiter permit within the pool timeout");
                Self::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "overloaded",
                    "busy",
                    "the broker has as many database calls in flight as it allows; nothing \
                     was applied; retry after the Retry-After seconds"
                        .into(),
                )
            }
            KvApplyError::NotApplied(db) => {
                error!(error = ?db, "kv or locks call failed; nothing applied");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "database",
                    "the database could not take the call; nothing was applied".into(),
                )
            }
            KvApplyError::Unreadable(what) => {
                error!(what, "kv call's answer could not be read");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "unreadable_answer",
                    format!("the database's answer could not be read: {what}"),
                )
            }
            KvApplyError::InDoubt(db) => {
                error!(error = ?db, "kv or locks call lost its connection; outcome unknown");
                Self::new(
                    StatusCode::CONFLICT,
                    "kv_outcome_unknown",
                    "connection_lost",
                    "the connection to the database broke after the call was sent: it may \
                     or may not have been applied; read the keys before sending it again"
                        .into(),
                )
            }
        }
    }
}

impl ResponseError for KvError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut answer = HttpResponse::build(self.status);
        if matches!(
            self.status,
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
        ) {
            answer.insert_header((header::RETRY_AFTER, "1"));
        }
        answer.json(json!({
            "error": self.error,
            "reason": self.reason,
            "detail": self.detail,
        }))
    }
}

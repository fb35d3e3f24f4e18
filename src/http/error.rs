//! The one place that turns failures into status codes and bodies.
//!
//! Envelopes follow the wire contract: `{"error": "<text>"}`. A database outage (a lost or
//! refused connection, the server shutting down or starting) is a 503 whose text says
//! "connection", because the published clients retry 5xx and their consume loop keeps
//! polling on that word; the full cause chain is logged here and never sent to the client. A value
//! PostgreSQL refuses as data (SQLSTATE class 22) is the client's mistake: a 400; a creation
//! over a tenant limit (SQLSTATE `QLIMT`) is a 403 `{"error", "code": "tenant_limit"}`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use tracing::{error, warn};

use crate::db::DbError;
use crate::log::push::error::PushError;
use crate::log::transaction::TransactionError;

/// A request that ends in an error answer.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Malformed input: 400, nothing changed.
    #[error("{0}")]
    BadRequest(String),
    /// A body over the configured limit: 413.
    #[error("request body exceeds {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// No route for this path: 404 `no_such_route`.
    #[error("no_such_route")]
    NoRoute {
        /// The path asked for.
        path: String,
    },
    /// A named thing (queue, message, group) that does not exist: 404 with this text.
    #[error("{0}")]
    NotFound(String),
    /// A request that conflicts with the current state (a live lease): 409 with this text.
    #[error("{0}")]
    Conflict(String),
    /// No valid bearer token with authentication on: 401 with this text.
    #[error("{0}")]
    Unauthorized(String),
    /// A valid token without the role the route needs: 403 with this text.
    #[error("{0}")]
    Forbidden(String),
    /// More than the caller's tenant may create or ask for (`QUEEN_TENANT_MAX_*`): 403
    /// `{"error": <which limit>, "code": "tenant_limit"}`, nothing changed.
    #[error("{0}")]
    TenantLimit(String),
    /// This node cannot take the request now, though the request is sound (the push spool
    /// is full or its disk failed while the database is away, or an append that cannot be
    /// spooled would overtake what the spool holds): 503 with this text and
    /// `Retry-After`, which clients retry.
    #[error("{0}")]
    Unavailable(String),
    /// A route that exists for other methods: 405.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The database failed.
    #[error("database error")]
    Db(#[from] DbError),
    /// This node lacks a setting the request needs (an encryption key): a 500 saying so.
    #[error("{0}")]
    Misconfigured(String),
    /// Stored data could not be read back (a corrupt segment).
    #[error("stored data could not be read")]
    Corrupt(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    /// A 400 with the given text.
    pub fn bad_request(text: impl Into<String>) -> Self {
        ApiError::BadRequest(text.into())
    }
}

impl From<crate::domain::LimitError> for ApiError {
    fn from(e: crate::domain::LimitError) -> Self {
        ApiError::bad_request(e.to_string())
    }
}

impl From<PushError> for ApiError {
    fn from(e: PushError) -> Self {
        match e {
            PushError::Db(db) => ApiError::Db(db),
            PushError::Frame { .. } => ApiError::BadRequest(e.to_string()),
            PushError::Blob(b) => ApiError::Corrupt(Box::new(b)),
            PushError::NoKey { .. } => ApiError::Misconfigured(e.to_string()),
            PushError::WindowRace { .. } => ApiError::Conflict(e.to_string()),
            // Nothing was written: answered like an exhausted pool, which clients retry.
            PushError::Stopped => ApiError::Db(crate::db::DbError::PoolExhausted),
        }
    }
}

impl From<crate::log::spool::intake::IntakeError> for ApiError {
    fn from(e: crate::log::spool::intake::IntakeError) -> Self {
        use crate::log::spool::{intake::IntakeError, SpoolError};
        match e {
            IntakeError::Push(push) => ApiError::from(push),
            IntakeError::Spool(SpoolError::Record(r)) => ApiError::BadRequest(r.to_string()),
            IntakeError::Spool(
                spool @ (SpoolError::Full { .. } | SpoolError::Io(_) | SpoolError::Stopped),
            ) => ApiError::Unavailable(spool.to_string()),
            IntakeError::NoSpool => ApiError::Unavailable(e.to_string()),
        }
    }
}

impl From<TransactionError> for ApiError {
    fn from(e: TransactionError) -> Self {
        match e {
            TransactionError::Db(db) => ApiError::Db(db),
            TransactionError::Push(push) => ApiError::from(push),
            TransactionError::Held(held) => ApiError::Unavailable(held.to_string()),
            TransactionError::CommitInDoubt(_) => ApiError::Conflict(format!(
                "{e}; the bundle may have been applied: read before sending it again"
            )),
            e @ (TransactionError::KvAnswer | TransactionError::TimersAnswer) => {
                ApiError::Corrupt(Box::new(e))
            }
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::NoRoute { .. } => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Db(db) if rejected_input(db).is_some() => StatusCode::BAD_REQUEST,
            ApiError::TenantLimit(_) => StatusCode::FORBIDDEN,
            ApiError::Db(db) if db.tenant_limit().is_some() => StatusCode::FORBIDDEN,
            ApiError::Db(DbError::Schema { .. }) | ApiError::Corrupt(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            ApiError::Db(db) if is_outage(db) || db.is_transient() => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Db(_) | ApiError::Misconfigured(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = match self {
            ApiError::BadRequest(text) | ApiError::NotFound(text) | ApiError::Conflict(text) => {
                json!({ "error": text })
            }
            ApiError::Unauthorized(text) => {
                // RFC 6750: a 401 names the scheme the client should use.
                return HttpResponse::Unauthorized()
                    .insert_header((actix_web::http::header::WWW_AUTHENTICATE, "Bearer"))
                    .json(json!({ "error": text, "code": "unauthorized" }));
            }
            ApiError::Forbidden(text) => json!({ "error": text, "code": "forbidden" }),
            ApiError::Unavailable(text) => {
                warn!(error = %text, "request refused");
                return HttpResponse::ServiceUnavailable()
                    .insert_header((actix_web::http::header::RETRY_AFTER, "1"))
                    .json(json!({ "error": text }));
            }
            ApiError::TooLarge { .. } | ApiError::MethodNotAllowed => {
                json!({ "error": self.to_string() })
            }
            ApiError::NoRoute { path } => json!({ "error": "no_such_route", "path": path }),
            ApiError::TenantLimit(text) => json!({ "error": text, "code": "tenant_limit" }),
            ApiError::Db(db) if db.tenant_limit().is_some() => {
                let text = db.tenant_limit().unwrap_or_default();
                json!({ "error": text, "code": "tenant_limit" })
            }
            ApiError::Db(db) if rejected_input(db).is_some() => {
                let text = rejected_input(db).unwrap_or_default();
                warn!(error = %text, "input refused by the database");
                json!({ "error": format!("invalid input: {text}") })
            }
            ApiError::Db(db) => {
                let text = match db {
                    DbError::PoolExhausted => "pool",
                    DbError::StatementTimeout { .. } => "database timeout",
                    e if e.is_connection_problem() => "database connection error",
                    e if e.is_transient() => TRANSIENT,
                    _ => "database error",
                };
                if matches!(db, DbError::PoolExhausted) {
                    warn!(error = %db, "request refused");
                } else if db.is_transient() {
                    // Handled: the client retries; the cause (SQLSTATE, text) stays logged.
                    warn!(error = ?db, "request rolled back by a transient database error");
                } else {
                    error!(error = ?db, "request failed");
                }
                if is_outage(db) || db.is_transient() {
                    return HttpResponse::ServiceUnavailable()
                        .insert_header((actix_web::http::header::RETRY_AFTER, "1"))
                        .json(json!({ "error": text }));
                }
                json!({ "error": text })
            }
            ApiError::Misconfigured(text) => {
                error!(error = %text, "request needs a setting this node lacks");
                json!({ "error": text })
            }
            ApiError::Corrupt(source) => {
                error!(error = ?source, "stored data could not be read");
                json!({ "error": "internal error: stored data could not be read" })
            }
        };
        HttpResponse::build(self.status_code()).json(body)
    }
}

/// The 503 text of a transient database error ([`DbError::is_transient`]): nothing was
/// applied. It says "connection" because the published clients' consume loop keeps
/// polling on that word (wire contract, 3.1) and raises on any other 5xx text.
const TRANSIENT: &str = "transient database conflict, nothing applied: retry (connection kept)";

/// A failure of the database's availability rather than of the request or of load: the
/// connection was lost or refused. An exhausted pool stays a 500 `pool` (the seed's
/// answer for load).
fn is_outage(db: &DbError) -> bool {
    db.is_outage()
}

/// PostgreSQL's text when it refused a value a request carried: SQLSTATE class 22 (data
/// exception: a NUL character in text, a number out of a column's range). Such input is the
/// client's mistake, so it answers 400 rather than 500; edge checks should catch it first.
fn rejected_input(db: &DbError) -> Option<String> {
    let DbError::Query { source, .. } = db else {
        return None;
    };
    let error = source.as_db_error()?;
    error
        .code()
        .code()
        .starts_with("22")
        .then(|| error.message().to_owned())
}

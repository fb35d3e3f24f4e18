//! The tier 2 admin endpoints (wire contract §4): consumer groups, the dead-letter queue and
//! message retry, resources, messages, status and analytics, traces. One file per route
//! family; this file holds their routes. `input` reads names, ids and timestamps,
//! `stored` reads messages out of segment blobs.
//!
//! Every handler parses its input before touching the database, so bad input is a 400 with
//! nothing changed; unknown things are 404s whose texts the contract fixes.

pub mod dlq;
pub mod groups;
pub mod kv;
pub mod messages;
pub mod resources;
pub mod status;
pub mod traces;

mod input;
mod stored;

use actix_web::web;

use super::fallback::method_not_allowed;
pub(crate) use input::{
    group_name, optional_timestamp, partition_id, queue_name, timestamp, transaction_id,
};
pub(crate) use stored::{frame_at, iso};

/// The admin routes. Registered before the core routes' default service; the fixed
/// `lagging` path is registered before `{group}` so it is not read as a group name.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/v1/consumer-groups")
            .route(web::get().to(groups::list))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/lagging")
            .route(web::get().to(groups::lagging))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}")
            .route(web::get().to(groups::detail))
            .route(web::delete().to(groups::delete))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}/queues/{queue}")
            .route(web::delete().to(groups::delete_for_queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}/subscription")
            .route(web::post().to(groups::subscription))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}/queues/{queue}/seek")
            .route(web::post().to(groups::seek))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/dlq")
            .route(web::get().to(dlq::list))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/messages/{partition_id}/{transaction_id}/retry")
            .route(web::post().to(dlq::retry))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/messages")
            .route(web::get().to(messages::list))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/messages/{partition_id}/{transaction_id}")
            .route(web::get().to(messages::detail))
            .route(web::delete().to(messages::delete))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/overview")
            .route(web::get().to(resources::overview))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/queues")
            .route(web::get().to(resources::queues))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/queues/{queue}")
            .route(web::get().to(resources::queue))
            .route(web::delete().to(resources::delete_queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/queues/{queue}/depth")
            .route(web::get().to(resources::depth))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/partitions")
            .route(web::get().to(resources::partitions))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/kv")
            .route(web::get().to(kv::namespaces))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/kv/{namespace}")
            .route(web::get().to(kv::keys))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/namespaces")
            .route(web::get().to(resources::namespaces))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/tasks")
            .route(web::get().to(resources::tasks))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status")
            .route(web::get().to(status::status))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status/queues")
            .route(web::get().to(status::queues))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status/queues/{queue}")
            .route(web::get().to(status::queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status/analytics")
            .route(web::get().to(status::analytics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/stats/refresh")
            .route(web::post().to(status::refresh_stats))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/analytics/system-metrics")
            .route(web::get().to(status::system_metrics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/analytics/worker-metrics")
            .route(web::get().to(status::worker_metrics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces")
            .route(web::post().to(traces::add))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces/names")
            .route(web::get().to(traces::names))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces/by-name/{name}")
            .route(web::get().to(traces::by_name))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces/{partition_id}/{transaction_id}")
            .route(web::get().to(traces::for_message))
            .default_service(web::to(method_not_allowed)),
    );
}

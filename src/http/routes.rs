//! The route table: every route, in the order actix tries them (the admin family's own
//! table is `admin::routes`).

use actix_web::guard;
use actix_web::http::Method;
use actix_web::{web, Route};

use super::fallback::{method_not_allowed, no_route};
use super::{
    ack, admin, configure, console, ephemeral, health, kv, lease, locks, metrics, openapi, pop,
    push, reads, streams, system, timers, timing, transaction,
};

/// The route table.
pub fn routes(cfg: &mut web::ServiceConfig) {
    // The data path first: actix tries resources in registration order, and the admin
    // family's many templated paths cost a regex match each (seen in a profile of push).
    cfg.service(
        web::resource("/api/openapi.json")
            .route(web::get().to(openapi::serve))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(["/health", "/health/ready"])
            .route(web::get().to(health::health))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/health/live")
            .route(web::get().to(health::live))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/push")
            .app_data(timing::Route("/api/v1/push"))
            .route(web::post().to(push::push))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/pop")
            .app_data(timing::Route("/api/v1/pop"))
            .route(long_poll_get().to(pop::pop_discover))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/pop/queue/{queue}")
            .app_data(timing::Route("/api/v1/pop/queue/{queue}"))
            .route(long_poll_get().to(pop::pop_queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/pop/queue/{queue}/partition/{partition}")
            .app_data(timing::Route(
                "/api/v1/pop/queue/{queue}/partition/{partition}",
            ))
            .route(long_poll_get().to(pop::pop_partition))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ack")
            .app_data(timing::Route("/api/v1/ack"))
            .route(web::post().to(ack::ack_one))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ack/batch")
            .app_data(timing::Route("/api/v1/ack/batch"))
            .route(web::post().to(ack::ack_batch))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/transaction")
            .route(web::post().to(transaction::transaction))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/fetch")
            .app_data(timing::Route("/api/v1/fetch"))
            .route(web::post().to(reads::fetch::fetch))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/partitions/changed")
            .app_data(timing::Route("/api/v1/partitions/changed"))
            .route(web::post().to(reads::changed::changed))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/kv")
            .app_data(timing::Route("/api/v1/kv"))
            .route(web::post().to(kv::route::kv))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/locks")
            .app_data(timing::Route("/api/v1/locks"))
            .route(web::post().to(locks::route::locks))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/timers")
            .app_data(timing::Route("/api/v1/timers"))
            .route(web::post().to(timers::route::timers))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/timers/{queue}")
            .app_data(timing::Route("/api/v1/timers/{queue}"))
            .route(web::get().to(timers::list::list))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/timers/{queue}/{timer_key:.*}")
            .app_data(timing::Route("/api/v1/timers/{queue}/{timer_key:.*}"))
            .route(web::get().to(timers::key::peek))
            .route(web::delete().to(timers::key::cancel))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/streams/v1/queries")
            .app_data(timing::Route("/streams/v1/queries"))
            .route(web::post().to(streams::queries::queries))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/streams/v1/state/get")
            .app_data(timing::Route("/streams/v1/state/get"))
            .route(web::post().to(streams::state::state_get_route))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/streams/v1/cycle")
            .app_data(timing::Route("/streams/v1/cycle"))
            .route(web::post().to(streams::cycle::cycle))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/configure")
            .app_data(timing::Route("/api/v1/ephemeral/configure"))
            .route(web::post().to(ephemeral::routes::configure))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/reset")
            .app_data(timing::Route("/api/v1/ephemeral/reset"))
            .route(web::post().to(ephemeral::routes::reset))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/queue/{queue}")
            .app_data(timing::Route("/api/v1/ephemeral/queue/{queue}"))
            .route(web::delete().to(ephemeral::routes::delete))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/push")
            .app_data(timing::Route("/api/v1/ephemeral/push"))
            .route(web::post().to(ephemeral::routes::push))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/pop")
            .app_data(timing::Route("/api/v1/ephemeral/pop"))
            .route(long_poll_get().to(ephemeral::routes::pop))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/ack")
            .app_data(timing::Route("/api/v1/ephemeral/ack"))
            .route(web::post().to(ephemeral::routes::ack))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/queues")
            .app_data(timing::Route("/api/v1/ephemeral/queues"))
            .route(web::get().to(ephemeral::routes::queues))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ephemeral/queues/{queue}/depth")
            .app_data(timing::Route("/api/v1/ephemeral/queues/{queue}/depth"))
            .route(web::get().to(ephemeral::routes::depth))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/lease/{lease_id}/extend")
            .route(web::post().to(lease::extend))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/configure")
            .route(web::post().to(configure::configure))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/metrics")
            .route(web::get().to(metrics::metrics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/metrics/prometheus")
            .route(web::get().to(metrics::prometheus))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/system/maintenance")
            .route(web::get().to(system::get_maintenance))
            .route(web::post().to(system::set_maintenance))
            .route(web::put().to(system::set_maintenance))
            .default_service(web::to(method_not_allowed)),
    );
    admin::routes(cfg);
    console_routes(cfg);
    cfg.default_service(web::to(no_route));
}

/// The console's routes. `/console/assets/{file}` is registered before the catch-all.
fn console_routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/")
            .route(web::get().to(console::index))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/console/assets/{file}")
            .route(web::get().to(console::asset))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(["/console", "/console/{view:.*}"])
            .route(web::get().to(console::page))
            .default_service(web::to(method_not_allowed)),
    );
}

/// A `GET` route for the routes that long-poll, without actix's method guard: that guard
/// records the methods it tried in the request's data map (the map and two boxes, about
/// 200 bytes) for a 405's `Allow` header, which these resources answer from their own
/// default service instead ([`method_not_allowed`]); a parked pop keeps its request, and
/// so that map, for as long as it waits (README, "Parked long-polls").
fn long_poll_get() -> Route {
    web::route().guard(guard::fn_guard(|ctx| ctx.head().method == Method::GET))
}

//! HTTP: the route table ([`routes`]), the state every handler sees ([`state`]), the body
//! readers ([`body`]) and the query reader ([`query`]).
//!
//! One handler file per route family (`push`, `pop`, `ack`, `transaction`, `lease`,
//! `configure`, `health`, the read views under [`reads`], and the admin families under
//! [`admin`]); the binary bodies live in [`binary`]; status codes and error bodies are
//! decided in [`error`] only. The web console's files are served by [`console`];
//! [`openapi`] describes every route and serves that;
//! [`front`] is the one middleware in front of every route: it runs [`slashes`], then
//! [`auth`] (with [`gate`], the JWT check, when authentication is on), then [`timing`],
//! which times every request for the latency histograms;
//! [`fallback`] answers the paths and methods no route serves.

pub mod ack;
pub mod admin;
pub mod auth;
pub mod binary;
pub mod body;
pub mod configure;
pub mod console;
pub mod ephemeral;
pub mod error;
pub mod fallback;
pub mod front;
pub mod gate;
pub mod health;
pub mod json_field;
pub mod json_out;
pub mod kv;
pub mod lease;
pub mod locks;
pub mod metrics;
pub mod openapi;
pub mod pop;
pub mod push;
pub mod query;
pub mod reads;
#[cfg(test)]
mod route_table;
pub mod routes;
pub mod slashes;
pub mod state;
pub mod streams;
pub mod system;
pub mod timers;
pub mod timing;
pub mod transaction;

//! The broker's integration tests: one binary, a real PostgreSQL started by the harness,
//! real HTTP against brokers running in-process.

mod support;

mod ack;
mod admin_dlq;
mod admin_groups;
mod admin_messages;
mod admin_resources;
mod admin_status;
mod admin_traces;
mod bad_input;
mod binary;
mod binary_pop;
mod binary_push;
mod cluster_script;
mod compat_python;
mod concurrency;
mod console;
mod console_routes;
mod dedup_window;
mod docs;
mod encryption;
mod failures;
mod harness;
mod helm_chart;
mod hotlist_exactly_once;
mod hotlist_lent;
mod hotlist_wheel;
mod image;
mod lease_and_configure;
mod mesh;
mod metrics_typed;
mod nodes;
mod openapi;
mod pop_echoes;
mod pop_gates;
mod pop_leases;
mod pop_routes;
mod pop_subscriptions;
mod push;
mod push_combining;
mod shutdown;
mod transaction;
mod upgrade;
mod wakes_lost;
mod wakes_push;

//! The broker's integration tests: one binary, a real PostgreSQL started by the harness,
//! real HTTP against brokers running in-process.

mod support;

mod ack;
mod binary;
mod concurrency;
mod failures;
mod harness;
mod hotlist;
mod pop;
mod push;
mod wakes;

//! The broker's integration tests: one binary, a real PostgreSQL started by the harness,
//! real HTTP against brokers running in-process.

mod support;

mod binary;
mod concurrency;
mod harness;

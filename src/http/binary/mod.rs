//! The binary bodies of the wire contract: the `QPB1` push body ([`qpb1`], decoded into the
//! same push items the JSON body becomes) and the `QPF1` framed pop answer ([`qpf1`], written
//! from the claimed segments). Both are little-endian with `u16`-prefixed UTF-8 strings.
//!
//! This module only reads and writes bytes; storing and claiming belong to `log`, and the
//! status codes to `http::error`.

pub mod qpb1;
pub mod qpf1;

mod error;
mod reader;

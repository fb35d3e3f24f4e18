//! The binary bodies of the wire contract: the `QPB1` push body ([`qpb1`], decoded into the
//! same push items the JSON body becomes) and the `QPF1` framed pop answer ([`qpf1`], written
//! from the claimed segments), and the `QTB1` transaction body ([`qtb1`], a JSON head plus
//! `QPB1` flag-8 groups). All are little-endian with `u16`-prefixed UTF-8 strings.
//!
//! This module only reads and writes bytes; storing and claiming belong to `log`, and the
//! status codes to `http::error`.

pub mod qpb1;
pub mod qpf1;
pub mod qtb1;

mod error;

pub use error::BinaryError;
mod reader;

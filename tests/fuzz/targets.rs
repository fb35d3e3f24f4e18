//! The decoders that read bytes from outside the broker, each as a fuzz target: a function
//! that feeds it one input and names the outcome (used as the fuzz loop's feedback: an input
//! with an outcome not seen before joins the corpus), and the memory it may hold for it.

use actix_web::ResponseError;
use queen::domain::PushLimits;
use queen::http::binary::{qpb1, qtb1};
use queen::http::error::ApiError;
use queen::http::query::Query;
use queen::mesh::{frame, sealed};
use queen::segment::{slice_frames, FrameIter};

/// Decompressed bytes a fuzzed binary body may reach (`QUEEN_MAX_BODY_BYTES` in the
/// broker): small, so the constant part of the memory bound stays small.
pub const DECODED_LIMIT: usize = 16 * 1024;

/// The caps the fuzzed push decoders run under (the broker's defaults).
pub const CAPS: PushLimits = PushLimits::DEFAULT;

/// One decoder.
pub struct Target {
    /// Its name (and the name of its folder under `corpus/`).
    pub name: &'static str,
    /// Feeds it one input; returns a short label of the outcome.
    pub run: fn(&[u8]) -> String,
    /// Peak heap bytes allowed per input byte.
    pub bytes_per_input_byte: usize,
}

impl Target {
    /// The most heap an input of `len` bytes may hold at once: the per-byte multiple, plus
    /// what the decompression budget may add (the same bytes sent uncompressed would have
    /// cost the multiple too), plus a constant for fixed tables.
    pub fn bound(&self, len: usize) -> usize {
        self.bytes_per_input_byte * (len + DECODED_LIMIT) + 64 * 1024
    }
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "json_push",
        run: json_push,
        bytes_per_input_byte: 256,
    },
    Target {
        name: "qpb1",
        run: qpb1_push,
        bytes_per_input_byte: 64,
    },
    Target {
        name: "transaction",
        run: transaction,
        bytes_per_input_byte: 256,
    },
    Target {
        name: "segment_frames",
        run: segment_frames,
        bytes_per_input_byte: 64,
    },
    Target {
        name: "mesh_frame",
        run: mesh_frame,
        bytes_per_input_byte: 64,
    },
    Target {
        name: "query",
        run: query,
        bytes_per_input_byte: 64,
    },
];

/// The first words of an error, without its numbers: enough to tell outcomes apart, few
/// enough that the corpus stays small.
fn label<E: std::fmt::Display>(r: Result<impl Sized, E>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => e
            .to_string()
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .take(48)
            .collect(),
    }
}

/// A refused request body must be the client's error: a 4xx, never a 5xx.
fn client_error<T>(r: Result<T, ApiError>) -> Result<T, ApiError> {
    if let Err(e) = &r {
        let status = e.status_code();
        assert!(status.is_client_error(), "answered {status} for: {e}");
    }
    r
}

fn json_push(data: &[u8]) -> String {
    label(client_error(queen::http::push::decode_json(data, CAPS)))
}

fn qpb1_push(data: &[u8]) -> String {
    // The broker dispatches on "QPB"; the fuzzer may also reach the body without a magic.
    label(qpb1::decode(data, DECODED_LIMIT, CAPS))
}

fn transaction(data: &[u8]) -> String {
    if data.starts_with(qtb1::MAGIC) {
        let _ = qtb1::decode(data, DECODED_LIMIT, CAPS);
    }
    label(client_error(queen::http::transaction::decode(
        data,
        DECODED_LIMIT,
        CAPS,
    )))
}

fn segment_frames(data: &[u8]) -> String {
    let mut count = 0usize;
    for frame in FrameIter::new(data) {
        match frame {
            Ok(f) => {
                count += 1;
                let _ = (f.payload.len(), f.transaction_id.len(), f.producer);
            }
            Err(e) => return label(Err::<(), _>(e)),
        }
    }
    let _ = slice_frames(data, count / 2, count);
    "ok".to_owned()
}

fn mesh_frame(data: &[u8]) -> String {
    // Through a keyed opener first (a frame of a connection with a mesh secret), then as a
    // frame of a connection without one.
    let secret = queen::config::Secret::new("fuzz secret".to_owned());
    let key = sealed::frame_key(Some(&secret), &[1; 16], &[2; 16], "node-a");
    if let Some(payload) = sealed::Opener::new(key).open(data) {
        let _ = frame::decode(payload);
    }
    // The error's own text is one phrase; its cause tells the outcomes apart.
    label(frame::decode(data).map_err(|e| format!("{e:?}")))
}

fn query(data: &[u8]) -> String {
    let raw = String::from_utf8_lossy(data);
    let q = match client_error(Query::parse(&raw)) {
        Ok(q) => q,
        Err(e) => return label(Err::<(), _>(e)),
    };
    let _ = q.flag("autoAck", false);
    let _ = q.number("batch", 1, 1, 10_000);
    label(q.number("wait", 0, 0, 1).and(q.flag("wait", false)))
}

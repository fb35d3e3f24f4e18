//! Answer bodies written by hand: the hot answers (push, ack, pop) are arrays of small
//! objects whose keys never change, and serde's derived path ran every key through the
//! string escaper and every id through a formatter. These helpers write the parts that do
//! vary, into the one buffer the answer is built in.

/// `text` as a JSON string (quoted and escaped) at the end of `out`.
pub fn string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(&mut *out, text).expect("writing a str to a Vec cannot fail");
}

/// `n` in decimal at the end of `out`.
pub fn number(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `text` as a JSON string, or `null`.
pub fn optional_string(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => string(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

/// `true` or `false`.
pub fn boolean(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_is_written_as_json() {
        let mut out = Vec::new();
        out.push(b'[');
        string(&mut out, "a \"q\" \\ \u{1}");
        out.push(b',');
        number(&mut out, -42i64);
        out.push(b',');
        optional_string(&mut out, None);
        out.push(b',');
        optional_string(&mut out, Some("x"));
        out.push(b',');
        boolean(&mut out, true);
        out.push(b']');
        let parsed: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!(["a \"q\" \\ \u{1}", -42, null, "x", true])
        );
    }
}

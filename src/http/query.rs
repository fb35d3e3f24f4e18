//! Query-string reading: form decoding (`+` is a space), unknown keys ignored, typed getters
//! whose errors name the parameter.

use std::collections::HashMap;

use super::error::ApiError;

/// A request's query parameters (the last value of a repeated key wins).
pub struct Query(HashMap<String, String>);

impl Query {
    /// Decodes a raw query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw)
            .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))?;
        Ok(Query(pairs.into_iter().collect()))
    }

    /// A text parameter; empty counts as absent.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean parameter: `true`/`false`, also `1`/`0`.
    pub fn flag(&self, name: &str, default: bool) -> Result<bool, ApiError> {
        match self.text(name) {
            None => Ok(default),
            Some("true" | "1" | "TRUE" | "True") => Ok(true),
            Some("false" | "0" | "FALSE" | "False") => Ok(false),
            Some(other) => Err(ApiError::bad_request(format!(
                "{name} must be true or false, got {other:?}"
            ))),
        }
    }

    /// A whole-number parameter within `min..=max`.
    pub fn number(&self, name: &str, default: u64, min: u64, max: u64) -> Result<u64, ApiError> {
        match self.text(name) {
            None => Ok(default),
            Some(raw) => raw
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "{name} must be a whole number between {min} and {max}, got {raw:?}"
                    ))
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_decodes_as_space_and_unknown_keys_are_kept_harmless() {
        let q = Query::parse("consumerGroup=my+group&x=%3A1&frames=true").unwrap();
        assert_eq!(q.text("consumerGroup"), Some("my group"));
        assert_eq!(q.text("x"), Some(":1"));
        assert!(q.flag("frames", false).unwrap());
    }

    #[test]
    fn bad_numbers_and_flags_name_the_parameter() {
        let q = Query::parse("batch=abc&wait=maybe&partitions=0").unwrap();
        let e = q.number("batch", 200, 1, 10).unwrap_err().to_string();
        assert!(e.contains("batch"), "{e}");
        assert!(q.flag("wait", false).is_err());
        assert!(q.number("partitions", 1, 1, 10).is_err());
        assert_eq!(q.number("timeout", 30, 0, 100).unwrap(), 30);
    }
}

//! [`JsonField`]: one field of a request body, read without building a `serde_json::Value`.
//!
//! The handlers check their fields' types themselves, so that a wrong type is refused with
//! a message naming the field (and so that a partition id may come as a string or a
//! number). Reading each field as a `serde_json::Value` did that at the price of an
//! allocation per field: in a profile of pop+ack at batch 100, parsing the ack bodies was a
//! tenth of the broker's CPU, much of it allocating and copying strings that were dropped
//! after validation. A `JsonField` borrows a string from the body when it holds no escape.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A field's value as far as validation needs it. JSON `null` is not a variant: read the
/// field as `Option<JsonField>`, and an absent field and `null` are both `None`.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonField<'a> {
    /// A string, borrowed from the body unless it held escapes.
    Text(Cow<'a, str>),
    /// A number.
    Number(serde_json::Number),
    /// A boolean, an array or an object (skipped, not kept).
    Other,
}

impl<'a> JsonField<'a> {
    /// The field as text: `Ok(None)` when absent or null, `Err(NotText)` for any other type.
    pub fn text(field: Option<Self>) -> Result<Option<Cow<'a, str>>, NotText> {
        match field {
            None => Ok(None),
            Some(JsonField::Text(s)) => Ok(Some(s)),
            Some(_) => Err(NotText),
        }
    }
}

/// A field that had to be a string (or null) and was not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotText;

impl<'de: 'a, 'a> Deserialize<'de> for JsonField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = JsonField<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(JsonField::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(JsonField::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(JsonField::Text(Cow::Owned(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(JsonField::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(JsonField::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(JsonField::Other, JsonField::Number))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(JsonField::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(JsonField::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(JsonField::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(JsonField::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        f: Option<JsonField<'a>>,
    }

    fn field(json: &str) -> Option<JsonField<'_>> {
        serde_json::from_str::<Body<'_>>(json).unwrap().f
    }

    #[test]
    fn a_plain_string_is_borrowed_and_an_escaped_one_is_decoded() {
        assert!(matches!(
            field(r#"{"f":"abc"}"#),
            Some(JsonField::Text(Cow::Borrowed("abc")))
        ));
        assert_eq!(
            field(r#"{"f":"a\"b\u00e9"}"#),
            Some(JsonField::Text(Cow::Owned("a\"bé".to_owned())))
        );
    }

    #[test]
    fn absent_and_null_are_none_and_other_types_are_kept_apart() {
        assert_eq!(field(r#"{}"#), None);
        assert_eq!(field(r#"{"f":null}"#), None);
        assert_eq!(field(r#"{"f":12}"#), Some(JsonField::Number(12.into())));
        assert_eq!(field(r#"{"f":-3}"#), Some(JsonField::Number((-3).into())));
        assert_eq!(field(r#"{"f":true}"#), Some(JsonField::Other));
        assert_eq!(field(r#"{"f":[1,{"a":[]}]}"#), Some(JsonField::Other));
        assert_eq!(field(r#"{"f":{"a":{"b":"c"}}}"#), Some(JsonField::Other));
        assert_eq!(JsonField::text(field(r#"{"f":[]}"#)), Err(NotText));
        assert_eq!(JsonField::text(field(r#"{"f":null}"#)), Ok(None));
    }

    #[test]
    fn a_deeply_nested_value_is_skipped_without_exhausting_the_stack() {
        // serde_json skips what JsonField does not keep without recursing, so a hostile
        // nesting costs no stack; the handler then refuses the field's type.
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            let json = format!(
                "{{\"f\":{}1{}}}",
                open.repeat(100_000),
                close.repeat(100_000)
            );
            let parsed = serde_json::from_str::<Body<'_>>(&json).map(|b| b.f);
            assert!(
                matches!(parsed, Ok(Some(JsonField::Other))),
                "{open}: {parsed:?}"
            );
        }
    }

    #[test]
    fn a_broken_nested_value_is_still_a_parse_error() {
        assert!(serde_json::from_str::<Body<'_>>(r#"{"f":[1,}"#).is_err());
        assert!(serde_json::from_str::<Body<'_>>(r#"{"f":{"a":}}"#).is_err());
    }
}

//! Reading a string value and checking it in one step, inside the scalar's own deserialization,
//! so the YAML parser stamps any error with the value's line and column.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// Deserializes a string and converts it with `parse`; a `parse` error is positioned at the value.
pub fn parse_str<'de, D, T, F>(
    deserializer: D,
    expecting: &'static str,
    parse: F,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    F: FnOnce(&str) -> Result<T, String>,
{
    deserializer.deserialize_str(StrVisitor {
        expecting,
        parse,
        out: PhantomData,
    })
}

struct StrVisitor<F, T> {
    expecting: &'static str,
    parse: F,
    out: PhantomData<T>,
}

impl<'de, T, F> Visitor<'de> for StrVisitor<F, T>
where
    F: FnOnce(&str) -> Result<T, String>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        (self.parse)(text).map_err(E::custom)
    }
}

//! Finds the line and column of a node in the rules file, for errors found after parsing
//! (duplicate gate names, jump targets, rule keys). It re-reads the document with a seed that
//! walks to the node and fails there, so the YAML parser itself reports the position.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path into the document: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(&'static str),
    Index(usize),
}

const HERE: &str = "\u{0}validator-locate\u{0}";

/// The 1-based line and column of the node at `path`, if the document has one there.
pub fn locate(source: &str, path: &[Step]) -> Option<(usize, usize)> {
    let deserializer = yaml_serde::Deserializer::from_str(source);
    match (Seek { path }).deserialize(deserializer) {
        Err(err) if err.to_string().contains(HERE) => {
            err.location().map(|at| (at.line(), at.column()))
        }
        _ => None,
    }
}

struct Seek<'p> {
    path: &'p [Step],
}

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.path.split_first() {
            // Fail inside the node's own deserialization, so the parser stamps the error with
            // the node's position rather than its parent's.
            None => deserializer.deserialize_any(Fail),
            Some((step, rest)) => deserializer.deserialize_any(SeekVisitor { step, rest }),
        }
    }
}

struct SeekVisitor<'p> {
    step: &'p Step,
    rest: &'p [Step],
}

impl<'de> Visitor<'de> for SeekVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<KeyText>()? {
            match self.step {
                Step::Key(wanted) if key.0.as_deref() == Some(*wanted) => {
                    return map.next_value_seed(Seek { path: self.rest });
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            if *self.step == Step::Index(index) {
                return seq.next_element_seed(Seek { path: self.rest }).map(drop);
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    // Scalars cannot hold the rest of the path: the node is not there.
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Refuses whatever node it is given.
struct Fail;

impl<'de> Visitor<'de> for Fail {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(HERE)
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HERE))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HERE))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(HERE))
    }
}

/// A mapping key read as text when it is a string, and skipped otherwise.
struct KeyText(Option<String>);

impl<'de> de::Deserialize<'de> for KeyText {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = yaml_serde::Value::deserialize(deserializer)?;
        Ok(KeyText(value.as_str().map(str::to_owned)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "version: 1\npipelines:\n  - name: a\n    gates:\n      - name: one\n        rule: status\n      - name: two\n        on_fail: nowhere\n";

    #[test]
    fn finds_nested_values() {
        let path = [
            Step::Key("pipelines"),
            Step::Index(0),
            Step::Key("gates"),
            Step::Index(1),
            Step::Key("on_fail"),
        ];
        assert_eq!(locate(DOC, &path), Some((8, 18)));
    }

    #[test]
    fn missing_nodes_have_no_position() {
        assert_eq!(locate(DOC, &[Step::Key("nope")]), None);
        assert_eq!(locate(DOC, &[Step::Key("pipelines"), Step::Index(5)]), None);
    }
}

//! How many JSON values a message holds, counted while it is read and before
//! any tree of it is built.
//!
//! A 12 MB request of a million keys (`{"k0":0,"k1":0,…}`) made the server
//! build `serde_json::Value` trees of it, twice (our look at the line, then
//! rmcp's), and grow to 798 MiB before the schema check refused it. Both
//! transports first walk the message with serde_json's own deserializer and a
//! visitor that builds nothing (keys are skipped as `IgnoredAny`, strings are
//! borrowed or read into the parser's scratch buffer), counting every key and
//! value and stopping at [`MAX_VALUES`]: such a request is answered with an
//! error naming the limit at the cost of one pass over its bytes. A message that
//! is not JSON is left to the usual checks, which say what is wrong with it.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The most JSON values (each key, string, number, boolean, null, array and
/// object counts one) a message may hold: far above any request the tools
/// take (a batch of 100 items, each with its edits and frontmatter), far below
/// what makes a tree a problem (a `Value` costs tens of bytes).
pub(in crate::server) const MAX_VALUES: usize = 100_000;

/// What the count found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::server) enum Count {
    /// A JSON message of at most `limit` values.
    Within,
    /// More than `limit` values (counting stopped there).
    TooMany,
    /// Not one JSON value (a syntax error, trailing bytes, invalid UTF-8 in a
    /// string, a number serde_json cannot read): the caller's other checks say why.
    NotJson,
}

/// Counts the values of the JSON message `bytes`, stopping past `limit`.
pub(in crate::server) fn count_values(bytes: &[u8], limit: usize) -> Count {
    let budget = Budget { left: Cell::new(limit), over: Cell::new(false) };
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let counted = Counter(&budget).deserialize(&mut reader).and_then(|()| reader.end());
    match counted {
        Ok(()) => Count::Within,
        Err(_) if budget.over.get() => Count::TooMany,
        Err(_) => Count::NotJson,
    }
}

/// The values still allowed, and whether the limit was passed.
struct Budget {
    left: Cell<usize>,
    over: Cell<bool>,
}

/// A visitor that counts one value (and, for arrays and objects, everything
/// inside) against the budget and builds nothing.
#[derive(Clone, Copy)]
struct Counter<'b>(&'b Budget);

impl Counter<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.0.left.get() {
            0 => {
                self.0.over.set(true);
                Err(E::custom("too many values"))
            }
            left => {
                self.0.left.set(left - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Counter<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        self.take()?;
        while items.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        self.take()?;
        while entries.next_key::<IgnoredAny>()?.is_some() {
            self.take()?;
            entries.next_value_seed(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_and_value_counts_and_counting_stops_at_the_limit() {
        // An object, two keys, a string, an array and its two numbers: 7 values.
        let message = br#"{"a":"x","b":[1,2.5]}"#;
        assert_eq!(count_values(message, 7), Count::Within);
        assert_eq!(count_values(message, 6), Count::TooMany);
        assert_eq!(count_values(br#"[true,false,null,"\u00e9\n"]"#, 5), Count::Within);
        let keys: String = (0..1000).map(|n| format!("\"k{n}\":0")).collect::<Vec<_>>().join(",");
        assert_eq!(count_values(format!("{{{keys}}}").as_bytes(), 1000), Count::TooMany);
        assert_eq!(count_values(format!("{{{keys}}}").as_bytes(), 2001), Count::Within);
    }

    #[test]
    fn what_is_not_json_is_left_to_the_other_checks() {
        for bad in [&b"{"[..], b"{} {}", b"garbage", b"{\"a\":1e400}", b"{\"a\":\"\xff\"}", b""] {
            assert_eq!(count_values(bad, MAX_VALUES), Count::NotJson, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}

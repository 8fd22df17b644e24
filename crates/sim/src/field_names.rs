//! The keys of a config section read from its type: serde's own field list of a derived
//! `Deserialize`, taken by a deserializer that stops at the struct. A section's keys are thus
//! declared once, as the struct's fields, and help, docs checks and "unknown key" errors all
//! read that one list.

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The keys of the serde struct `T`, as a config file spells them, in declaration order;
/// empty when `T` is not a struct with named fields (a map, or a struct with a flattened part).
pub fn field_names<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut list = FieldList(&[]);
    let _ = T::deserialize(&mut list);
    list.0
}

/// Records the field list a derived `Deserialize` hands to `deserialize_struct`, then stops.
struct FieldList(&'static [&'static str]);

impl<'de> Deserializer<'de> for &mut FieldList {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = fields;
        Err(de::Error::custom("fields recorded"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Section {
        files: u64,
        #[serde(rename = "file_bytes")]
        bytes: Option<u64>,
    }

    #[test]
    fn a_struct_gives_its_keys_and_a_map_none() {
        assert_eq!(field_names::<Section>(), ["files", "file_bytes"]);
        assert!(field_names::<std::collections::BTreeMap<String, u64>>().is_empty());
    }
}

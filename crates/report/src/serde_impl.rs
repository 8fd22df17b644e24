//! Hand-written serde for the float-carrying types.
//!
//! JSON has no NaN or infinity. serde_json happens to print them as `null`, but other
//! serializers error or emit invalid JSON, so we map non-finite floats to `None` ourselves and
//! read `null` back as NaN. `Cell` is serialized as a bare value (not `{"Num": 1.5}`) so the
//! table JSON reads like the CSV.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::Cell;

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Text(t) => s.serialize_str(t),
            Cell::Int(i) => s.serialize_i64(*i),
            Cell::Num(x) => match finite(*x) {
                Some(v) => s.serialize_f64(v),
                None => s.serialize_none(),
            },
            Cell::Empty => s.serialize_none(),
        }
    }
}

struct CellVisitor;

impl<'de> Visitor<'de> for CellVisitor {
    type Value = Cell;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, a number or null")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cell, E> {
        Ok(Cell::Text(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Cell, E> {
        Ok(Cell::Text(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Cell, E> {
        Ok(Cell::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Cell, E> {
        Ok(Cell::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Cell, E> {
        Ok(Cell::Num(v))
    }
    // A non-finite Num also comes back as Empty: the distinction is not representable in JSON.
    fn visit_none<E: de::Error>(self) -> Result<Cell, E> {
        Ok(Cell::Empty)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Cell, E> {
        Ok(Cell::Empty)
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Cell, D::Error> {
        d.deserialize_any(CellVisitor)
    }
}

/// `Vec<(f64, f64)>` as `[[x, y], ...]` with non-finite coordinates as `null`.
pub mod points {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[(f64, f64)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|&(x, y)| (finite(x), finite(y))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, f64)>, D::Error> {
        let raw = Vec::<(Option<f64>, Option<f64>)>::deserialize(d)?;
        Ok(raw.into_iter().map(|(x, y)| (x.unwrap_or(f64::NAN), y.unwrap_or(f64::NAN))).collect())
    }
}

/// `Vec<(String, Vec<f64>)>` as `[[label, [v, ...]], ...]` with non-finite values as `null`.
pub mod bar_series {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[(String, Vec<f64>)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|(label, values)| {
            let values: Vec<Option<f64>> = values.iter().map(|&x| finite(x)).collect();
            (label, values)
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, Vec<f64>)>, D::Error> {
        let raw = Vec::<(String, Vec<Option<f64>>)>::deserialize(d)?;
        Ok(raw
            .into_iter()
            .map(|(label, values)| {
                let values = values.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect();
                (label, values)
            })
            .collect())
    }
}

/// `Vec<f64>` as `[v, ...]` with non-finite values as `null`.
pub mod floats {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|&x| finite(x)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        let raw = Vec::<Option<f64>>::deserialize(d)?;
        Ok(raw.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
    }
}

/// `Vec<Vec<f64>>` as `[[v, ...], ...]` with non-finite values as `null`.
pub mod float_rows {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[Vec<f64>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|row| row.iter().map(|&x| finite(x)).collect::<Vec<_>>()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
        let raw = Vec::<Vec<Option<f64>>>::deserialize(d)?;
        Ok(raw.into_iter().map(|row| row.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect()).collect())
    }
}

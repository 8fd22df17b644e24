//! `config_section!`: one declaration of a config section's keys gives both of its types, so a
//! key is written once (issue 24: "a knob declared in an Option-mirror struct and again in its
//! resolved twin" was ~10 edits per TRIM-cost field).
//!
//! From
//! ```ignore
//! config_section! {
//!     /// Complete: every key has its value (a preset's data merged with the user's keys).
//!     pub struct TrimCostModel;
//!     /// As written: the keys a user, a preset file or an experiment set.
//!     pub struct TrimCostOverrides {
//!         pub command_ns: u64,
//!         pub gc_gain_blocks_max: u32 = optional,
//!     }
//! }
//! ```
//! come `TrimCostModel { command_ns: u64, gc_gain_blocks_max: Option<u32> }` and
//! `TrimCostOverrides` with every key an `Option`, both serde structs that refuse unknown
//! keys. A key marked `= optional` may stay unset in the complete struct too (its absence
//! means "derived" or "off"). The as-written struct gets `KEYS`, `set_keys`, `or` (key by key:
//! this one's keys, else the fallback's), `complete` (the complete struct, or the first
//! required key no layer set), `all` and `apply`. This lives in `sim`, the lowest layer, beside
//! the config units (`ByteSize`, `DurationNs`), because `trim` and `device` both declare
//! sections with it. A crate that uses it needs `serde` (with `derive`) among its dependencies.

#[macro_export]
macro_rules! config_section {
    (@complete_ty $ty:ty) => { $ty };
    (@complete_ty $ty:ty, optional) => { ::core::option::Option<$ty> };
    (@take $value:expr, $key:expr) => {
        match $value {
            ::core::option::Option::Some(v) => v,
            ::core::option::Option::None => return ::core::result::Result::Err($key),
        }
    };
    (@take $value:expr, $key:expr, optional) => { $value };
    (@all $value:expr) => { ::core::option::Option::Some($value.clone()) };
    (@all $value:expr, optional) => { $value.clone() };
    (
        $(#[$complete_meta:meta])*
        pub struct $complete:ident;
        $(#[$section_meta:meta])*
        pub struct $section:ident {
            $(
                $(#[$field_meta:meta])*
                pub $field:ident : $ty:ty $(= $optional:ident)?,
            )*
        }
    ) => {
        $(#[$complete_meta])*
        #[derive(Clone, Debug, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $complete {
            $(
                $(#[$field_meta])*
                pub $field: $crate::config_section!(@complete_ty $ty $(, $optional)?),
            )*
        }

        $(#[$section_meta])*
        #[derive(Clone, Debug, Default, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $section {
            $(
                $(#[$field_meta])*
                pub $field: ::core::option::Option<$ty>,
            )*
        }

        impl $section {
            /// Every key of the section, in declaration order.
            pub const KEYS: &'static [&'static str] = &[$($crate::key_name(stringify!($field))),*];

            /// The keys set here, in declaration order.
            pub fn set_keys(&self) -> ::std::vec::Vec<&'static str> {
                let mut keys = ::std::vec::Vec::new();
                $(
                    if self.$field.is_some() {
                        keys.push($crate::key_name(stringify!($field)));
                    }
                )*
                keys
            }

            /// Key by key: the keys set here, else `fallback`'s.
            pub fn or(&self, fallback: &$section) -> $section {
                $section { $($field: self.$field.clone().or_else(|| fallback.$field.clone()),)* }
            }

            /// The complete section, or the first required key left unset.
            pub fn complete(self) -> ::core::result::Result<$complete, &'static str> {
                ::core::result::Result::Ok($complete {
                    $($field: $crate::config_section!(@take self.$field, $crate::key_name(stringify!($field)) $(, $optional)?),)*
                })
            }

            /// Every key of `complete` set.
            pub fn all(complete: &$complete) -> $section {
                $section { $($field: $crate::config_section!(@all complete.$field $(, $optional)?),)* }
            }

            /// `base` with the keys set here replaced.
            pub fn apply(&self, base: $complete) -> $complete {
                match self.or(&$section::all(&base)).complete() {
                    ::core::result::Result::Ok(c) => c,
                    // `all` sets every required key, so nothing can be missing.
                    ::core::result::Result::Err(key) => unreachable!("{key} unset after all()"),
                }
            }
        }
    };
}

/// A key's name as configs spell it: a field named with a raw identifier (`r#from`, a Rust
/// keyword) is the key `from`, as serde names it.
#[doc(hidden)]
pub const fn key_name(field: &'static str) -> &'static str {
    match field.as_bytes() {
        [b'r', b'#', rest @ ..] => match core::str::from_utf8(rest) {
            Ok(name) => name,
            Err(_) => field,
        },
        _ => field,
    }
}

#[cfg(test)]
mod tests {
    config_section! {
        /// Complete.
        #[derive(Eq)]
        pub struct Costs;
        /// As written.
        #[derive(Eq)]
        pub struct CostKeys {
            /// Required.
            pub command_ns: u64,
            pub cap: u32 = optional,
        }
    }

    #[test]
    fn layers_merge_key_by_key_and_a_missing_required_key_is_named() {
        let user = CostKeys { command_ns: Some(7), ..Default::default() };
        let preset = CostKeys { command_ns: Some(1), cap: Some(3) };
        assert_eq!(user.or(&preset).complete(), Ok(Costs { command_ns: 7, cap: Some(3) }));
        assert_eq!(CostKeys::default().complete(), Err("command_ns"));
        assert_eq!(
            CostKeys { command_ns: Some(2), cap: None }.complete(),
            Ok(Costs { command_ns: 2, cap: None })
        );
        assert_eq!(user.set_keys(), ["command_ns"]);
        assert_eq!(CostKeys::KEYS, ["command_ns", "cap"]);
        assert_eq!(user.apply(Costs { command_ns: 1, cap: Some(9) }), Costs { command_ns: 7, cap: Some(9) });
        assert_eq!((super::key_name("r#from"), super::key_name("from_ns")), ("from", "from_ns"));
    }
}

//! `registry!`: the one registration line of a registry (TRIM engines, host TRIM policies, trace
//! formats). Each kind is a module of its own that defines a `SPEC`; naming the module in the
//! list both declares it and registers its `SPEC`, in list order, so adding a kind is its file
//! plus its name here (nbdkit's filters: one file, one line).
//!
//! ```ignore
//! trimlab_sim::registry! {
//!     /// Every engine, in the order help lists them.
//!     pub const ENGINES: EngineSpec = [pub immediate, pub none, pub delayed];
//! }
//! ```
//! expands to `pub mod immediate; pub mod none; pub mod delayed;` and
//! `pub const ENGINES: &[&EngineSpec] = &[&immediate::SPEC, &none::SPEC, &delayed::SPEC];`.

#[macro_export]
macro_rules! registry {
    (
        $(#[$meta:meta])*
        $vis:vis const $name:ident: $spec:ty = [$($module_vis:vis $module:ident),* $(,)?];
    ) => {
        $($module_vis mod $module;)*
        $(#[$meta])*
        $vis const $name: &[&$spec] = &[$(&$module::SPEC),*];
    };
}

/// The identity handle of a registry's kinds (`EngineKind`, `TraceFormat`, `WorkloadKind`: a
/// tuple struct of the kind's `&'static str` name, each spec holding its `kind`): `name`,
/// `spec`, `parse` with "did you mean", `Debug` as the CamelCase of the name (the spelling of
/// the enums they replaced), and serde as the name, parsed through the registry. `$what` names
/// the registry in errors ("TRIM engine"). The calling crate needs `serde`.
#[macro_export]
macro_rules! registry_handle {
    ($handle:ident, $spec:ty, $registry:path, $what:literal) => {
        impl $handle {
            /// The name configs and flags use.
            pub fn name(self) -> &'static str {
                self.0
            }

            /// Its registered spec.
            pub fn spec(self) -> &'static $spec {
                $registry
                    .iter()
                    .find(|s| s.kind == self)
                    .unwrap_or_else(|| unreachable!("{} {:?} is not registered", $what, self.0))
            }

            /// The registered one named `name`, or an error naming the accepted ones (and the
            /// closest).
            pub fn parse(name: &str) -> ::core::result::Result<$handle, ::std::string::String> {
                $registry
                    .iter()
                    .map(|s| s.kind)
                    .find(|k| k.0 == name)
                    .ok_or_else(|| $crate::names::unknown($what, name, $registry.iter().map(|s| s.kind.0)))
            }
        }

        impl ::core::fmt::Debug for $handle {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(&$crate::names::camel_case(self.0))
            }
        }

        impl ::serde::Serialize for $handle {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::core::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.0)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $handle {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::core::result::Result<Self, D::Error> {
                let text = <::std::string::String as ::serde::Deserialize>::deserialize(d)?;
                $handle::parse(&text).map_err(::serde::de::Error::custom)
            }
        }
    };
}

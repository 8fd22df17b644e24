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

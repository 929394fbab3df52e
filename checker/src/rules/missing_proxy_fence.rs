//! `missing-proxy-fence` (PC301).

super::declare_rule! {
    /// # What
    ///
    /// Generic and async-proxy accesses to one buffer without fence_proxy_async between them.
    code: "PC301",
    name: "missing-proxy-fence",
    class: Race,
    severity: Error,
    summary: "generic and async-proxy accesses to one buffer without fence_proxy_async between them",
}

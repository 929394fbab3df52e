//! Clusters: multicast, a peer CTA that exits, remote operations, init visible to the peer.

use super::*;

const PAIR: &str = include_str!("../data/multicast_pair.phase");

#[test]
fn multicast_pair_is_ok() {
    assert_ok(&PAIR.replace("block 128", "block 3"));
}

#[test]
fn remote_cta_exited() {
    let bad = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1; fence_mbarrier_init }
cluster_sync
if cta == 0 && tid == 0 { arrive b @ 1 }
";
    assert_flags(bad, "remote-cta-exited");
    let good = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1; fence_mbarrier_init }
cluster_sync
if cta == 0 && tid == 0 { arrive b @ 1 scope cluster }
if cta == 1 { wait b parity 0 }
cluster_sync
";
    assert_ok(good);
}

/// A peer block's buffer (`X @ r`, `ld`/`st.shared::cluster` through `mapa`) after every
/// thread of that block finished is `remote-cta-exited`, as a remote arrive is: the Triton
/// multi-CTA scalar atomic (triton-lang/triton#11730, fixed by the exit barrier of #10656,
/// backported in #11731), where CTA 0 holds the result and the peers read it.
#[test]
fn remote_cta_exited_buffer_access() {
    for access in [
        "read result @ 0",
        "write result @ 0",
        "write part result @ 0",
        "write result @ 0 value 1",
        "mma result @ 0",
    ] {
        let src = |tail: &str| {
            format!(
                "protocol p
block 1
cluster 2
buffer result
if cta == 0 {{ write result; fence_proxy_async }}  # mma reads through the async proxy
cluster_sync
if cta == 1 {{ {access} }}
{tail}"
            )
        };
        let bad = src("");
        let r = assert_flags(&bad, "remote-cta-exited");
        let f = r
            .findings
            .iter()
            .find(|f| f.rule.name == "remote-cta-exited")
            .unwrap();
        assert!(f.message.contains("cta0.result"), "{access}: {}", f.message);
        // The fix of #10656: a cluster barrier before every return.
        assert_ok(&src("cluster_sync\n"));
    }
}

/// Only a peer's buffer depends on the peer running: the same access to the block's own
/// buffer after the peer finished is fine, and so is a remote access the peer outlives.
#[test]
fn remote_cta_exited_needs_a_peer_buffer() {
    assert_ok(
        "protocol p
block 1
cluster 2
buffer result
if cta == 0 { write result }
cluster_sync
if cta == 1 { read result; write result }
",
    );
    assert_ok(
        "protocol p
block 1
cluster 2
mbarrier done
buffer result
if cta == 0 { init done, 1; fence_mbarrier_init }
cluster_sync
if cta == 1 { read result @ 0; arrive done @ 0 scope cluster }
if cta == 0 { wait done parity 0 }
",
    );
}

#[test]
fn remote_op() {
    let bad = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1 }
cluster_sync
if cta == 0 && tid == 0 { wait b @ 1 parity 0 }
cluster_sync
";
    assert_flags(bad, "remote-op");
}

#[test]
fn init_not_visible_to_peer_block() {
    let bad = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1 }
if cta == 0 && tid == 0 { arrive b @ 1 }
cluster_sync
";
    assert_flags(bad, "init-not-visible");
}

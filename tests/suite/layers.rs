//! The layers are member crates, and `cargo metadata` is where their arrows are read: a crate may
//! depend only on the crates under it (ARCHITECTURE.md's bird's-eye view). A new arrow upwards
//! fails here before a reviewer has to spot it (and it would not compile if it made a cycle).

use std::process::Command;

/// From the bottom up; each crate may use any crate before it in this list, none after it.
const LAYERS: [&str; 11] = [
    "harness9-platform",
    "harness9-protocol",
    "harness9-base",
    "harness9-net",
    "harness9-telemetry",
    "harness9-oauth",
    "harness9-actors",
    "harness9-agent",
    "harness9-app",
    "harness9-tui",
    "harness9",
];

#[test]
fn no_crate_depends_on_one_above_it() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let mut seen = Vec::new();
    for package in packages {
        let name = package["name"].as_str().expect("name");
        let Some(level) = LAYERS.iter().position(|l| *l == name) else {
            assert!(
                !name.starts_with("harness9"),
                "{name} is a crate of harness9 with no place in LAYERS: give it its layer"
            );
            continue;
        };
        seen.push(name);
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep_name = dep["name"].as_str().expect("dependency name");
            if let Some(dep_level) = LAYERS.iter().position(|l| *l == dep_name) {
                assert!(
                    dep_level < level,
                    "{name} depends on {dep_name}, a layer above it or beside it"
                );
            }
        }
    }
    seen.sort_unstable();
    let mut all = LAYERS.to_vec();
    all.sort_unstable();
    assert_eq!(seen, all, "every layer is a workspace member");
}

/// What the protocol crate may be built from, whole (its dependencies' dependencies too): data
/// formats, hashing and their macros. Nothing that reads, writes, spawns or schedules: "the wire
/// layer does no IO" is a fact of the build, not a comment.
const PROTOCOL_MAY_USE: &[&str] = &[
    "harness9-protocol",
    "serde",
    "serde_core",
    "serde_derive",
    "serde_json",
    "serde_norway",
    "unsafe-libyaml-norway",
    "itoa",
    "ryu",
    "zmij",
    "memchr",
    "indexmap",
    "hashbrown",
    "equivalent",
    "bytes",
    "bytestring",
    "thiserror",
    "thiserror-impl",
    "proc-macro2",
    "quote",
    "syn",
    "unicode-ident",
    "sha2",
    "digest",
    "block-buffer",
    "crypto-common",
    "generic-array",
    "typenum",
    "cpufeatures",
    "cfg-if",
    "libc",
    "version_check",
    "base64",
];

#[test]
fn the_protocol_crate_is_built_from_no_runtime_and_no_io() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "harness9-protocol",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.contains(&"serde_json"), "the tree was read: {tree}");
    for name in &names {
        assert!(
            PROTOCOL_MAY_USE.contains(name),
            "harness9-protocol is built from {name}, which is not a pure data crate: the wire \
             layer must not depend on a runtime or IO (actix, tokio, awc, ...); the full tree:\n{tree}"
        );
    }
    for forbidden in ["tokio", "tokio-util", "actix", "actix-rt", "awc", "mio"] {
        assert!(!names.contains(&forbidden), "{forbidden} in {tree}");
    }
}

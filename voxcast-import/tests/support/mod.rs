//! Where the packages of the tests' dependencies are: the files they ship (a Minecraft region,
//! MagicaVoxel models) are read from there, never fetched.

use std::path::PathBuf;

/// The folder of the package `name` as Cargo resolved it for this workspace (from `cargo
/// metadata`, which the test runs with the Cargo that runs it).
#[must_use]
pub(crate) fn package_dir(name: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let packages = meta["packages"].as_array().expect("packages");
    let manifest = packages
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["manifest_path"].as_str())
        .unwrap_or_else(|| panic!("{name} is a dependency of this workspace"));
    PathBuf::from(manifest)
        .parent()
        .expect("a manifest lies in its package")
        .to_path_buf()
}

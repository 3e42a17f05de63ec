//! Rebuild when scripts/build-zygote.sh names another Python (src/lib.rs reads these).
fn main() {
    for name in [
        "AGENTJAIL_ZYGOTE_PYTHON",
        "AGENTJAIL_ZYGOTE_PYTHON_BINARY",
        "AGENTJAIL_ZYGOTE_PYTHON_HOME",
        "AGENTJAIL_ZYGOTE_PYTHON_VERSION",
    ] {
        println!("cargo:rerun-if-env-changed={name}");
    }
}

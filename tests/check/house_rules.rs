//! scripts/house-rules.sh's test-shape rules (10-12) fire on a planted test that passes for
//! the wrong reason, and stay quiet on its honest twin.

use std::process::Command;

fn findings(test_source: &str) -> String {
    let d = tempfile::Builder::new()
        .prefix("house-rules-test-")
        .tempdir()
        .unwrap();
    for sub in ["src", "crates", "tests/jail"] {
        std::fs::create_dir_all(d.path().join(sub)).unwrap();
    }
    std::fs::write(d.path().join("tests/jail/planted.rs"), test_source).unwrap();
    let out = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/house-rules.sh"
    ))
    .arg(d.path())
    .output()
    .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn test_shapes_that_pass_for_the_wrong_reason_are_flagged() {
    let planted = r#"
#[test]
fn planted() {
    if std::env::var("CI").is_ok() {
        return;
    }
    let p = "try:\n    f()\nexcept Exception as e:\n    print('BLOCKED', e)";
    std::thread::sleep(std::time::Duration::from_millis(5));
}
"#;
    let out = findings(planted);
    for rule in ["rule 10 ", "rule 11 ", "rule 12 "] {
        assert!(out.contains(rule), "{rule} did not fire:\n{out}");
    }
    let honest = r#"
#[test]
fn honest() {
    if !require_feature("x", false) {
        return;
    }
    let p = "try:\n    f()\nexcept OSError as e:\n    print('BLOCKED', e.errno)";
    while !done() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
"#;
    let out = findings(honest);
    for rule in ["rule 10 ", "rule 11 ", "rule 12 "] {
        assert!(
            !out.contains(rule),
            "{rule} fired on an honest test:\n{out}"
        );
    }
}

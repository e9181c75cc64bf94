//! The fixtures are found in the tree under test, not in the one the crate was built from.

use std::path::Path;

#[test]
fn the_tree_is_the_one_cargo_is_testing() {
    let pkg = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let tree = Path::new(&pkg).parent().unwrap();
    assert_eq!(testdata::workspace(), tree);
    assert_eq!(testdata::root(), tree.join("testdata/fixtures"));
    assert!(testdata::path("real/dlm2-6.1/n1/glocks.4").starts_with(tree));
    assert!(testdata::golden_dir().is_dir());
}

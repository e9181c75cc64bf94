//! Links libtracefs in one of two ways:
//!
//! - **The system's, shared** (the default, for development): found with pkg-config
//!   (Debian/Ubuntu `libtracefs-dev`, RHEL/Fedora `libtracefs-devel`; both need their
//!   libtraceevent package too).
//! - **A pinned copy, static** (the packages): `GLK_TRACEFS_STATIC=DIR` names a directory
//!   holding `libtracefs.a` and `libtraceevent.a` (`scripts/tracefs-static.sh` unpacks
//!   Debian 12's). The binary then needs no libtracefs on the node: Debian 11 ships 1.0.2,
//!   which lacks most functions glk calls, Ubuntu 20.04 ships none (see the README). With
//!   `compat/fcntl64.c` the archives also link against glibc 2.17 (RHEL 7, XenServer dom0).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=GLK_TRACEFS_STATIC");
    match std::env::var_os("GLK_TRACEFS_STATIC") {
        Some(dir) if !dir.is_empty() => link_static(PathBuf::from(dir)),
        _ => link_system(),
    }
}

/// The pinned static archives, then what they need from glibc: `fcntl64` for glibc before
/// 2.28 (`compat/fcntl64.c`), dlopen (libtraceevent loads its plugins with it) and the
/// pthread functions, which live in libdl and libpthread before glibc 2.34.
fn link_static(dir: PathBuf) {
    for lib in ["libtracefs.a", "libtraceevent.a"] {
        let path = dir.join(lib);
        println!("cargo:rerun-if-changed={}", path.display());
        if !path.is_file() {
            panic!(
                "\n\nGLK_TRACEFS_STATIC={} has no {lib}: run scripts/tracefs-static.sh, which \
                 unpacks the pinned libtracefs and libtraceevent archives and prints their \
                 directory.\n",
                dir.display()
            );
        }
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=tracefs");
    println!("cargo:rustc-link-lib=static=traceevent");
    println!("cargo:rerun-if-changed=compat/fcntl64.c");
    cc::Build::new()
        .file("compat/fcntl64.c")
        .warnings(true)
        .compile("glk_tracefs_compat");
    println!("cargo:rustc-link-lib=dylib=dl");
    println!("cargo:rustc-link-lib=dylib=pthread");
}

fn link_system() {
    if let Err(e) = pkg_config::Config::new()
        .atleast_version("1.2")
        .probe("libtracefs")
    {
        panic!(
            "\n\nlibtracefs was not found by pkg-config: {e}\n\
             Install it (Debian/Ubuntu: apt-get install libtracefs-dev libtraceevent-dev pkg-config;\n\
             RHEL/Fedora: dnf install libtracefs-devel libtraceevent-devel pkgconf-pkg-config),\n\
             or run ./scripts/setup-system.sh.\n"
        );
    }
}

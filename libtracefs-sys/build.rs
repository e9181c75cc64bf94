//! Finds the system libtracefs with pkg-config (Debian/Ubuntu `libtracefs-dev`,
//! RHEL/Fedora `libtracefs-devel`; both need their libtraceevent package too).

fn main() {
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

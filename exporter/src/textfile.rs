//! Textfile mode, for nodes where no new port may open: the metrics written (text format
//! 0.0.4) to a `*.prom` file that node_exporter's textfile collector serves. The file is
//! replaced atomically (written beside it under a name node_exporter skips, then renamed),
//! so a scrape never reads half of it, and is readable by node_exporter's user.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::exposition::{encode, Family, Format};

/// Writes `families` to `path` atomically, mode 0644.
pub fn write(path: &Path, families: &[Family]) -> io::Result<()> {
    if path.extension().and_then(|e| e.to_str()) != Some("prom") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: node_exporter's textfile collector reads only *.prom files",
                path.display()
            ),
        ));
    }
    let mut f = bundle::atomic::AtomicFile::create(path)?;
    f.file()
        .write_all(encode(families, Format::Text).as_bytes())?;
    f.file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Kind;

    #[test]
    fn written_whole_and_readable() {
        let (d, p) = testdata::scratch_file("glk.prom");
        let mut f = Family::new("gfs2_x", Kind::Gauge, "x");
        f.add(&[], 1.0);
        write(&p, &[f.clone()]).unwrap();
        write(&p, &[f]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "# HELP gfs2_x x\n# TYPE gfs2_x gauge\ngfs2_x 1\n"
        );
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        // Only the file itself is left: no temporary beside it.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let e = write(&d.path().join("glk.txt"), &[]).unwrap_err();
        assert!(e.to_string().contains("only *.prom"), "{e}");
    }
}

//! Output files that appear whole or not at all: written under a private temporary name in
//! the target's directory and renamed into place only once complete, so a kill, a full disk
//! or an error never leaves a half file that looks whole.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A file being written; [`AtomicFile::commit`] renames it into place. Dropped without
/// commit, the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path` (a hidden temporary file `.NAME.XXXXXX` beside it).
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: not a file name", path.display()),
                )
            })?;
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .tempfile_in(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// The file to write into.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes to disk and renames into place (replacing an older file of that name).
    pub fn commit(self) -> io::Result<()> {
        let named =
            |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", self.path.display()));
        self.tmp.as_file().sync_all().map_err(named)?;
        // Temporary files are created 0600; outputs get the usual mode under the umask.
        set_default_mode(self.tmp.as_file()).map_err(named)?;
        let path = self.path.clone();
        self.tmp.persist(&path).map_err(|e| {
            io::Error::new(e.error.kind(), format!("{}: {}", path.display(), e.error))
        })?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

/// Gives a file mode 0666 less the process umask, as `File::create` would have.
fn set_default_mode(f: &std::fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mask = umask();
    f.set_permissions(std::fs::Permissions::from_mode(0o666 & !mask))
}

fn umask() -> u32 {
    // /proc/self/status has the umask without changing it (Linux 4.7+).
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appears_only_on_commit() {
        let (dir, p) = testdata::scratch_file("out.json");
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"{}").unwrap();
        assert!(!p.exists());
        f.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        let mut g = AtomicFile::create(&p).unwrap();
        g.write_all(b"half").unwrap();
        drop(g);
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

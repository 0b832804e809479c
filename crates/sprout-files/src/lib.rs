//! Bounded reads and whole-or-nothing writes of the files the project reads and writes.
//!
//! - [`read_capped`] / [`read_to_string_capped`]: a file (or a device, a pipe) read through one
//!   open handle, refused with [`ReadError::TooLarge`] as soon as it passes a byte cap, so that
//!   a 1 GiB file or `/dev/zero` given by mistake costs at most the cap in memory.
//! - [`excerpt`]: at most [`EXCERPT_CHARS`] characters of a bad line, for error messages that
//!   quote input without echoing all of it (at most [`EXCERPT_BYTES`] bytes).
//! - [`write_atomically`] and [`AtomicFile`]: a file appears whole under its name or not at all
//!   (written beside it, flushed to disk, then renamed into place), so a run killed midway never
//!   leaves a cut file that looks complete.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Longest excerpt of an input line quoted in an error message, characters.
pub const EXCERPT_CHARS: usize = 60;
/// Longest excerpt of an input line quoted in an error message, bytes of UTF-8 (60 characters
/// of another script take up to 240).
pub const EXCERPT_BYTES: usize = 120;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Opening or reading failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: io::Error,
    },
    /// The file holds more than the cap.
    #[error("{} is larger than {} (the most this input may hold)", path.display(), human_bytes(*cap))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap, bytes.
        cap: u64,
    },
    /// The file is not UTF-8 text.
    #[error("{} is not text (UTF-8)", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
}

impl ReadError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::NotText { path } => path,
        }
    }
}

/// `bytes` as a short human figure ("64 MiB", "4 KiB", "100 bytes").
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{} {unit}", bytes / size);
        }
    }
    format!("{bytes} bytes")
}

/// Reads all of `path` through one open handle, at most `cap` bytes: a larger file (or an
/// endless device) is refused with [`ReadError::TooLarge`] after reading `cap + 1` bytes.
pub fn read_capped(path: impl AsRef<Path>, cap: u64) -> Result<Vec<u8>, ReadError> {
    let path = path.as_ref();
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    read_capped_from(file, path, cap)
}

/// Reads all of an already open `reader` (named `path` in errors), at most `cap` bytes; for
/// callers that checked the open file (its permissions, its kind) before reading it.
pub fn read_capped_from(reader: impl Read, path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(bytes)
}

/// [`read_capped`] as UTF-8 text ([`ReadError::NotText`] otherwise).
pub fn read_to_string_capped(path: impl AsRef<Path>, cap: u64) -> Result<String, ReadError> {
    let path = path.as_ref();
    String::from_utf8(read_capped(path, cap)?).map_err(|_| ReadError::NotText {
        path: path.to_path_buf(),
    })
}

/// At most [`EXCERPT_CHARS`] characters and [`EXCERPT_BYTES`] bytes of `line`, control
/// characters shown as `?`, with `…` when cut: what an error message may quote of an input
/// line.
pub fn excerpt(line: &str) -> String {
    let mut out = String::new();
    let mut cut = false;
    for (n, c) in line.chars().enumerate() {
        let c = if c.is_control() { '?' } else { c };
        if n == EXCERPT_CHARS || out.len() + c.len_utf8() > EXCERPT_BYTES {
            cut = true;
            break;
        }
        out.push(c);
    }
    if cut {
        out.push('…');
    }
    out
}

/// A file being written beside its final name; [`AtomicFile::commit`] flushes it to disk and
/// renames it into place. Dropped without a commit (an error, a panic), it is removed and the
/// final name is untouched; killed, it leaves only a hidden temporary file.
pub struct AtomicFile {
    target: PathBuf,
    tmp: tempfile::NamedTempFile,
}

impl AtomicFile {
    /// Starts writing what will become `path` (its directory must exist).
    pub fn create(path: impl AsRef<Path>) -> io::Result<AtomicFile> {
        let target = path.as_ref().to_path_buf();
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let stem = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // 0666 less the umask, as File::create gives: tempfile's default (0600) would make
        // every output private to its writer.
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{stem}."))
            .suffix(".part")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(without_temporary_name)?;
        Ok(AtomicFile { target, tmp })
    }

    /// Flushes what was written to disk and renames it to the final name, replacing any file
    /// there.
    pub fn commit(mut self) -> io::Result<()> {
        self.tmp.as_file_mut().flush()?;
        self.tmp.as_file().sync_all()?;
        self.tmp.persist(&self.target).map_err(|e| e.error)?;
        Ok(())
    }
}

/// The system's error under tempfile's, without the random temporary name tempfile appends
/// (" at path NAME"): the caller names the target, and a message that changes from run to run
/// cannot be compared. tempfile keeps the system's error in a private type, so its text is cut.
fn without_temporary_name(e: io::Error) -> io::Error {
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((system, _)) => io::Error::new(e.kind(), system.to_string()),
        None => e,
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.as_file_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.as_file_mut().flush()
    }
}

/// Writes `bytes` to `path` whole or not at all ([`AtomicFile`]).
pub fn write_atomically(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes.as_ref())?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_cap_is_refused_and_one_at_the_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![b'x'; 100]).unwrap();
        assert_eq!(read_capped(&p, 100).unwrap().len(), 100);
        let e = read_capped(&p, 99).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { cap: 99, .. }), "{e}");
        assert!(e.to_string().contains("larger than 99 bytes"), "{e}");
    }

    #[test]
    fn an_endless_device_costs_at_most_the_cap() {
        let e = read_capped("/dev/zero", 1 << 20).unwrap_err();
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
    }

    #[test]
    fn binary_is_not_text_and_a_missing_file_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bin");
        std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
        assert!(matches!(
            read_to_string_capped(&p, 10),
            Err(ReadError::NotText { .. })
        ));
        let e = read_capped(dir.path().join("missing"), 10).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn an_excerpt_is_short_and_printable() {
        let long = "a".repeat(1000);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt("1\t2\u{1b}[31m"), "1?2?[31m");
        assert_eq!(excerpt("short"), "short");
        let wide = "\u{fffd}".repeat(1000);
        let e = excerpt(&wide);
        assert!(
            e.len() <= EXCERPT_BYTES + '…'.len_utf8(),
            "{} bytes",
            e.len()
        );
        assert!(e.ends_with('…'));
    }

    #[test]
    fn an_uncommitted_file_leaves_the_old_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        write_atomically(&p, "old\n").unwrap();
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"new, cut mid-").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"new\n").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\n");
    }

    #[test]
    fn an_output_gets_the_mode_file_create_would_give() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        let atomic = dir.path().join("atomic");
        write_atomically(&atomic, "x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&atomic), mode(&plain));
    }

    #[test]
    fn a_missing_folder_is_the_systems_error_without_a_random_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing-folder").join("out.csv");
        let e = AtomicFile::create(&p).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(e.to_string(), io::Error::from_raw_os_error(2).to_string());
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
    }
}

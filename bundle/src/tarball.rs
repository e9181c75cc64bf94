//! Extracting a tarball as GNU tar reads a damaged one: a member whose header is damaged
//! is skipped, and reading goes on at the next block that is a whole header ("Skipping to
//! next header"), so that the members after the damage are not lost. Zero blocks that end
//! the archive early are looked past in the same way (GNU tar's `--ignore-zeros`). A
//! stream cut short (an upload that stopped) or one the decompressor cannot read further
//! ends the extraction: nothing after it can be read. A member that would leave less than
//! [`RESERVE_PERCENT`] of the filesystem it is extracted to free ([`room`]) is not
//! extracted, and is named.

use std::io::{self, Read};
use std::path::Path;

use crate::room::{self, RESERVE_PERCENT};

/// A tar block: headers and data are laid out in these.
const BLOCK: usize = 512;

/// Damaged places said in full; the rest are counted.
const DAMAGE_SAID: usize = 8;

/// A reader that counts the bytes read through it: where in the (decompressed) stream
/// the archive is.
struct Counted<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Why reading members stopped.
enum Stop {
    /// The end of the archive: a zero block, or the end of the stream.
    End,
    /// A header could not be read (damaged, or its ends read wrongly).
    Header(io::Error),
    /// A member's data could not be read or written (the stream was cut short, say).
    Data(io::Error, String),
}

/// Extracts every member it can read into `into`: a damaged header is skipped to the next
/// whole header, and members after an early end of the archive are read too. Returns what
/// could not be read, in words (`None`: nothing); an error when no member at all could be.
pub(crate) fn extract(input: impl Read, into: &Path) -> io::Result<Option<String>> {
    extract_within(input, into, &|| room::left(into))
}

/// [`extract`], with `room` telling how many bytes may still be written (`None`: no
/// limit known).
fn extract_within(
    input: impl Read,
    into: &Path,
    room: &dyn Fn() -> Option<u64>,
) -> io::Result<Option<String>> {
    std::fs::create_dir_all(into)?;
    let mut input = Counted {
        inner: input,
        pos: 0,
    };
    let mut members = 0u64;
    let mut damage = Vec::new();
    let mut too_big = Vec::new();
    let mut found = None;
    loop {
        let read = read_members(
            &mut input,
            found.take(),
            into,
            room,
            &mut members,
            &mut too_big,
        )?;
        let bad_header = match read {
            Stop::End => None,
            Stop::Header(e) => Some((header_start(input.pos), root_cause(&e))),
            Stop::Data(e, name) if members == 0 => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("`{name}`: {}", root_cause(&e)),
                ));
            }
            Stop::Data(e, name) => {
                damage.push(format!(
                    "damaged or cut short in `{name}` after {members} whole member(s) ({}): what follows is not read",
                    root_cause(&e)
                ));
                break;
            }
        };
        let from = input.pos.next_multiple_of(BLOCK as u64);
        let what = match &bad_header {
            Some((at, cause)) => format!("a damaged header at byte {at} ({cause})"),
            None => format!("the archive's end at byte {from} (zero blocks)"),
        };
        match next_header(&mut input) {
            Ok(Some(block)) => {
                let (at, next) = (bad_header.map_or(from, |b| b.0), input.pos - BLOCK as u64);
                damage.push(format!(
                    "{what} after {members} whole member(s): skipped to the next header, at byte {next} ({} bytes passed over)",
                    next - at
                ));
                found = Some(block);
            }
            Ok(None) => {
                if let Some((_, cause)) = bad_header {
                    if members == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("not a tar archive: {cause}, and no whole header after it"),
                        ));
                    }
                    damage.push(format!(
                        "{what} after {members} whole member(s), and no whole header after it"
                    ));
                }
                break;
            }
            Err(e) if members == 0 => return Err(e),
            Err(e) => {
                damage.push(format!(
                    "{what} after {members} whole member(s), and unreadable after byte {} ({}): what follows is not read",
                    input.pos,
                    root_cause(&e)
                ));
                break;
            }
        }
    }
    if !too_big.is_empty() {
        damage.push(not_extracted(&too_big, into));
    }
    Ok(said(damage))
}

/// The members passed over for room, as one place, the first [`DAMAGE_SAID`] named.
fn not_extracted(too_big: &[String], into: &Path) -> String {
    let named = too_big[..too_big.len().min(DAMAGE_SAID)].join(", ");
    let more = match too_big.len().saturating_sub(DAMAGE_SAID) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "{} member(s) not extracted, larger than the room left in {} with {RESERVE_PERCENT}% of \
         its filesystem kept free (TMPDIR chooses another directory): {named}{more}",
        too_big.len(),
        into.display()
    )
}

/// Reads members until one cannot be: `first`, a header already read (found by
/// [`next_header`]), comes before the rest of `input`. A member larger than the `room`
/// left is passed over, and named in `too_big`.
fn read_members<R: Read>(
    input: &mut Counted<R>,
    first: Option<[u8; BLOCK]>,
    into: &Path,
    room: &dyn Fn() -> Option<u64>,
    members: &mut u64,
    too_big: &mut Vec<String>,
) -> io::Result<Stop> {
    let first = first.map_or_else(Vec::new, |b| b.to_vec());
    let mut ar = tar::Archive::new(io::Cursor::new(first).chain(input));
    for entry in ar.entries()? {
        let mut e = match entry {
            Ok(e) => e,
            Err(e) => return Ok(Stop::Header(e)),
        };
        // A member's name is the tarball's bytes: quoted, never echoed.
        let name = glockparse::quote::quote(&e.path_bytes(), 200);
        let size = e.header().entry_size().unwrap_or(0);
        if room().is_some_and(|left| size > left) {
            too_big.push(format!("`{name}` ({size} bytes)"));
            continue;
        }
        // unpack_in refuses paths that would escape the directory.
        match e.unpack_in(into) {
            Ok(_) => *members += 1,
            Err(err) => return Ok(Stop::Data(err, name)),
        }
    }
    Ok(Stop::End)
}

/// Where the header that ended at `pos` began (the tar crate reads a whole block first).
fn header_start(pos: u64) -> u64 {
    pos.next_multiple_of(BLOCK as u64)
        .saturating_sub(BLOCK as u64)
}

/// The next block of `input`, from the next block boundary, that is a whole header (not
/// all zeros, its checksum right); `None` at the end of the stream.
fn next_header<R: Read>(input: &mut Counted<R>) -> io::Result<Option<[u8; BLOCK]>> {
    let pad = input.pos.next_multiple_of(BLOCK as u64) - input.pos;
    io::copy(&mut input.by_ref().take(pad), &mut io::sink())?;
    let mut block = [0u8; BLOCK];
    loop {
        let mut got = 0;
        while got < BLOCK {
            match input.read(&mut block[got..])? {
                0 => return Ok(None),
                n => got += n,
            }
        }
        if is_header(&block) {
            return Ok(Some(block));
        }
    }
}

/// Whether a block is a header: not all zeros, and the checksum it holds is the one the
/// tar crate computes for it (`set_cksum`, on a copy).
fn is_header(block: &[u8; BLOCK]) -> bool {
    if block.iter().all(|&b| b == 0) {
        return false;
    }
    let held = tar::Header::from_byte_slice(block);
    let mut computed = held.clone();
    computed.set_cksum();
    held.cksum().is_ok_and(|c| computed.cksum().ok() == Some(c))
}

/// The damaged places as one text, the first [`DAMAGE_SAID`] in full.
fn said(damage: Vec<String>) -> Option<String> {
    if damage.len() <= DAMAGE_SAID {
        return (!damage.is_empty()).then(|| damage.join("; "));
    }
    let more = damage.len() - DAMAGE_SAID;
    Some(format!(
        "{}; and {more} more damaged place(s)",
        damage[..DAMAGE_SAID].join("; ")
    ))
}

/// The innermost cause of an error (the tar crate wraps an I/O error in words naming the
/// temporary path it wrote to), quoted: it may hold a member's name, the tarball's bytes.
fn root_cause(e: &io::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    glockparse::quote::quote(cause.to_string().as_bytes(), 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tarball of members `m0`..`mN` (member `i` holds `i + 1` blocks of its letter) and
    /// where each member's header begins.
    fn tarball(n: usize) -> (Vec<u8>, Vec<usize>) {
        tarball_of((0..n).map(|i| (format!("m{i}"), i + 1)))
    }

    /// A tarball of `members`, each a name and its size in blocks (member `i` holding
    /// the letter `a + i`), and where each member's header begins.
    fn tarball_of(members: impl IntoIterator<Item = (String, usize)>) -> (Vec<u8>, Vec<usize>) {
        let mut b = tar::Builder::new(Vec::new());
        let mut starts = Vec::new();
        for (i, (name, blocks)) in members.into_iter().enumerate() {
            starts.push(b.get_ref().len());
            let data = vec![b'a' + i as u8; blocks * BLOCK];
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, &data[..]).unwrap();
        }
        (b.into_inner().unwrap(), starts)
    }

    /// The members extracted (name and size), and the damage said.
    type Extracted = (Vec<(String, u64)>, Option<String>);

    /// Extracts `bytes`.
    fn read(bytes: &[u8]) -> io::Result<Extracted> {
        let dir = tempfile::tempdir().unwrap();
        let damage = extract(bytes, dir.path())?;
        Ok((listed(dir.path()), damage))
    }

    /// The files in `dir`, name and size, sorted.
    fn listed(dir: &Path) -> Vec<(String, u64)> {
        let mut found: Vec<(String, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, e.metadata().unwrap().len())
            })
            .collect();
        found.sort();
        found
    }

    /// Members `names`, whole, in the order `read` gives them.
    fn members(names: &[usize]) -> Vec<(String, u64)> {
        let mut v: Vec<_> = names
            .iter()
            .map(|&i| (format!("m{i}"), ((i + 1) * BLOCK) as u64))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_whole_tarball_is_read_without_a_word() {
        let (t, _) = tarball(4);
        assert_eq!(read(&t).unwrap(), (members(&[0, 1, 2, 3]), None));
        // As GNU tar writes it: padded with zeros to a 10 KiB record.
        let mut padded = t.clone();
        padded.resize(t.len().next_multiple_of(10240), 0);
        assert_eq!(read(&padded).unwrap(), (members(&[0, 1, 2, 3]), None));
    }

    /// A member larger than the room left is passed over and named; the members before
    /// and after it are extracted.
    #[test]
    fn a_member_larger_than_the_room_left_is_named_not_extracted() {
        let sizes = [("small", 1), ("big", 5), ("after", 2), ("bigger", 6)];
        let (t, _) = tarball_of(sizes.map(|(name, blocks)| (name.to_string(), blocks)));
        let dir = tempfile::tempdir().unwrap();
        let room = || Some(3 * BLOCK as u64);
        let damage = extract_within(&t[..], dir.path(), &room).unwrap().unwrap();
        let whole = |name: &str, blocks: usize| (name.to_string(), (blocks * BLOCK) as u64);
        assert_eq!(listed(dir.path()), [whole("after", 2), whole("small", 1)]);
        assert_eq!(
            damage,
            format!(
                "2 member(s) not extracted, larger than the room left in {} with 5% of its \
                 filesystem kept free (TMPDIR chooses another directory): `big` (2560 bytes), \
                 `bigger` (3072 bytes)",
                dir.path().display()
            )
        );
        // Where the filesystem cannot be asked, every member is extracted.
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(extract_within(&t[..], dir.path(), &|| None).unwrap(), None);
        assert_eq!(listed(dir.path()).len(), 4);
    }

    /// A damaged header costs its member only: the members after it are read, and the
    /// skip is said with where it was.
    #[test]
    fn a_damaged_header_costs_only_its_member() {
        let (mut t, starts) = tarball(4);
        t[starts[2]] ^= 0x20;
        let (found, damage) = read(&t).unwrap();
        assert_eq!(found, members(&[0, 1, 3]));
        let next = starts[3];
        assert_eq!(
            damage.unwrap(),
            format!(
                "a damaged header at byte {} (archive header checksum mismatch) after 2 whole \
                 member(s): skipped to the next header, at byte {next} ({} bytes passed over)",
                starts[2],
                next - starts[2]
            )
        );
        // The first member's header: all the others are read.
        let (mut t, _) = tarball(3);
        t[100] ^= 0x01;
        let (found, damage) = read(&t).unwrap();
        assert_eq!(found, members(&[1, 2]));
        assert!(
            damage.unwrap().starts_with("a damaged header at byte 0 "),
            "the first header"
        );
    }

    /// Zero blocks where a header should be (a hole in a copy, or two archives one after
    /// the other) end the archive early: what follows is read as well, and said.
    #[test]
    fn members_after_zero_blocks_are_read() {
        let (mut t, starts) = tarball(3);
        t[starts[1]..starts[1] + BLOCK].fill(0);
        let (found, damage) = read(&t).unwrap();
        assert_eq!(found, members(&[0, 2]));
        assert_eq!(
            damage.unwrap(),
            format!(
                "the archive's end at byte {} (zero blocks) after 1 whole member(s): skipped \
                 to the next header, at byte {} ({} bytes passed over)",
                starts[1] + BLOCK,
                starts[2],
                starts[2] - starts[1] - BLOCK
            )
        );
    }

    /// Damage at the end: a damaged last header, or a cut inside the last member (whose
    /// part before the cut is kept, as GNU tar keeps it).
    #[test]
    fn damage_with_nothing_after_it_is_said() {
        let (mut t, starts) = tarball(3);
        t[starts[2] + 5] ^= 0x40;
        let (found, damage) = read(&t).unwrap();
        assert_eq!(found, members(&[0, 1]));
        assert_eq!(
            damage.unwrap(),
            format!(
                "a damaged header at byte {} (archive header checksum mismatch) after 2 whole \
                 member(s), and no whole header after it",
                starts[2]
            )
        );
        let (t, starts) = tarball(3);
        let (found, damage) = read(&t[..starts[2] + BLOCK + 100]).unwrap();
        let mut cut = members(&[0, 1]);
        cut.push(("m2".into(), 100));
        assert_eq!(found, cut);
        assert!(
            damage
                .as_deref()
                .unwrap()
                .starts_with("damaged or cut short in `m2` after 2 whole member(s)"),
            "{damage:?}"
        );
    }

    /// What the tar crate says of a damaged header reaches the terminal quoted: here a
    /// checksum field that is no number, in a header naming its member with an escape.
    #[test]
    fn what_a_damaged_header_says_is_quoted() {
        let (mut t, starts) = tarball(2);
        t[starts[1]..starts[1] + 4].copy_from_slice(b"\x1b[2J");
        t[starts[1] + 148..starts[1] + 156].copy_from_slice(b"zzzzzzzz");
        let (found, damage) = read(&t).unwrap();
        assert_eq!(found, members(&[0]));
        let damage = damage.unwrap();
        assert!(!damage.contains('\x1b'), "{damage}");
        assert!(damage.contains("\\x1b[2J"), "{damage}");
    }

    /// A file with no whole header is no tar archive; damage in each of many headers is
    /// said for the first few, the rest counted.
    #[test]
    fn no_header_is_an_error_and_many_damaged_ones_are_counted() {
        let e = read(&[b'x'; 4 * BLOCK]).unwrap_err();
        assert!(e.to_string().starts_with("not a tar archive: "), "{e}");
        let (mut t, starts) = tarball(20);
        for s in starts.iter().skip(1).step_by(2) {
            t[*s] ^= 0x20;
        }
        let (found, damage) = read(&t).unwrap();
        assert_eq!(found, members(&[0, 2, 4, 6, 8, 10, 12, 14, 16, 18]));
        let damage = damage.unwrap();
        assert_eq!(
            damage.matches("a damaged header").count(),
            DAMAGE_SAID,
            "{damage}"
        );
        assert!(
            damage.ends_with("; and 2 more damaged place(s)"),
            "{damage}"
        );
    }
}

//! An event's `format` file (tracefs `events/SYSTEM/EVENT/format`): its id, its fields
//! with their places in the record, and its print format.
//!
//! ```text
//! name: gfs2_glock_queue
//! ID: 1390
//! format:
//!     field:unsigned short common_type;   offset:0;   size:2; signed:0;
//!     ...
//!     field:u64 glnum;    offset:16;  size:8; signed:0;
//!     field:__data_loc char[] name;   offset:40;  size:4; signed:0;
//!
//! print fmt: "%u,%u glock %u:%llu %squeue %s", ...
//! ```

use std::fmt;

/// How a field's bytes are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A number of `size` bytes.
    Scalar,
    /// A fixed array: `count` elements; a `char` array is a string. A flexible array
    /// (`char buf[]`, count 0) is the rest of the record.
    Array {
        /// Elements.
        count: usize,
        /// Whether the elements are `char`s (printed as a string).
        chars: bool,
    },
    /// `__data_loc`: a u32 whose low 16 bits are the data's offset in the record and
    /// high 16 bits its length.
    DataLoc,
    /// `__rel_loc` (5.19+): the same, the offset counted from the field's end.
    RelLoc,
}

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name (`glnum`, `common_pid`).
    pub name: String,
    /// Its C type as the format file writes it (`u64`, `char[16]`).
    pub ctype: String,
    /// Where it starts in the record.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
    /// Whether it is signed.
    pub signed: bool,
    /// How its bytes are laid out.
    pub kind: FieldKind,
}

/// A format file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// The event's name (`gfs2_glock_queue`).
    pub name: String,
    /// Its id, the record's `common_type`.
    pub id: u16,
    /// Its fields, the common ones first.
    pub fields: Vec<Field>,
    /// What follows `print fmt: `: the quoted format and its arguments.
    pub print: String,
}

/// Why a format file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFormat(pub String);

impl fmt::Display for BadFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl EventFormat {
    /// Reads a format file's text.
    pub fn parse(text: &str) -> Result<EventFormat, BadFormat> {
        let mut name = None;
        let mut id = None;
        let mut print = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let t = line.trim_start();
            if let Some(v) = t.strip_prefix("name: ") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = t.strip_prefix("ID: ") {
                id = v.trim().parse::<u16>().ok();
            } else if let Some(v) = t.strip_prefix("print fmt: ") {
                print = Some(v.to_string());
            } else if t.starts_with("field:") {
                fields.push(
                    parse_field(t).ok_or_else(|| BadFormat(format!("unreadable field {t:?}")))?,
                );
            }
        }
        Ok(EventFormat {
            name: name.ok_or_else(|| BadFormat("no name: line".into()))?,
            id: id.ok_or_else(|| BadFormat("no ID: line".into()))?,
            fields,
            print: print.ok_or_else(|| BadFormat("no print fmt: line".into()))?,
        })
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<(usize, &Field)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }
}

/// `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`
fn parse_field(line: &str) -> Option<Field> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts.next()?.strip_prefix("field:")?.trim();
    let mut num =
        |key: &str| -> Option<usize> { parts.next()?.strip_prefix(key)?.trim().parse().ok() };
    let offset = num("offset:")?;
    let size = num("size:")?;
    let signed = num("signed:").unwrap_or(0) == 1;
    let (kind, name, ctype) = declaration(decl, size)?;
    Some(Field {
        name,
        ctype,
        offset,
        size,
        signed,
        kind,
    })
}

/// The kind, name and type of a declaration (`unsigned long flags`, `char comm[16]`,
/// `__data_loc char[] name`, `int args[6]`).
fn declaration(decl: &str, size: usize) -> Option<(FieldKind, String, String)> {
    let (loc, decl) = if let Some(d) = decl.strip_prefix("__data_loc ") {
        (Some(FieldKind::DataLoc), d)
    } else if let Some(d) = decl.strip_prefix("__rel_loc ") {
        (Some(FieldKind::RelLoc), d)
    } else {
        (None, decl)
    };
    let (head, count) = match decl.strip_suffix(']') {
        Some(d) => {
            let open = d.rfind('[')?;
            (d[..open].trim_end(), Some(d[open + 1..].trim()))
        }
        None => (decl, None),
    };
    // The name is the C identifier that ends the declaration; the type is what comes
    // before it, and there must be one.
    let split = head
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
        .len();
    let (ctype, name) = (head[..split].trim(), &head[split..]);
    if name.is_empty() || ctype.is_empty() {
        return None;
    }
    let (name, ctype) = (name.to_string(), ctype.to_string());
    let kind = match (loc, count) {
        (Some(k), _) => k,
        (None, None) => FieldKind::Scalar,
        (None, Some(n)) => {
            // `char buf[]`: a flexible array, the rest of the record. Otherwise a number
            // (`16`), or on older kernels, for some of ftrace's own events, the sum it
            // was defined by (5.10's `char func[30+1]`, from `TRACE_FUNC_SIZE+1`; 6.1
            // writes `func[31]`): no more elements than the field has bytes.
            let count = if n.is_empty() {
                0
            } else {
                let c = usize::try_from(super::print::constant(n)?).ok()?;
                (c <= size).then_some(c)?
            };
            FieldKind::Array {
                count,
                chars: ctype.trim_start_matches("const ").trim() == "char"
                    || (count > 0 && size / count == 1 && ctype.ends_with("char")),
            }
        }
    };
    Some((kind, name, ctype))
}

impl Field {
    /// The field as an integer (sign-extended when signed); `None` past the record's end.
    #[inline]
    pub fn int(&self, rec: &[u8]) -> Option<u64> {
        load(rec, self.offset, self.size.min(8), self.signed)
    }

    /// Element `i` of an array field.
    pub fn element(&self, rec: &[u8], i: usize) -> Option<u64> {
        let FieldKind::Array { count, .. } = self.kind else {
            return self.int(rec).filter(|_| i == 0);
        };
        if i >= count || count == 0 {
            return None;
        }
        let each = self.size / count;
        load(rec, self.offset + i * each, each.min(8), self.signed)
    }

    /// The bytes a `__data_loc`/`__rel_loc` field points at, or a fixed array's bytes.
    pub fn bytes<'r>(&self, rec: &'r [u8]) -> Option<&'r [u8]> {
        match self.kind {
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let word = load(rec, self.offset, 4, false)? as u32;
                let mut at = (word & 0xffff) as usize;
                let len = (word >> 16) as usize;
                if self.kind == FieldKind::RelLoc {
                    at += self.offset + self.size;
                }
                rec.get(at..at + len)
            }
            FieldKind::Array { count: 0, .. } => rec.get(self.offset..),
            _ => rec.get(self.offset..self.offset + self.size),
        }
    }

    /// The field as a C string: its bytes up to the first NUL.
    pub fn string<'r>(&self, rec: &'r [u8]) -> Option<&'r [u8]> {
        let b = self.bytes(rec)?;
        Some(&b[..memchr::memchr(0, b).unwrap_or(b.len())])
    }
}

/// `size` little-endian bytes at `at`, sign-extended when `signed`.
#[inline]
fn load(rec: &[u8], at: usize, size: usize, signed: bool) -> Option<u64> {
    let b = rec.get(at..at + size)?;
    let mut v = [0u8; 8];
    v[..size].copy_from_slice(b);
    let raw = u64::from_le_bytes(v);
    if signed && size < 8 && size > 0 {
        let shift = 64 - 8 * size as u32;
        Some(((raw << shift) as i64 >> shift) as u64)
    } else {
        Some(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_format_file() {
        let text =
            std::fs::read_to_string(testdata::path("real/dlmev612/n1/format.dlm_lock_start"))
                .unwrap();
        let f = EventFormat::parse(&text).unwrap();
        assert_eq!(f.name, "dlm_lock_start");
        let (_, common) = f.field("common_pid").unwrap();
        assert_eq!((common.offset, common.size, common.signed), (4, 4, true));
        let (_, res) = f.field("res_name").unwrap();
        assert_eq!(res.kind, FieldKind::DataLoc);
        assert!(f.print.starts_with("\"ls_id=%u lkb_id=%x"));
    }

    #[test]
    fn declarations() {
        let d = |s: &str, size| declaration(s, size).unwrap();
        assert_eq!(
            d("char comm[16]", 16),
            (
                FieldKind::Array {
                    count: 16,
                    chars: true
                },
                "comm".into(),
                "char".into()
            )
        );
        assert_eq!(
            d("unsigned long args[6]", 48).0,
            FieldKind::Array {
                count: 6,
                chars: false
            }
        );
        // 5.10's ftrace `branch` event: the count written as its definition's sum.
        assert_eq!(
            d("char func[30+1]", 31),
            (
                FieldKind::Array {
                    count: 31,
                    chars: true
                },
                "func".into(),
                "char".into()
            )
        );
        assert_eq!(
            d("u32 x[2*0x4 - 1]", 28).0,
            FieldKind::Array {
                count: 7,
                chars: false
            }
        );
        for bad in [
            "char a[N+1]",
            "char a[1-2]",
            "char a[+]",
            "char a[99999999999999999999]",
        ] {
            assert_eq!(declaration(bad, 1), None, "{bad}");
        }
        assert_eq!(d("__data_loc char[] name", 4).0, FieldKind::DataLoc);
        assert_eq!(d("__rel_loc char[] name", 4).0, FieldKind::RelLoc);
        assert_eq!(d("const char * str", 8).1, "str");
        assert_eq!(d("unsigned long flags", 8).2, "unsigned long");
        // A damaged format (a trace.dat's bytes read as UTF-8): no name, no panic.
        assert_eq!(declaration("__u32 lk\u{fffd}", 4), None);
        assert_eq!(d("__u32 lk\u{fffd}b_id", 4).1, "b_id");
        assert_eq!(declaration("flags", 4), None);
    }

    #[test]
    fn loads() {
        let rec = [0xff, 0xff, 0, 0, 5, 0, 0, 0];
        let f = |offset, size, signed| Field {
            name: "x".into(),
            ctype: "int".into(),
            offset,
            size,
            signed,
            kind: FieldKind::Scalar,
        };
        assert_eq!(f(0, 2, true).int(&rec), Some(u64::MAX));
        assert_eq!(f(0, 2, false).int(&rec), Some(0xffff));
        assert_eq!(f(4, 4, true).int(&rec), Some(5));
        assert_eq!(f(6, 4, true).int(&rec), None);
    }
}

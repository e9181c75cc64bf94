//! The kernel's ring-buffer pages, as `per_cpu/cpuN/trace_pipe_raw` gives them and as a
//! trace.dat stores them (kernel/trace/ring_buffer.c; libtraceevent's kbuffer-parse.c reads
//! the same layout).
//!
//! A page is a header, `u64 time_stamp` and `local_t commit` (a `long`: 8 bytes on 64-bit
//! kernels, `events/header_page` says), then `commit` bytes of events. Each event starts
//! with a 32-bit word, `type_len:5` and `time_delta:27`:
//! - `type_len` 1-28: a data record of `type_len * 4` bytes follows;
//! - 0: the next word is the record's length plus 4, the record follows it;
//! - 29, padding: the next word is its length (a padding with no delta ends the page);
//! - 30, time extend: `time_delta` plus the next word shifted by 27 is the delta;
//! - 31, absolute time stamp: the same sum is the time itself (its low 59 bits).
//!
//! `commit`'s top bits say that events were lost before the page (bit 31) and that their
//! number is stored after the data (bit 30).

/// How many bits `time_delta` has.
const TS_SHIFT: u32 = 27;
/// `commit`'s length bits.
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// `commit` bit: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// `commit` bit: their number is stored after the page's data.
const MISSED_STORED: u64 = 1 << 30;

const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;

/// One event record of a page: its time (the page's clock, in its units) and its bytes
/// (the event's fields, `common_type` first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The event's time stamp.
    pub ts: u64,
    /// The record's bytes, as long as the ring buffer stored them (rounded up to 4).
    pub data: &'a [u8],
}

/// Lost events a page announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// None.
    None,
    /// Some, number unknown.
    Some,
    /// This many.
    Count(u64),
}

/// Why a page could not be read to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPage(pub String);

impl std::fmt::Display for BadPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A ring-buffer page and the records in it.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The page's first time stamp.
    pub time_stamp: u64,
    /// The lost events before this page.
    pub missed: Missed,
    data: &'a [u8],
}

/// The layout of the pages (`events/header_page`): the size of a page's `commit` (where
/// the data starts: 16 with an 8-byte `commit`, 12 with a 4-byte one) and of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// The size of `commit` (4 or 8).
    pub commit_size: usize,
    /// The size of a page: its `data` field's offset plus size.
    pub page_size: usize,
}

impl PageLayout {
    /// A 64-bit kernel's layout with 4 KiB pages.
    pub const LONG_8: PageLayout = PageLayout {
        commit_size: 8,
        page_size: 4096,
    };

    /// The layout `events/header_page` describes.
    pub fn from_header_page(text: &str) -> Option<PageLayout> {
        let field = |name: &str, key: &str| -> Option<usize> {
            let line = text.lines().find(|l| l.contains(name))?;
            line.split(';')
                .find_map(|p| p.trim().strip_prefix(key))?
                .trim()
                .parse()
                .ok()
        };
        let commit_size = field(" commit;", "size:").filter(|n| matches!(n, 4 | 8))?;
        let page_size = field(" data;", "offset:")? + field(" data;", "size:")?;
        Some(PageLayout {
            commit_size,
            page_size,
        })
    }

    /// Where a page's data starts.
    pub fn data_start(self) -> usize {
        8 + self.commit_size
    }
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl<'a> Page<'a> {
    /// Reads a page's header. `bytes` is the whole page as read (a page read from
    /// `trace_pipe_raw` may be shorter than the page size when the writer was on it).
    pub fn parse(bytes: &'a [u8], layout: PageLayout) -> Result<Page<'a>, BadPage> {
        let start = layout.data_start();
        let time_stamp = read_u64(bytes, 0).ok_or_else(|| short(bytes.len()))?;
        let commit = match layout.commit_size {
            8 => read_u64(bytes, 8),
            _ => read_u32(bytes, 8).map(u64::from),
        }
        .ok_or_else(|| short(bytes.len()))?;
        let size = (commit & COMMIT_MASK) as usize;
        let data = bytes.get(start..start + size).ok_or_else(|| {
            BadPage(format!(
                "page says it holds {size} bytes of events, but {} follow its header",
                bytes.len().saturating_sub(start)
            ))
        })?;
        let missed = if commit & MISSED_EVENTS == 0 {
            Missed::None
        } else if commit & MISSED_STORED != 0 {
            let at = start + size;
            let n = match layout.commit_size {
                8 => read_u64(bytes, at),
                _ => read_u32(bytes, at).map(u64::from),
            };
            n.map_or(Missed::Some, Missed::Count)
        } else {
            Missed::Some
        };
        Ok(Page {
            time_stamp,
            missed,
            data,
        })
    }

    /// The page's records in order, each with its time.
    pub fn records(&self) -> Records<'a> {
        Records {
            data: self.data,
            at: 0,
            ts: self.time_stamp,
        }
    }
}

fn short(len: usize) -> BadPage {
    BadPage(format!("{len} bytes: shorter than a page header"))
}

/// The records of a [`Page`]; an event header that runs past the data ends it with an
/// error.
pub struct Records<'a> {
    data: &'a [u8],
    at: usize,
    ts: u64,
}

/// Times add up as the kernel's u64 arithmetic does (ring_buffer.c): wrapping, which only
/// a damaged page reaches.
impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, BadPage>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.at + 4 > self.data.len() {
                return None;
            }
            let word = read_u32(self.data, self.at)?;
            let type_len = word & 0x1f;
            let delta = u64::from(word >> 5);
            let body = self.at + 4;
            let array0 = read_u32(self.data, body);
            match type_len {
                PADDING => {
                    // A padding without a delta is the rest of the page, discarded.
                    if delta == 0 {
                        self.at = self.data.len();
                        return None;
                    }
                    self.ts = self.ts.wrapping_add(delta);
                    let Some(len) = array0 else {
                        return Some(Err(self.bad("padding")));
                    };
                    self.at = body + len as usize;
                }
                TIME_EXTEND => {
                    let Some(hi) = array0 else {
                        return Some(Err(self.bad("time extend")));
                    };
                    self.ts = self.ts.wrapping_add((u64::from(hi) << TS_SHIFT) + delta);
                    self.at = body + 4;
                }
                TIME_STAMP => {
                    let Some(hi) = array0 else {
                        return Some(Err(self.bad("time stamp")));
                    };
                    // The absolute time's low 59 bits; the top ones are the page's.
                    let low = (u64::from(hi) << TS_SHIFT) + delta;
                    self.ts = (self.ts & !((1u64 << 59) - 1)) | low;
                    self.at = body + 4;
                }
                _ => {
                    self.ts = self.ts.wrapping_add(delta);
                    let (start, len) = if type_len == 0 {
                        let Some(n) = array0 else {
                            return Some(Err(self.bad("data length")));
                        };
                        let n = (n as usize).saturating_sub(4);
                        (body + 4, (n + 3) & !3)
                    } else {
                        (body, type_len as usize * 4)
                    };
                    let Some(data) = self.data.get(start..start + len) else {
                        return Some(Err(self.bad("data record")));
                    };
                    self.at = start + len;
                    return Some(Ok(Record { ts: self.ts, data }));
                }
            }
        }
    }
}

impl Records<'_> {
    /// An event that runs past the page's data: the rest of the page is lost.
    fn bad(&mut self, what: &str) -> BadPage {
        let at = self.at;
        self.at = self.data.len();
        BadPage(format!(
            "a {what} event at byte {at} of the page's data runs past its end ({} bytes)",
            self.data.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page built the way ring_buffer.c writes one.
    struct Builder {
        bytes: Vec<u8>,
    }

    impl Builder {
        fn new(ts: u64) -> Builder {
            let mut bytes = ts.to_le_bytes().to_vec();
            bytes.extend_from_slice(&0u64.to_le_bytes());
            Builder { bytes }
        }
        fn word(&mut self, type_len: u32, delta: u32) {
            self.bytes
                .extend_from_slice(&(type_len | delta << 5).to_le_bytes());
        }
        fn small(&mut self, delta: u32, data: &[u8]) {
            assert_eq!(data.len() % 4, 0);
            self.word(data.len() as u32 / 4, delta);
            self.bytes.extend_from_slice(data);
        }
        fn big(&mut self, delta: u32, data: &[u8]) {
            self.word(0, delta);
            self.bytes
                .extend_from_slice(&(data.len() as u32 + 4).to_le_bytes());
            self.bytes.extend_from_slice(data);
            while self.bytes.len() % 4 != 0 {
                self.bytes.push(0);
            }
        }
        fn extend(&mut self, delta: u64) {
            self.word(TIME_EXTEND, (delta & ((1 << 27) - 1)) as u32);
            self.bytes
                .extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
        }
        fn finish(mut self, flags: u64, missed: Option<u64>) -> Vec<u8> {
            let size = self.bytes.len() as u64 - 16;
            self.bytes[8..16].copy_from_slice(&(size | flags).to_le_bytes());
            if let Some(m) = missed {
                self.bytes.extend_from_slice(&m.to_le_bytes());
            }
            self.bytes.resize(4096, 0);
            self.bytes
        }
    }

    #[test]
    fn records_with_deltas_extends_and_long_lengths() {
        let mut b = Builder::new(1_000);
        b.small(5, &[1, 0, 0, 0, 9, 9, 9, 9]);
        b.extend(1 << 40);
        b.small(3, &[2, 0, 0, 0]);
        let long = vec![7u8; 150];
        b.big(0, &long);
        let page = b.finish(0, None);
        let p = Page::parse(&page, PageLayout::LONG_8).unwrap();
        assert_eq!(p.missed, Missed::None);
        let recs: Vec<_> = p.records().map(Result::unwrap).collect();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].ts, 1_005);
        assert_eq!(recs[0].data, &[1, 0, 0, 0, 9, 9, 9, 9]);
        assert_eq!(recs[1].ts, 1_005 + (1 << 40) + 3);
        assert_eq!(&recs[2].data[..150], &long[..]);
        assert_eq!(recs[2].data.len(), 152);
    }

    #[test]
    fn padding_and_missed_events() {
        let mut b = Builder::new(0);
        b.small(1, &[1, 0, 0, 0]);
        // A discarded event: padding of 8 bytes with a delta.
        b.word(PADDING, 4);
        b.bytes.extend_from_slice(&8u32.to_le_bytes());
        b.bytes.extend_from_slice(&[0; 4]);
        b.small(2, &[3, 0, 0, 0]);
        let page = b.finish(MISSED_EVENTS | MISSED_STORED, Some(42));
        let p = Page::parse(&page, PageLayout::LONG_8).unwrap();
        assert_eq!(p.missed, Missed::Count(42));
        let ts: Vec<_> = p.records().map(|r| r.unwrap().ts).collect();
        assert_eq!(ts, [1, 7]);
    }

    #[test]
    fn damaged_pages_are_errors() {
        let mut b = Builder::new(0);
        b.small(1, &[1, 0, 0, 0]);
        let mut page = b.finish(0, None);
        // Claims more data than the page has.
        page[8..16].copy_from_slice(&5000u64.to_le_bytes());
        assert!(Page::parse(&page, PageLayout::LONG_8).is_err());
        assert!(Page::parse(&page[..10], PageLayout::LONG_8).is_err());
        // A record header whose length runs past the data.
        let mut b = Builder::new(0);
        b.word(20, 0);
        let page = b.finish(0, None);
        let p = Page::parse(&page, PageLayout::LONG_8).unwrap();
        let r: Vec<_> = p.records().collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
        // Time extends past 2^64 (a damaged page's) wrap as the kernel's u64 does.
        let mut b = Builder::new(u64::MAX - 10);
        b.extend((1 << 59) - 1);
        b.small(0, &[1, 0, 0, 0]);
        let page = b.finish(0, None);
        let p = Page::parse(&page, PageLayout::LONG_8).unwrap();
        let ts: Vec<_> = p.records().map(|r| r.unwrap().ts).collect();
        assert_eq!(ts, [(u64::MAX - 10).wrapping_add((1 << 59) - 1)]);
    }

    #[test]
    fn layouts_from_header_page() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(PageLayout::from_header_page(text), Some(PageLayout::LONG_8));
        let text32 = text
            .replace("size:8;\tsigned:1", "size:4;\tsigned:1")
            .replace("offset:16;\tsize:4080", "offset:12;\tsize:4084");
        let l = PageLayout::from_header_page(&text32).unwrap();
        assert_eq!((l.data_start(), l.page_size), (12, 4096));
        assert_eq!(PageLayout::from_header_page("nothing"), None);
    }
}

//! An event's `print fmt` compiled into a printer that writes a record's body as the
//! kernel's `trace_pipe` writes it (the event's `TP_printk`, evaluated by
//! kernel/trace/trace_output.c and lib/vsprintf.c).
//!
//! The format's arguments are C expressions over the record (`REC->field`), read here by a
//! small expression grammar: integers, casts, arithmetic and bit operators, `?:`,
//! `__print_symbolic`, `__print_flags`, `__get_str`, the dynamic arrays and
//! `__print_hex(_str)`. Named constants the format leaves unresolved (gfs2's `GLF_*`) come
//! from a symbol table the caller gives. Anything else (`%p` pointers, `__print_array`,
//! `sizeof`, a pointer printed with `%s`) is [`Unsupported`]: the caller then reads the
//! kernel's own text instead, never a guess.

use std::fmt;

use super::format::{EventFormat, Field, FieldKind};

/// Why a format cannot be printed from raw records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn unsupported<T>(what: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(what.into()))
}

/// A compiled print format.
#[derive(Debug, Clone)]
pub struct Printer {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone)]
enum Piece {
    Text(Vec<u8>),
    Int(Spec, Expr),
    Str(Spec, Expr),
}

/// A conversion: `%[flags][width][.precision][length]conv`.
#[derive(Debug, Clone, Copy, Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
    /// Bits of the argument: 8 (`hh`), 16 (`h`), 32 (none), 64 (`l`, `ll`, `z`).
    bits: u32,
    conv: u8,
}

#[derive(Debug, Clone)]
enum Expr {
    Num(u64),
    Str(Vec<u8>),
    Field(usize),
    Element(usize, Box<Expr>),
    Cast {
        bits: u32,
        signed: bool,
        e: Box<Expr>,
    },
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Compl(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Symbolic(Box<Expr>, Vec<(u64, Vec<u8>)>),
    Flags(Box<Expr>, Vec<u8>, Vec<(u64, Vec<u8>)>),
    GetStr(usize),
    DynArray(usize),
    DynLen(usize),
    Hex {
        data: Box<Expr>,
        len: Box<Expr>,
        concat: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    And,
    Xor,
    Or,
    LAnd,
    LOr,
}

/// What an expression gives: a number or bytes.
enum Val<'r> {
    Int(u64),
    Bytes(std::borrow::Cow<'r, [u8]>),
}

impl Printer {
    /// Compiles `event`'s print format. `symbols` resolves the names the format leaves
    /// unresolved (enum constants).
    pub fn compile(
        event: &EventFormat,
        symbols: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Printer, Unsupported> {
        let (fmt, args) = split_print(&event.print)?;
        let mut args = args
            .iter()
            .map(|a| {
                let tokens = tokenize(a)?;
                let mut p = Parser {
                    t: &tokens,
                    at: 0,
                    event,
                    symbols,
                };
                let e = p.expr()?;
                if p.at != tokens.len() {
                    return unsupported(format!("{}: cannot read argument {a:?}", event.name));
                }
                Ok(e)
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter();
        let mut pieces = Vec::new();
        for seg in conversions(&fmt)? {
            match seg {
                Seg::Text(t) => pieces.push(Piece::Text(t)),
                Seg::Conv(spec) => {
                    let Some(e) = args.next() else {
                        return unsupported(format!("{}: fewer arguments than %", event.name));
                    };
                    let is_str = is_string(&e, &event.fields);
                    pieces.push(match spec.conv {
                        b's' if is_str => Piece::Str(spec, e),
                        b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' if !is_str => {
                            Piece::Int(spec, e)
                        }
                        c => {
                            return unsupported(format!(
                                "{}: %{} of {}",
                                event.name,
                                c as char,
                                if is_str { "a string" } else { "a number" }
                            ))
                        }
                    });
                }
            }
        }
        if args.next().is_some() {
            return unsupported(format!("{}: more arguments than %", event.name));
        }
        Ok(Printer { pieces })
    }

    /// Writes the body of record `rec` (of the event this printer was compiled for).
    pub fn print(&self, fields: &[Field], rec: &[u8], out: &mut Vec<u8>) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.extend_from_slice(t),
                Piece::Int(spec, e) => {
                    let v = match eval(e, fields, rec) {
                        Val::Int(v) => v,
                        Val::Bytes(_) => 0,
                    };
                    write_int(out, spec, v);
                }
                Piece::Str(spec, e) => match eval(e, fields, rec) {
                    Val::Bytes(b) => write_str(out, spec, &b),
                    Val::Int(v) => write_int(out, spec, v),
                },
            }
        }
    }
}

/// Whether an expression gives bytes (for `%s`).
fn is_string(e: &Expr, fields: &[Field]) -> bool {
    match e {
        Expr::Str(_)
        | Expr::GetStr(_)
        | Expr::DynArray(_)
        | Expr::Symbolic(..)
        | Expr::Flags(..)
        | Expr::Hex { .. } => true,
        Expr::Field(i) => matches!(
            fields[*i].kind,
            FieldKind::DataLoc | FieldKind::RelLoc | FieldKind::Array { chars: true, .. }
        ),
        Expr::Cond(_, a, b) => is_string(a, fields) && is_string(b, fields),
        _ => false,
    }
}

fn eval<'r>(e: &'r Expr, fields: &'r [Field], rec: &'r [u8]) -> Val<'r> {
    let int = |e: &Expr| match eval(e, fields, rec) {
        Val::Int(v) => v,
        Val::Bytes(_) => 0,
    };
    let bytes = |b: Option<&'r [u8]>| Val::Bytes(b.unwrap_or_default().into());
    match e {
        Expr::Num(n) => Val::Int(*n),
        Expr::Str(s) => Val::Bytes(s.as_slice().into()),
        Expr::Field(i) => {
            let f = &fields[*i];
            match f.kind {
                FieldKind::Scalar | FieldKind::Array { chars: false, .. } => {
                    Val::Int(f.int(rec).unwrap_or(0))
                }
                _ => bytes(f.string(rec)),
            }
        }
        Expr::Element(i, idx) => Val::Int(fields[*i].element(rec, int(idx) as usize).unwrap_or(0)),
        Expr::Cast { bits, signed, e } => Val::Int(truncate(int(e), *bits, *signed)),
        Expr::Neg(e) => Val::Int(int(e).wrapping_neg()),
        Expr::Not(e) => Val::Int(u64::from(int(e) == 0)),
        Expr::Compl(e) => Val::Int(!int(e)),
        Expr::Bin(op, a, b) => Val::Int(binary(*op, int(a), int(b))),
        Expr::Cond(c, a, b) => eval(if int(c) != 0 { a } else { b }, fields, rec),
        Expr::Symbolic(v, table) => {
            let v = int(v);
            Val::Bytes(match table.iter().find(|(m, _)| *m == v) {
                Some((_, name)) => name.as_slice().into(),
                None => format!("0x{v:x}").into_bytes().into(),
            })
        }
        Expr::Flags(v, delim, table) => Val::Bytes(print_flags(int(v), delim, table).into()),
        Expr::GetStr(i) => bytes(fields[*i].string(rec)),
        Expr::DynArray(i) => bytes(fields[*i].bytes(rec)),
        Expr::DynLen(i) => Val::Int(fields[*i].bytes(rec).map_or(0, |b| b.len() as u64)),
        Expr::Hex { data, len, concat } => {
            let data = match eval(data, fields, rec) {
                Val::Bytes(b) => b,
                Val::Int(_) => Default::default(),
            };
            let n = (int(len) as usize).min(data.len());
            Val::Bytes(hex(&data[..n], *concat).into())
        }
    }
}

fn binary(op: Op, a: u64, b: u64) -> u64 {
    let (sa, sb) = (a as i64, b as i64);
    match op {
        Op::Mul => a.wrapping_mul(b),
        Op::Div => a.checked_div(b).unwrap_or(0),
        Op::Rem => a.checked_rem(b).unwrap_or(0),
        Op::Add => a.wrapping_add(b),
        Op::Sub => a.wrapping_sub(b),
        Op::Shl => a.checked_shl(b as u32).unwrap_or(0),
        Op::Shr => a.checked_shr(b as u32).unwrap_or(0),
        Op::Lt => u64::from(sa < sb),
        Op::Gt => u64::from(sa > sb),
        Op::Le => u64::from(sa <= sb),
        Op::Ge => u64::from(sa >= sb),
        Op::Eq => u64::from(a == b),
        Op::Ne => u64::from(a != b),
        Op::And => a & b,
        Op::Xor => a ^ b,
        Op::Or => a | b,
        Op::LAnd => u64::from(a != 0 && b != 0),
        Op::LOr => u64::from(a != 0 || b != 0),
    }
}

/// `v` as a C integer of `bits` bits, sign-extended when signed.
fn truncate(v: u64, bits: u32, signed: bool) -> u64 {
    if bits >= 64 {
        return v;
    }
    let shift = 64 - bits;
    if signed {
        ((v << shift) as i64 >> shift) as u64
    } else {
        v & ((1u64 << bits) - 1)
    }
}

/// trace_print_flags_seq(): the names of the table's masks that are all set, in table
/// order, then what is left as `0x…`.
fn print_flags(mut v: u64, delim: &[u8], table: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut first = true;
    for (mask, name) in table {
        if v == 0 {
            break;
        }
        if v & mask != *mask {
            continue;
        }
        v &= !mask;
        if !first {
            out.extend_from_slice(delim);
        }
        first = false;
        out.extend_from_slice(name);
    }
    if v != 0 {
        if !first {
            out.extend_from_slice(delim);
        }
        out.extend_from_slice(format!("0x{v:x}").as_bytes());
    }
    out
}

/// trace_print_hex_seq(): `%*phN` (no separators) when concatenated, else `%*ph` (a
/// space between bytes), 16 bytes at a time.
fn hex(data: &[u8], concat: bool) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(data.len() * 3);
    for (i, b) in data.iter().enumerate() {
        if i > 0 && !concat {
            out.push(b' ');
        }
        out.push(DIGITS[(b >> 4) as usize]);
        out.push(DIGITS[(b & 15) as usize]);
    }
    out
}

/// Writes an integer as lib/vsprintf.c does for `spec`.
fn write_int(out: &mut Vec<u8>, spec: &Spec, v: u64) {
    if spec.conv == b'c' {
        pad(out, spec, &[v as u8]);
        return;
    }
    let signed = matches!(spec.conv, b'd' | b'i');
    let v = truncate(v, spec.bits, signed);
    let (neg, mag) = if signed && (v as i64) < 0 {
        (true, (v as i64).unsigned_abs())
    } else {
        (false, v)
    };
    let mut digits = [0u8; 24];
    let mut n = match spec.conv {
        b'x' => digits_of(mag, 4, b"0123456789abcdef", &mut digits),
        b'X' => digits_of(mag, 4, b"0123456789ABCDEF", &mut digits),
        b'o' => digits_of(mag, 3, b"01234567", &mut digits),
        _ => decimal_digits(mag, &mut digits),
    };
    if spec.precision == Some(0) && v == 0 {
        n = 0;
    }
    let mut prefix = [0u8; 3];
    let mut p = 0;
    let mut put = |b: &[u8]| {
        prefix[p..p + b.len()].copy_from_slice(b);
        p += b.len();
    };
    if neg {
        put(b"-");
    } else if signed && spec.plus {
        put(b"+");
    } else if signed && spec.space {
        put(b" ");
    }
    match spec.conv {
        b'x' if spec.alt && v != 0 => put(b"0x"),
        b'X' if spec.alt && v != 0 => put(b"0X"),
        b'o' if spec.alt => put(b"0"),
        _ => {}
    }
    let min_digits = spec.precision.unwrap_or(0).max(n);
    let fill = spec.width.saturating_sub(p + min_digits);
    let zero = spec.zero && !spec.left && spec.precision.is_none();
    if !spec.left && !zero {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(&prefix[..p]);
    if zero {
        out.resize(out.len() + fill, b'0');
    }
    out.resize(out.len() + (min_digits - n), b'0');
    out.extend(digits[..n].iter().rev());
    if spec.left {
        out.resize(out.len() + fill, b' ');
    }
}

/// The digits of `v` in base `1 << shift`, least significant first; returns how many.
#[inline]
fn digits_of(mut v: u64, shift: u32, table: &[u8], out: &mut [u8; 24]) -> usize {
    let mask = (1u64 << shift) - 1;
    let mut n = 0;
    loop {
        out[n] = table[(v & mask) as usize];
        n += 1;
        v >>= shift;
        if v == 0 {
            return n;
        }
    }
}

/// The decimal digits of `v`, least significant first; returns how many.
#[inline]
pub(super) fn decimal_digits(mut v: u64, out: &mut [u8; 24]) -> usize {
    let mut n = 0;
    loop {
        out[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            return n;
        }
    }
}

fn write_str(out: &mut Vec<u8>, spec: &Spec, s: &[u8]) {
    let s = match spec.precision {
        Some(p) => &s[..p.min(s.len())],
        None => s,
    };
    pad(out, spec, s);
}

fn pad(out: &mut Vec<u8>, spec: &Spec, s: &[u8]) {
    let fill = spec.width.saturating_sub(s.len());
    if !spec.left {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(s);
    if spec.left {
        out.resize(out.len() + fill, b' ');
    }
}

/// `"format", arg, arg`: the format's bytes (escapes read) and the arguments' texts.
fn split_print(print: &str) -> Result<(Vec<u8>, Vec<String>), Unsupported> {
    let mut parts = split_args(print).into_iter();
    let mut fmt = Vec::new();
    // The format: one string literal, or adjacent ones.
    for t in tokenize(&parts.next().unwrap_or_default())? {
        match t {
            Tok::Str(s) => fmt.extend_from_slice(&s),
            _ => return unsupported("print fmt does not start with a string"),
        }
    }
    if fmt.is_empty() {
        return unsupported("print fmt does not start with a string");
    }
    Ok((fmt, parts.collect()))
}

/// Splits at the commas outside brackets and strings.
fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut esc = false;
    let mut cur = String::new();
    for c in s.chars() {
        if in_str {
            cur.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

enum Seg {
    Text(Vec<u8>),
    Conv(Spec),
}

/// The widest field width or precision printed: one page, the most that the kernel's text
/// of one event (its `trace_seq`) held until 2024's kernels (8 KiB since). A wider field
/// is beyond what glk is sure to print as the kernel does, and would cost that many bytes
/// for every event.
const MAX_WIDTH: usize = 4096;

/// The digits at `i` (none: 0) as a field width or precision (`what`), at most
/// [`MAX_WIDTH`].
fn bounded(fmt: &[u8], i: &mut usize, what: &str) -> Result<usize, Unsupported> {
    let start = *i;
    let mut n = 0usize;
    while let Some(d) = fmt.get(*i).filter(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add((d - b'0') as usize);
        *i += 1;
    }
    if n > MAX_WIDTH {
        let digits = String::from_utf8_lossy(&fmt[start..*i]);
        return unsupported(format!(
            "a {what} of {digits} (more than the {MAX_WIDTH} bytes of one event's text)"
        ));
    }
    Ok(n)
}

/// The format's text and conversions.
fn conversions(fmt: &[u8]) -> Result<Vec<Seg>, Unsupported> {
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            text.push(fmt[i]);
            i += 1;
            continue;
        }
        i += 1;
        if fmt.get(i) == Some(&b'%') {
            text.push(b'%');
            i += 1;
            continue;
        }
        let mut spec = Spec {
            bits: 32,
            ..Spec::default()
        };
        while let Some(&c) = fmt.get(i) {
            match c {
                b'-' => spec.left = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                _ => break,
            }
            i += 1;
        }
        if fmt.get(i) == Some(&b'*') {
            return unsupported("a `*` width");
        }
        spec.width = bounded(fmt, &mut i, "width")?;
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            if fmt.get(i) == Some(&b'*') {
                return unsupported("a `*` precision");
            }
            spec.precision = Some(bounded(fmt, &mut i, "precision")?);
        }
        loop {
            match fmt.get(i) {
                Some(b'h') => spec.bits = if spec.bits == 16 { 8 } else { 16 },
                Some(b'l' | b'z' | b'j' | b't' | b'L') => spec.bits = 64,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            return unsupported("a format ending in %");
        };
        i += 1;
        if !matches!(conv, b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' | b's') {
            return unsupported(format!("%{}", conv as char));
        }
        spec.conv = conv;
        if !text.is_empty() {
            out.push(Seg::Text(std::mem::take(&mut text)));
        }
        out.push(Seg::Conv(spec));
    }
    if !text.is_empty() {
        out.push(Seg::Text(text));
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Num(u64),
    Str(Vec<u8>),
    Ident(String),
    Punct(&'static str),
}

const PUNCT: &[&str] = &[
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", "[", "]", ",", "+",
    "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "?", ":", ".",
];

fn tokenize(s: &str) -> Result<Vec<Tok>, Unsupported> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut v = Vec::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return unsupported("an unterminated string"),
                    Some(b'"') => break,
                    Some(b'\\') => {
                        i += 1;
                        v.push(match b.get(i) {
                            Some(b'n') => b'\n',
                            Some(b't') => b'\t',
                            Some(b'r') => b'\r',
                            Some(b'0') => 0,
                            Some(&o) => o,
                            None => return unsupported("an unterminated string"),
                        });
                    }
                    Some(&o) => v.push(o),
                }
                i += 1;
            }
            i += 1;
            out.push(Tok::Str(v));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let t = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else if t.len() > 1 && t.starts_with('0') {
                u64::from_str_radix(&t[1..], 8)
            } else {
                t.parse()
            };
            out.push(Tok::Num(v.map_err(|_| {
                Unsupported(format!("the number {:?}", &s[start..i]))
            })?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else if let Some(p) = PUNCT.iter().find(|p| s[i..].starts_with(**p)) {
            out.push(Tok::Punct(p));
            i += p.len();
        } else {
            return unsupported(format!("the character {:?}", c as char));
        }
    }
    Ok(out)
}

/// The C types casts name: their bits and signedness (a pointer is 64 bits).
fn ctype(words: &[&str], pointer: bool) -> Option<(u32, bool)> {
    if pointer {
        return Some((64, false));
    }
    let words: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "const" | "volatile"))
        .collect();
    let unsigned = words.contains(&"unsigned");
    let rest: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "unsigned" | "signed"))
        .collect();
    let (bits, signed) = match rest.as_slice() {
        [] | ["int"] => (32, !unsigned),
        ["char"] => (8, !unsigned),
        ["short"] | ["short", "int"] => (16, !unsigned),
        ["long"] | ["long", "int"] | ["long", "long"] | ["long", "long", "int"] => (64, !unsigned),
        ["bool" | "_Bool"] => (8, false),
        [t] => match *t {
            "u8" | "__u8" | "uint8_t" => (8, false),
            "s8" | "__s8" | "int8_t" => (8, true),
            "u16" | "__u16" | "uint16_t" => (16, false),
            "s16" | "__s16" | "int16_t" => (16, true),
            "u32" | "__u32" | "uint32_t" | "uint" | "dev_t" | "gfp_t" | "uid_t" | "gid_t"
            | "umode_t" => (32, false),
            "s32" | "__s32" | "int32_t" | "pid_t" => (32, true),
            "u64" | "__u64" | "uint64_t" | "size_t" | "sector_t" | "blkcnt_t" | "uintptr_t" => {
                (64, false)
            }
            "s64" | "__s64" | "int64_t" | "ssize_t" | "loff_t" | "ktime_t" | "time64_t" => {
                (64, true)
            }
            _ => return None,
        },
        _ => return None,
    };
    Some((bits, signed))
}

struct Parser<'t, 'e> {
    t: &'t [Tok],
    at: usize,
    event: &'e EventFormat,
    symbols: &'e dyn Fn(&str) -> Option<u64>,
}

/// Binary operators by precedence, lowest first.
const LEVELS: &[&[(&str, Op)]] = &[
    &[("||", Op::LOr)],
    &[("&&", Op::LAnd)],
    &[("|", Op::Or)],
    &[("^", Op::Xor)],
    &[("&", Op::And)],
    &[("==", Op::Eq), ("!=", Op::Ne)],
    &[("<", Op::Lt), (">", Op::Gt), ("<=", Op::Le), (">=", Op::Ge)],
    &[("<<", Op::Shl), (">>", Op::Shr)],
    &[("+", Op::Add), ("-", Op::Sub)],
    &[("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)],
];

impl Parser<'_, '_> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.at)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), Unsupported> {
        if self.eat(p) {
            Ok(())
        } else {
            unsupported(format!(
                "{}: expected {p:?} at {:?}",
                self.event.name,
                self.peek()
            ))
        }
    }

    fn expr(&mut self) -> Result<Expr, Unsupported> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binary(&mut self, level: usize) -> Result<Expr, Unsupported> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        'more: loop {
            for (p, op) in LEVELS[level] {
                if self.eat(p) {
                    let right = self.binary(level + 1)?;
                    left = Expr::Bin(*op, Box::new(left), Box::new(right));
                    continue 'more;
                }
            }
            return Ok(left);
        }
    }

    fn unary(&mut self) -> Result<Expr, Unsupported> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat("+") {
            return self.unary();
        }
        if self.eat("!") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.eat("~") {
            return Ok(Expr::Compl(Box::new(self.unary()?)));
        }
        if let Some((bits, signed, len)) = self.cast_ahead() {
            self.at += len;
            let e = self.unary()?;
            return Ok(Expr::Cast {
                bits,
                signed,
                e: Box::new(e),
            });
        }
        self.postfix()
    }

    /// A `(type)` at the cursor: its bits, signedness and length in tokens.
    fn cast_ahead(&self) -> Option<(u32, bool, usize)> {
        if !matches!(self.peek(), Some(Tok::Punct("("))) {
            return None;
        }
        let mut words = Vec::new();
        let mut pointer = false;
        let mut i = self.at + 1;
        loop {
            match self.t.get(i)? {
                Tok::Ident(w) if !pointer => words.push(w.as_str()),
                Tok::Punct("*") if !words.is_empty() => pointer = true,
                Tok::Punct(")") => break,
                _ => return None,
            }
            i += 1;
        }
        if words.first() == Some(&"struct") {
            return None;
        }
        let (bits, signed) = ctype(&words, pointer)?;
        Some((bits, signed, i + 1 - self.at))
    }

    fn postfix(&mut self) -> Result<Expr, Unsupported> {
        let e = self.primary()?;
        if self.eat("[") {
            let idx = self.expr()?;
            self.expect("]")?;
            return match e {
                Expr::Field(i) => Ok(Expr::Element(i, Box::new(idx))),
                _ => unsupported(format!("{}: indexing a non-field", self.event.name)),
            };
        }
        Ok(e)
    }

    fn field(&mut self) -> Result<usize, Unsupported> {
        match self.t.get(self.at) {
            Some(Tok::Ident(name)) => {
                self.at += 1;
                match self.event.field(name) {
                    Some((i, _)) => Ok(i),
                    None => unsupported(format!("{}: no field {name}", self.event.name)),
                }
            }
            other => unsupported(format!(
                "{}: expected a field at {other:?}",
                self.event.name
            )),
        }
    }

    fn primary(&mut self) -> Result<Expr, Unsupported> {
        let Some(tok) = self.peek().cloned() else {
            return unsupported(format!("{}: an argument ends early", self.event.name));
        };
        self.at += 1;
        match tok {
            Tok::Num(n) => Ok(Expr::Num(n)),
            Tok::Str(s) => Ok(Expr::Str(s)),
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Ident(w) if w == "REC" => {
                self.expect("->")?;
                Ok(Expr::Field(self.field()?))
            }
            Tok::Ident(w) if matches!(self.peek(), Some(Tok::Punct("("))) => {
                self.at += 1;
                let e = self.call(&w)?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Ident(w) => match (self.symbols)(&w) {
                Some(v) => Ok(Expr::Num(v)),
                None => unsupported(format!("{}: the unresolved name {w}", self.event.name)),
            },
            t => unsupported(format!("{}: unexpected {t:?}", self.event.name)),
        }
    }

    /// A helper's arguments, after its `(`.
    fn call(&mut self, name: &str) -> Result<Expr, Unsupported> {
        let loc_field = |p: &mut Self| -> Result<usize, Unsupported> {
            // `__get_str(name)` names the field bare.
            p.field()
        };
        Ok(match name {
            "__print_symbolic" | "__print_symbolic_u64" => {
                let v = self.expr()?;
                Expr::Symbolic(Box::new(v), self.table()?)
            }
            "__print_flags" | "__print_flags_u64" => {
                let v = self.expr()?;
                self.expect(",")?;
                let delim = match self.expr()? {
                    Expr::Str(s) => s,
                    _ => return unsupported(format!("{}: a flags delimiter", self.event.name)),
                };
                Expr::Flags(Box::new(v), delim, self.table()?)
            }
            "__get_str" | "__get_rel_str" => Expr::GetStr(loc_field(self)?),
            "__get_dynamic_array" | "__get_rel_dynamic_array" => Expr::DynArray(loc_field(self)?),
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                Expr::DynLen(loc_field(self)?)
            }
            "__print_hex_str" | "__print_hex" => {
                let data = self.expr()?;
                self.expect(",")?;
                let len = self.expr()?;
                Expr::Hex {
                    data: Box::new(data),
                    len: Box::new(len),
                    concat: name == "__print_hex_str",
                }
            }
            other => return unsupported(format!("{}: {other}()", self.event.name)),
        })
    }

    /// `, { value, "name" }, …` up to the closing `)`.
    fn table(&mut self) -> Result<Vec<(u64, Vec<u8>)>, Unsupported> {
        let mut out = Vec::new();
        while self.eat(",") {
            self.expect("{")?;
            let v = self.expr()?;
            self.expect(",")?;
            let name = match self.expr()? {
                Expr::Str(s) => s,
                _ => return unsupported(format!("{}: a table name", self.event.name)),
            };
            self.expect("}")?;
            out.push((
                const_value(&v).ok_or_else(|| {
                    Unsupported(format!(
                        "{}: a table value that is not constant",
                        self.event.name
                    ))
                })?,
                name,
            ));
        }
        Ok(out)
    }
}

/// The value of a C constant expression as a format file writes one outside its print
/// format (an array's element count, 5.10's `30+1`), read by the same tokenizer and
/// grammar as the print format's arguments; None when it is not constant (a name, a
/// field) or cannot be read.
pub(super) fn constant(text: &str) -> Option<u64> {
    let tokens = tokenize(text).ok()?;
    // No fields to name and no symbols: only numbers and operators are constant.
    let nothing = EventFormat {
        name: String::new(),
        id: 0,
        fields: Vec::new(),
        print: String::new(),
    };
    let mut p = Parser {
        t: &tokens,
        at: 0,
        event: &nothing,
        symbols: &|_| None,
    };
    let e = p.expr().ok()?;
    (p.at == tokens.len()).then(|| const_value(&e)).flatten()
}

/// The value of a constant expression.
fn const_value(e: &Expr) -> Option<u64> {
    Some(match e {
        Expr::Num(n) => *n,
        Expr::Neg(e) => const_value(e)?.wrapping_neg(),
        Expr::Compl(e) => !const_value(e)?,
        Expr::Not(e) => u64::from(const_value(e)? == 0),
        Expr::Cast { bits, signed, e } => truncate(const_value(e)?, *bits, *signed),
        Expr::Bin(op, a, b) => binary(*op, const_value(a)?, const_value(b)?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_symbols(_: &str) -> Option<u64> {
        None
    }

    fn event(fields: &str, print: &str) -> EventFormat {
        let text = format!(
            "name: t\nID: 9\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n{fields}\nprint fmt: {print}\n"
        );
        EventFormat::parse(&text).unwrap()
    }

    fn body(ev: &EventFormat, rec: &[u8]) -> String {
        let p = Printer::compile(ev, &no_symbols).unwrap();
        let mut out = Vec::new();
        p.print(&ev.fields, rec, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn integers_as_vsprintf_prints_them() {
        let ev = event(
            "\tfield:int a;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:u64 b;\toffset:8;\tsize:8;\tsigned:0;",
            "\"%d %u %x %02x %08lx %lld %llu %#x %-4d| %5d %c\", REC->a, REC->a, REC->a, REC->b, REC->b, REC->b, REC->b, REC->b, REC->a, REC->a, 65",
        );
        let mut rec = vec![0u8; 16];
        rec[4..8].copy_from_slice(&(-5i32).to_le_bytes());
        rec[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            body(&ev, &rec),
            "-5 4294967291 fffffffb ffffffff ffffffffffffffff -1 18446744073709551615 0xffffffff -5  |    -5 A"
        );
    }

    #[test]
    fn symbolic_flags_and_strings() {
        let ev = event(
            "\tfield:u8 m;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned long f;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:__data_loc char[] n;\toffset:16;\tsize:4;\tsigned:0;\n\tfield:char comm[8];\toffset:20;\tsize:8;\tsigned:0;",
            "\"%s %s|%s %s %s %s\", __print_symbolic(REC->m, { (-1), \"IV\" }, { 0, \"NL\" }, { 5, \"EX\" }), __print_flags(REC->f, \"|\", { 0x1, \"A\" }, { (1UL << 3), \"B\" }), __print_flags(REC->f & 0, \"\", { 1, \"A\" }), __get_str(n), REC->comm, __print_hex_str(__get_dynamic_array(n), __get_dynamic_array_len(n))",
        );
        let mut rec = vec![0u8; 32];
        rec[2] = 5;
        rec[8] = 0b1_1011;
        // "ab" at 28, length 3 (with its NUL).
        rec[16..20].copy_from_slice(&(28u32 | 3 << 16).to_le_bytes());
        rec[20..24].copy_from_slice(b"cat\0");
        rec[28..31].copy_from_slice(b"ab\0");
        assert_eq!(body(&ev, &rec), "EX A|B|0x12| ab cat 616200");
        rec[2] = 7;
        assert!(body(&ev, &rec).starts_with("0x7 "));
    }

    #[test]
    fn the_real_gfs2_and_dlm_formats_compile() {
        let glf = crate::raw::gfs2_symbols;
        for dir in ["real/dlm2-6.1/n1", "real/dlmev612/n1"] {
            for file in testdata::files(dir, |n| n.starts_with("format.")) {
                let text = std::fs::read_to_string(&file).unwrap();
                let ev = EventFormat::parse(&text).unwrap();
                if let Err(e) = Printer::compile(&ev, &glf) {
                    panic!("{}: {e}", file.display());
                }
            }
        }
    }

    #[test]
    fn what_cannot_be_printed_is_named() {
        let refused = |field: &str, print: &str| {
            let ev = event(
                &format!("\tfield:{field};\toffset:8;\tsize:8;\tsigned:0;"),
                print,
            );
            Printer::compile(&ev, &no_symbols).unwrap_err().0
        };
        assert!(refused("unsigned long ip", "\"%ps\", (void *)REC->ip").contains("%p"));
        let flags = "\"%s\", __print_flags(REC->f, \"\", {(1UL << GLF_LOCK), \"l\" })";
        assert!(refused("unsigned long f", flags).contains("GLF_LOCK"));
        assert!(refused("const char * s", "\"%s\", REC->s").contains("%s of a number"));
    }

    /// A width or precision wider than one event's text (a damaged or crafted format, in
    /// a trace.dat) is refused, not allocated for every event; the widest allowed prints.
    #[test]
    fn a_width_beyond_one_events_text_is_refused() {
        let field = "\tfield:u32 a;\toffset:4;\tsize:4;\tsigned:0;";
        for (print, what) in [
            (
                "\"%99999999999999999999999999u\", REC->a",
                "width of 99999999999999999999999999",
            ),
            ("\"%4097u\", REC->a", "width of 4097"),
            ("\"%.4097u\", REC->a", "precision of 4097"),
            ("\"%1.99999999999u\", REC->a", "precision of 99999999999"),
        ] {
            let refused = Printer::compile(&event(field, print), &no_symbols).unwrap_err();
            assert!(refused.0.contains(what), "{print}: {refused}");
        }
        let mut rec = vec![0u8; 8];
        rec[4..8].copy_from_slice(&7u32.to_le_bytes());
        let wide = body(&event(field, "\"%4096u|%-3u|\", REC->a, REC->a"), &rec);
        assert_eq!(wide, format!("{}7|7  |", " ".repeat(4095)));
    }
}

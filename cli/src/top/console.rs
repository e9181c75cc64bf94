//! The full-screen console of `glk top` (ratatui on crossterm): the glocks that hurt,
//! refreshed live on a reading thread, with keys to move, sort, filter, freeze and open
//! the detail of one glock. The terminal is restored on every exit: `q`, Ctrl-C, the end
//! of `-n` refreshes, SIGTERM/SIGHUP/SIGINT, a terminal that goes away, an error, or a
//! panic.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clikit::fmt;
use glockparse::{Brief, GlockId};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Sparkline, Table, TableState, Wrap};
use ratatui::Frame;

use analysis::refresh::companions::RequestWait;
use analysis::refresh::rank::{self, rank_of, Selection, Summary, TypeCounts};
use analysis::refresh::verdict::{self, Verdict};
use analysis::refresh::waits::{WaitAge, WaiterKey};
use analysis::refresh::{Shown, Snapshot};

use super::columns::{self, Field};
use super::keys::{self, Key};
use super::{pause, TopArgs};

/// Refreshes kept for the sparklines.
const HISTORY: usize = 60;

/// What the reading thread sends.
enum Msg {
    Snap(Box<Snapshot>, HashMap<WaiterKey, WaitAge>),
    Error(String),
    /// `-n` refreshes are done.
    Done,
}

/// Raw mode and the alternate screen, left on every path out.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> io::Result<TerminalGuard> {
        terminal::enable_raw_mode()?;
        let guard = TerminalGuard;
        execute!(io::stdout(), terminal::EnterAlternateScreen, cursor::Hide)?;
        Ok(guard)
    }
}

fn restore_terminal() {
    let _ = execute!(io::stdout(), cursor::Show, terminal::LeaveAlternateScreen);
    let _ = terminal::disable_raw_mode();
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// When the reading thread reads.
struct Pace {
    delay: f64,
    /// Read again after the first time.
    refresh: bool,
    /// Stop after this many reads.
    count: Option<u64>,
}

/// The reading thread: snapshots at the refresh pace, with the selection the keys set,
/// none while frozen; a message on `wake` reads at once.
fn spawn_reader(
    mut reader: impl super::Feed,
    sel: Arc<Mutex<Selection>>,
    frozen: Arc<AtomicBool>,
    pace: Pace,
    tx: Sender<Msg>,
    wake: Receiver<()>,
) {
    let Pace {
        delay,
        refresh,
        count,
    } = pace;
    std::thread::spawn(move || {
        let mut taken = 0u64;
        loop {
            let mut wait = Duration::from_millis(200);
            if !frozen.load(Ordering::SeqCst) {
                let s = sel
                    .lock()
                    .map(|s| s.clone())
                    .unwrap_or_else(|e| e.into_inner().clone());
                // Saved files read again for a new selection: their waiters are not
                // "seen waiting" any longer for that.
                let msg = match reader.take(&s, refresh) {
                    Ok((snap, ages)) => {
                        wait = pause(delay, snap.read_time);
                        Msg::Snap(Box::new(snap), ages)
                    }
                    Err(e) => {
                        wait = pause(delay, Duration::ZERO);
                        Msg::Error(e.to_string())
                    }
                };
                if tx.send(msg).is_err() {
                    return;
                }
                taken += 1;
                if refresh && count.is_some_and(|n| taken >= n) {
                    std::thread::sleep(wait);
                    let _ = tx.send(Msg::Done);
                    return;
                }
            }
            // Live files: the next refresh, or sooner when the keys change the selection.
            // Saved files: only when the keys change the selection.
            let woken = if refresh {
                wake.recv_timeout(wait)
            } else {
                wake.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            if woken == Err(RecvTimeoutError::Disconnected) {
                return;
            }
        }
    });
}

/// The console's state: the last snapshot and its verdicts, the rows shown, and what the
/// keys have set.
struct App {
    snap: Option<Snapshot>,
    ages: HashMap<WaiterKey, WaitAge>,
    verdicts: Vec<Verdict>,
    /// Indices into `snap.shown`, in display order (filtered, sorted).
    rows: Vec<usize>,
    table: TableState,
    /// The selected glock, followed across refreshes.
    selected: Option<(usize, GlockId)>,
    sel: Selection,
    fields: Vec<Field>,
    stuck_after: f64,
    editing: Option<String>,
    detail: bool,
    help: bool,
    frozen: bool,
    history: HashMap<(usize, GlockId), VecDeque<(u64, u64)>>,
    error: Option<String>,
    delay: f64,
    /// Whether the files are read again at each refresh.
    refresh: bool,
}

impl App {
    fn new(sel: Selection, args: &TopArgs, refresh: bool) -> App {
        App {
            snap: None,
            ages: HashMap::new(),
            verdicts: Vec::new(),
            rows: Vec::new(),
            table: TableState::default(),
            selected: None,
            sel,
            fields: Field::chosen(&args.fields),
            stuck_after: args.stuck.stuck_after,
            editing: None,
            detail: false,
            help: false,
            frozen: false,
            history: HashMap::new(),
            error: None,
            delay: args.delay,
            refresh,
        }
    }

    fn accept(&mut self, snap: Snapshot, ages: HashMap<WaiterKey, WaitAge>) {
        // Sparklines: waiters and demotes of every glock shown, 0 for the others.
        let mut now: HashMap<(usize, GlockId), (u64, u64)> = snap
            .shown
            .iter()
            .map(|s| {
                (
                    (s.input, s.glock.id),
                    (
                        s.glock.waiter_count() as u64,
                        u64::from(s.glock.demote_requested()),
                    ),
                )
            })
            .collect();
        self.history.retain(|k, h| {
            h.push_back(now.remove(k).unwrap_or((0, 0)));
            if h.len() > HISTORY {
                h.pop_front();
            }
            h.iter().any(|&(w, d)| w + d > 0)
        });
        for (k, v) in now {
            self.history.insert(k, VecDeque::from([v]));
        }
        self.verdicts = verdict::judge(&snap, &ages, self.stuck_after);
        self.ages = ages;
        self.snap = Some(snap);
        self.error = None;
        self.arrange();
    }

    /// Filters and sorts the rows locally (the reader applies the same selection from
    /// its next read on), keeping the selected glock selected.
    fn arrange(&mut self) {
        let Some(snap) = &self.snap else {
            return;
        };
        let mut rows: Vec<usize> = (0..snap.shown.len())
            .filter(|&i| {
                let s = &snap.shown[i];
                let rel = rank::relevance(&Brief::of(&s.glock), &s.facts);
                self.sel.matches(&s.glock) && self.sel.shows(rel)
            })
            .collect();
        rows.sort_by_key(|&i| {
            let s = &snap.shown[i];
            (
                std::cmp::Reverse(rank_of(&Brief::of(&s.glock), &s.facts, self.sel.sort)),
                s.input,
                s.glock.id,
            )
        });
        self.rows = rows;
        let pos = self.selected.and_then(|key| {
            self.rows
                .iter()
                .position(|&i| (snap.shown[i].input, snap.shown[i].glock.id) == key)
        });
        let pos = pos.or_else(|| {
            let old = self.table.selected().unwrap_or(0);
            (!self.rows.is_empty()).then(|| old.min(self.rows.len() - 1))
        });
        self.table.select(pos);
        self.selected = pos.map(|p| {
            let s = &snap.shown[self.rows[p]];
            (s.input, s.glock.id)
        });
    }

    fn move_by(&mut self, delta: isize) {
        if self.rows.is_empty() {
            return;
        }
        let cur = self.table.selected().unwrap_or(0) as isize;
        let next = (cur + delta).clamp(0, self.rows.len() as isize - 1) as usize;
        self.table.select(Some(next));
        if let Some(snap) = &self.snap {
            let s = &snap.shown[self.rows[next]];
            self.selected = Some((s.input, s.glock.id));
        }
    }

    /// Handles one key; returns (quit, selection changed).
    fn key(&mut self, k: Key) -> (bool, bool) {
        if k == Key::CtrlC {
            return (true, false);
        }
        if let Some(text) = &mut self.editing {
            match k {
                Key::Enter => {
                    self.sel.filter = Some(text.clone()).filter(|t| !t.is_empty());
                    self.editing = None;
                    self.arrange();
                    return (false, true);
                }
                Key::Esc => self.editing = None,
                Key::Backspace => {
                    text.pop();
                }
                Key::Char(c) => text.push(c),
                _ => {}
            }
            return (false, false);
        }
        if self.help {
            self.help = false;
            return (k == Key::Char('q'), false);
        }
        let page = 10;
        match k {
            Key::Char('q') => return (true, false),
            Key::Esc if self.detail => self.detail = false,
            Key::Esc if self.sel.filter.is_some() => {
                self.sel.filter = None;
                self.arrange();
                return (false, true);
            }
            Key::Down | Key::Char('j') => self.move_by(1),
            Key::Up | Key::Char('k') => self.move_by(-1),
            Key::PageDown => self.move_by(page),
            Key::PageUp => self.move_by(-page),
            Key::Home | Key::Char('g') => self.move_by(isize::MIN / 2),
            Key::End | Key::Char('G') => self.move_by(isize::MAX / 2),
            Key::Enter => self.detail = !self.detail,
            Key::Char('s') => {
                self.sel.sort = self.sel.sort.next();
                self.arrange();
                return (false, true);
            }
            Key::Char('/') => {
                self.editing = Some(self.sel.filter.clone().unwrap_or_default());
            }
            Key::Char('H') => {
                self.sel.held = !self.sel.held;
                self.arrange();
                return (false, true);
            }
            Key::Char('f') => self.frozen = !self.frozen,
            Key::Char('r') => return (false, true),
            Key::Char('?') => self.help = true,
            _ => {}
        }
        (false, false)
    }

    fn draw(&mut self, f: &mut Frame) {
        let area = f.area();
        let Some(snap) = &self.snap else {
            let msg = self.error.clone().unwrap_or_else(|| "reading…".into());
            f.render_widget(Paragraph::new(format!("glk top: {msg}")), area);
            return;
        };
        let summary = snap.summary();
        let types = summary.by_type.len() as u16 + 2;
        let detail_h = if self.detail {
            (area.height / 2).max(8)
        } else {
            0
        };
        let head_h = if snap.missing.is_empty() { 2 } else { 3 };
        let [head, sum, main, detail, foot] = Layout::vertical([
            Constraint::Length(head_h),
            Constraint::Length(types),
            Constraint::Min(3),
            Constraint::Length(detail_h),
            Constraint::Length(1),
        ])
        .areas(area);
        self.draw_header(f, head);
        draw_summary(f, sum, &summary);
        self.draw_table(f, main);
        if self.detail {
            self.draw_detail(f, detail);
        }
        self.draw_footer(f, foot);
        if self.help {
            draw_help(f, area);
        }
    }

    fn draw_header(&self, f: &mut Frame, area: Rect) {
        let Some(snap) = &self.snap else { return };
        let total = snap.summary().total();
        let mut first = vec![
            Span::styled("glk top", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "  {}  refresh {}  read {}",
                fmt::utc(snap.taken),
                snap.iteration,
                fmt::micros(snap.read_time.as_micros() as u64)
            )),
        ];
        if !self.refresh {
            first.push(Span::raw("  (saved files: not refreshed)"));
        } else {
            let every = pause(self.delay, snap.read_time);
            first.push(Span::raw(format!(
                "  every {}",
                fmt::micros(every.as_micros() as u64)
            )));
        }
        if self.frozen {
            first.push(Span::styled(
                "  FROZEN",
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ));
        }
        let labels: Vec<String> = (0..snap.inputs.len())
            .map(|i| super::label(snap, i))
            .collect();
        first.push(Span::raw(format!("  {}", labels.join(" "))));
        let stuck = self.verdicts.iter().filter(|v| v.stuck).count();
        let (more, held) = snap.hidden();
        let mut second = format!(
            "{} glocks; {} with waiters ({} waiting); {} demoting; {} stuck  sort: {}",
            total.glocks,
            total.waiting_glocks,
            total.waiters,
            total.demoting,
            stuck,
            self.sel.sort.name()
        );
        if let Some(flt) = &self.sel.filter {
            second.push_str(&format!("  filter: {flt}"));
        }
        if more > 0 {
            second.push_str(&format!("  +{more} over the limit"));
        }
        if held > 0 && !self.sel.held {
            second.push_str(&format!("  {held} only held (H)"));
        }
        // POSIX locks live outside the glocks file: their waits are counted here, and
        // listed by --plain and --json.
        let posix = snap.ctx.posix_waits().len();
        if posix > 0 {
            second.push_str(&format!(
                "  {posix} POSIX lock wait(s) (--plain lists them)"
            ));
        }
        let style = if stuck > 0 || posix > 0 {
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        let mut lines = vec![Line::from(first), Line::styled(second, style)];
        if !snap.missing.is_empty() {
            let gone: Vec<String> = snap
                .missing
                .iter()
                .map(|(n, why)| format!("{n} ({why})"))
                .collect();
            lines.push(Line::styled(
                format!("missing: {}", gone.join("; ")),
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            ));
        }
        f.render_widget(Paragraph::new(lines), area);
    }

    fn draw_table(&mut self, f: &mut Frame, area: Rect) {
        let Some(snap) = &self.snap else { return };
        let mut fields = self.fields.clone();
        if snap.inputs.len() > 1 && !fields.contains(&Field::Source) {
            fields.push(Field::Source);
        }
        let header = Row::new(fields.iter().map(|c| Cell::from(c.title())))
            .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        let rows = self.rows.iter().map(|&i| {
            let s = &snap.shown[i];
            let v = &self.verdicts[i];
            let style = if v.stuck {
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
            } else if s.glock.waiter_count() > 0 {
                Style::new().fg(Color::Yellow)
            } else {
                Style::new()
            };
            Row::new(fields.iter().map(|c| Cell::from(c.cell(snap, s, v)))).style(style)
        });
        let widths = fields.iter().map(|c| Constraint::Length(c.width() as u16));
        let title = if self.rows.is_empty() {
            " nothing waits, demotes or asks the DLM (H shows glocks only held) ".to_string()
        } else {
            format!(" {} glocks ", self.rows.len())
        };
        let table = Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title(title))
            .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
            .highlight_symbol("> ");
        f.render_stateful_widget(table, area, &mut self.table);
    }

    fn draw_detail(&self, f: &mut Frame, area: Rect) {
        let Some(snap) = &self.snap else { return };
        let Some(p) = self.table.selected().and_then(|p| self.rows.get(p)) else {
            f.render_widget(Block::bordered().title(" detail "), area);
            return;
        };
        let s = &snap.shown[*p];
        let v = &self.verdicts[*p];
        let lines = detail_lines(snap, s, v, &self.ages);
        let [text, spark] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(area);
        f.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(Block::bordered().title(format!(" {} ", s.glock.id))),
            text,
        );
        let hist = self.history.get(&(s.input, s.glock.id));
        let series = |pick: fn(&(u64, u64)) -> u64| -> Vec<u64> {
            hist.map(|h| h.iter().map(pick).collect())
                .unwrap_or_default()
        };
        let [w, d] = Layout::horizontal([Constraint::Fill(1), Constraint::Fill(1)]).areas(spark);
        let waiters = series(|x| x.0);
        let demotes = series(|x| x.1);
        f.render_widget(
            Sparkline::default()
                .data(&waiters)
                .style(Style::new().fg(Color::Yellow))
                .block(
                    Block::bordered().title(format!(" waiters, last {} refreshes ", waiters.len())),
                ),
            w,
        );
        f.render_widget(
            Sparkline::default()
                .data(&demotes)
                .style(Style::new().fg(Color::Cyan))
                .block(Block::bordered().title(" demote requested ")),
            d,
        );
    }

    fn draw_footer(&self, f: &mut Frame, area: Rect) {
        let line = if let Some(text) = &self.editing {
            Line::from(vec![
                Span::styled("filter: ", Style::new().add_modifier(Modifier::BOLD)),
                Span::raw(format!("{text}_")),
                Span::raw("   (Enter applies, Esc cancels; id, type, pid, comm or call site)"),
            ])
        } else if let Some(e) = &self.error {
            Line::styled(format!("error: {e}"), Style::new().fg(Color::Red))
        } else if let Some(p) = self.snap.as_ref().and_then(|s| s.problems().next()) {
            Line::styled(p.to_string(), Style::new().fg(Color::Red))
        } else {
            Line::from(
                "q quit  ↑↓/jk move  Enter detail  s sort  / filter  H held  f freeze  r refresh  ? help",
            )
        };
        f.render_widget(Paragraph::new(line), area);
    }
}

fn draw_summary(f: &mut Frame, area: Rect, summary: &Summary) {
    let head = Row::new([
        "TYPE", "GLOCKS", "UNLOCKED", "LOCKED", "HELD-EX", "HELD-SH", "HELD-DF", "WAITING",
        "WAITERS", "DEMOTING",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let row = |name: String, c: &TypeCounts| {
        Row::new(
            [
                name,
                c.glocks.to_string(),
                c.unlocked.to_string(),
                c.locked.to_string(),
                c.held_ex.to_string(),
                c.held_sh.to_string(),
                c.held_df.to_string(),
                c.waiting_glocks.to_string(),
                c.waiters.to_string(),
                c.demoting.to_string(),
            ]
            .map(Cell::from),
        )
    };
    let total = summary.total();
    let rows: Vec<Row> = summary
        .by_type
        .iter()
        .map(|(t, c)| row(t.name().into_owned(), c))
        .chain(std::iter::once(
            row("total".into(), &total).style(Style::new().add_modifier(Modifier::BOLD)),
        ))
        .collect();
    let widths = [9, 9, 9, 9, 8, 8, 8, 8, 8, 9].map(Constraint::Length);
    f.render_widget(Table::new(rows, widths).header(head), area);
}

/// Everything known about one glock, as the detail pane's lines.
fn detail_lines(
    snap: &Snapshot,
    s: &Shown,
    v: &Verdict,
    ages: &HashMap<WaiterKey, WaitAge>,
) -> Vec<Line<'static>> {
    let g = &s.glock;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut out = vec![Line::from(format!(
        "{} {}  state {} target {}  flags {}  refs {}  min hold {} jiffies  ({} line {})",
        g.id,
        g.glock_type().name(),
        g.state.as_str(),
        g.target.as_str(),
        if g.flags.is_empty() {
            "-".into()
        } else {
            format!("{} ({})", g.flags, g.flags.words().join(", "))
        },
        g.refs,
        g.hold_jiffies,
        super::label(snap, s.input),
        g.line
    ))];
    if g.demote_requested() {
        out.push(Line::from(format!(
            "demote to {} requested{}",
            g.demote_state.as_str(),
            if g.demote_us > 0 {
                format!(" {} ago", fmt::micros(g.demote_us))
            } else {
                String::new()
            }
        )));
    }
    out.extend(holder_lines(g, s.input, ages));
    if g.waiter_count() > 0 {
        let age = columns::age(v);
        out.push(Line::from(vec![
            Span::styled("waits for ", bold),
            Span::raw(format!("{}  (age {age})", v.blocker)),
        ]));
        if let Some(RequestWait {
            master: Some(m),
            master_seen: false,
            ..
        }) = &v.dlm
        {
            out.push(Line::from(format!(
                "  the holder is known to node {m}'s DLM lock dump: run glk top there, or give both nodes' files"
            )));
        }
        for t in &v.elsewhere {
            out.push(Line::from(format!("  {}", columns::held_there(snap, t))));
        }
    }
    out.extend(other_nodes_lines(snap, s));
    out.extend(dlm_and_file_lines(snap, s));
    out.extend(columns::objects(g).into_iter().map(Line::from));
    out
}

/// The same glock on every other node (with several nodes' files): its state, demote and
/// holders there.
fn other_nodes_lines(snap: &Snapshot, s: &Shown) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (j, there) in columns::on_other_nodes(snap, s) {
        let node = columns::node_name(snap, j);
        let Some(g) = there else {
            out.push(Line::from(format!(
                "on {node}: nothing waits for it and no demote is asked"
            )));
            continue;
        };
        let demote = if g.demote_requested() {
            format!(", demote to {} requested", g.demote_state.as_str())
        } else {
            String::new()
        };
        out.push(Line::from(format!(
            "on {node}: {}{demote}, {} holder(s), {} waiter(s)",
            g.state.as_str(),
            g.granted().count(),
            g.waiter_count()
        )));
        out.extend(holder_lines(g, j, &HashMap::new()).into_iter().map(|l| {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(l.spans);
            Line::from(spans)
        }));
    }
    out
}

/// A line per holder, waiters in yellow with how long glk has seen them wait.
fn holder_lines(
    g: &glockparse::Glock,
    input: usize,
    ages: &HashMap<WaiterKey, WaitAge>,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for h in &g.holders {
        let mut line = format!(
            "{:<7} {:<2} pid {:<7} {:<15} {}  f:{}",
            columns::role(h),
            h.state.as_str(),
            columns::pid(h),
            &*h.comm,
            &*h.caller,
            h.flags
        );
        if h.is_waiting() {
            if let Some(a) = ages
                .get(&WaiterKey::of(input, g, h))
                .filter(|a| a.refreshes > 1)
            {
                line.push_str(&format!(
                    "  seen waiting {} ({} refreshes)",
                    fmt::micros((a.seen_secs * 1e6) as u64),
                    a.refreshes
                ));
            }
        }
        let style = if h.is_waiting() {
            Style::new().fg(Color::Yellow)
        } else {
            Style::new()
        };
        out.push(Line::styled(line, style));
    }
    out
}

/// The glock's DLM lock (and the master's view of it), its glstats and its open files.
fn dlm_and_file_lines(snap: &Snapshot, s: &Shown) -> Vec<Line<'static>> {
    let g = &s.glock;
    let node = snap.ctx.node(s.input);
    let mut out = Vec::new();
    match node.own_lock(g.id) {
        Some(l) => {
            let master = l
                .master()
                .map_or("this node".into(), |m| format!("node {m}"));
            out.push(Line::from(format!(
                "DLM lock: {} for {}  master {}  (pid {})",
                lock_state(l),
                fmt::micros(l.age_us),
                master,
                l.pid
            )));
            for o in snap.ctx.master_locks(s.input, g.id) {
                out.push(Line::from(format!(
                    "  on the master: node {} pid {} {} for {}",
                    o.owner.map_or("?".into(), |n| n.to_string()),
                    o.pid,
                    lock_state(&o),
                    fmt::micros(o.age_us)
                )));
            }
        }
        None if node.has_dlm() => out.push(Line::from("DLM lock: none in the lock dump")),
        None => out.push(Line::from("DLM lock: no DLM lock dump beside this file")),
    }
    match node.stat(g.id) {
        Some((st, r)) => {
            let rate = |x: Option<f64>| x.map_or(String::new(), |x| format!(" ({x:.1}/s)"));
            out.push(Line::from(format!(
                "glstats: srtt {} srttb {} irt {}  DLM requests {}{}  queued {}{}",
                fmt::nanos(st.stats.srtt.max(0) as u64),
                fmt::nanos(st.stats.srttb.max(0) as u64),
                fmt::nanos(st.stats.sirt.max(0) as u64),
                st.stats.dcount,
                rate(r.map(|r| r.dlm_per_s)),
                st.stats.qcount,
                rate(r.map(|r| r.queued_per_s)),
            )));
        }
        None => out.push(Line::from("glstats: none")),
    }
    let live = snap.inputs[s.input].live;
    for fd in node.open_files(g.id) {
        let path = if live {
            std::fs::read_link(format!("/proc/{}/fd/{}", fd.pid, fd.fd))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|e| format!("(path unknown: {e})"))
        } else {
            "(path only when glk reads its own node's debugfs)".into()
        };
        out.push(Line::from(format!(
            "open: pid {} fd {}  {path}",
            fd.pid, fd.fd
        )));
    }
    out
}

/// A DLM lock's queue and modes in words: `granted EX`, `waiting for EX`,
/// `converting PR to EX`.
fn lock_state(l: &glockparse::dlm_locks::OwnedLock) -> String {
    use glockparse::dlm_locks::LockStatus;
    match l.status {
        LockStatus::Granted => format!("granted {}", l.grmode),
        LockStatus::Waiting => format!("waiting for {}", l.rqmode),
        LockStatus::Converting => format!("converting {} to {}", l.grmode, l.rqmode),
        LockStatus::Other(_) => format!(
            "{} (granted {}, requested {})",
            l.status.name(),
            l.grmode,
            l.rqmode
        ),
    }
}

fn draw_help(f: &mut Frame, area: Rect) {
    let text = [
        "glk top: the glocks that hurt, live",
        "",
        "  ↑ ↓  j k      move          PgUp PgDn Home End",
        "  Enter         detail of the selected glock (Esc closes)",
        "  s             next sort: hurt, waiters, demote, holders, refs, dlm, rtt",
        "  /             filter by id, type, pid, comm or call site (Esc clears)",
        "  H             show or hide glocks that are only held",
        "  f             freeze (stop reading) / resume",
        "  r             read now",
        "  q  Ctrl-C     quit",
        "",
        "AGE: the longest wait: 'dlm' from the DLM lock dump (time in the DLM queue),",
        "'seen' from how long glk has seen the waiter. STUCK past --stuck-after.",
        "WAITS FOR: the node and pid holding the lock (from the master's DLM dump),",
        "or the holder on this node.",
        "",
        "any key closes this help",
    ];
    let w = 84.min(area.width);
    let h = (text.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(text.map(Line::from).to_vec()).block(Block::bordered().title(" help ")),
        r,
    );
}

/// Runs the console until `q`, Ctrl-C, a signal or the end of `-n` refreshes.
pub fn run(
    reader: impl super::Feed,
    sel: Selection,
    args: &TopArgs,
    refresh: bool,
) -> io::Result<()> {
    tracepipe::stop::install();
    let shared = Arc::new(Mutex::new(sel.clone()));
    let frozen = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let (wake_tx, wake_rx) = mpsc::channel();
    spawn_reader(
        reader,
        shared.clone(),
        frozen.clone(),
        Pace {
            delay: args.delay,
            refresh,
            count: args.count,
        },
        tx,
        wake_rx,
    );
    // A panic restores the terminal before its message is printed.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        previous(info);
    }));
    let _guard = TerminalGuard::enter()?;
    let mut term = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(io::stdout()))?;
    let mut app = App::new(sel, args, refresh);
    let mut dirty = true;
    let mut last_size = terminal::size().ok();
    loop {
        if tracepipe::stop::requested() {
            break;
        }
        loop {
            match rx.try_recv() {
                Ok(Msg::Snap(snap, ages)) => {
                    app.accept(*snap, ages);
                    dirty = true;
                }
                Ok(Msg::Error(e)) => {
                    app.error = Some(e);
                    dirty = true;
                }
                Ok(Msg::Done) => return Ok(()),
                Err(_) => break,
            }
        }
        if dirty {
            term.draw(|f| app.draw(f))?;
            dirty = false;
        }
        // A new size is drawn at once (ratatui resizes its buffers on draw).
        let size = terminal::size().ok();
        if size != last_size {
            last_size = size;
            dirty = true;
        }
        match keys::wait(0, Duration::from_millis(100))? {
            keys::Input::Gone => break,
            keys::Input::Keys(ks) => {
                for k in ks {
                    let (quit, changed) = app.key(k);
                    if quit {
                        return Ok(());
                    }
                    frozen.store(app.frozen, Ordering::SeqCst);
                    if changed {
                        if let Ok(mut s) = shared.lock() {
                            *s = app.sel.clone();
                        }
                        let _ = wake_tx.send(());
                    }
                    dirty = true;
                }
            }
        }
    }
    Ok(())
}

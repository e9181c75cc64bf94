//! `glk generate man|bash|zsh|fish|elvish|powershell`: the man page and shell completions,
//! made from the same command definition that parses the arguments, so they never drift.

use std::io::{self, Write};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    /// glk(1): one roff page covering every command and option.
    Man,
    /// Completions for bash.
    Bash,
    /// Completions for zsh.
    Zsh,
    /// Completions for fish.
    Fish,
    /// Completions for elvish.
    Elvish,
    /// Completions for PowerShell.
    Powershell,
}

/// `glk generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// The man page or a shell's completions.
    #[arg(value_enum)]
    pub what: What,
}

/// Writes what was asked for to standard output.
pub fn run(a: &GenerateArgs, cmd: &mut clap::Command) -> io::Result<()> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let shell = match a.what {
        What::Man => {
            man(cmd, &mut out)?;
            return out.flush();
        }
        What::Bash => clap_complete::Shell::Bash,
        What::Zsh => clap_complete::Shell::Zsh,
        What::Fish => clap_complete::Shell::Fish,
        What::Elvish => clap_complete::Shell::Elvish,
        What::Powershell => clap_complete::Shell::PowerShell,
    };
    clap_complete::generate(shell, cmd, "glk", &mut out);
    out.flush()
}

/// The page: glk's own section, then one section per command with its synopsis, its
/// description and every option.
fn man(cmd: &mut clap::Command, out: &mut impl Write) -> io::Result<()> {
    cmd.build();
    let top = clap_mangen::Man::new(cmd.clone());
    top.render_title(out)?;
    top.render_name_section(out)?;
    top.render_synopsis_section(out)?;
    top.render_description_section(out)?;
    top.render_options_section(out)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("glk {}", sub.get_name());
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        let page = clap_mangen::Man::new(sub.clone().bin_name(name));
        // The synopsis, description and options of the command, as sub-sections.
        let mut body = Vec::new();
        page.render_synopsis_section(&mut body)?;
        page.render_description_section(&mut body)?;
        page.render_options_section(&mut body)?;
        let body = String::from_utf8_lossy(&body).replace(".SH ", ".SS ");
        out.write_all(body.as_bytes())?;
    }
    out.write_all(
        br#".SH ENVIRONMENT
.TP
\fBNO_COLOR\fR
Set to anything but the empty string: no color with \fB--color auto\fR.
.TP
\fBGLK_ENGINE\fR
The glk-engine binary to run for analyze, export and trace -o FILE.parquet (default: the
one next to glk, else the first on PATH).
.SH "EXIT STATUS"
0 on success (also when output stops because a pipe closed); 1 on an error, including an
input in which nothing could be read; 2 for a command line that does not parse.
"#,
    )?;
    top.render_version_section(out)?;
    writeln!(out, ".SH \"SEE ALSO\"")?;
    writeln!(
        out,
        "gfs2(5), glocktop(8), trace-cmd(1), dlm_tool(8); glk-engine, the analysis engine behind glk analyze and glk export"
    )?;
    Ok(())
}

//! `metronome completions SHELL` and `metronome man`: shell completion
//! scripts and man pages, generated from the clap definition of the CLI
//! ([`crate::cli::Cli`]) by `clap_complete` and `clap_mangen`, so they never
//! drift from `--help`.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};

/// Writes the completion script of `args.shell` to `out`.
///
/// # Errors
/// When `out` cannot be written.
pub fn completions(args: &CompletionsArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "metronome", &mut buf);
    out.write_all(&buf)
        .context("cannot write the completion script")?;
    Ok(())
}

/// Writes the man page: the top page to `out`, or with `--out-dir` one
/// page per command (`metronome.1`, `metronome-run.1`, ...) into the
/// directory, naming each file on `out`.
///
/// # Errors
/// When a page cannot be rendered or written (a [`crate::UsageError`] for a
/// directory that does not exist).
pub fn man(args: &ManArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let cmd = Cli::command();
    match &args.out_dir {
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut buf)?;
            out.write_all(&buf).context("cannot write the man page")?;
        }
        Some(dir) => {
            if !dir.is_dir() {
                return Err(crate::UsageError(format!(
                    "man --out-dir {}: not a directory",
                    dir.display()
                ))
                .into());
            }
            write_pages(cmd, dir, out)?;
        }
    }
    Ok(())
}

/// One page per command, the subcommands named `metronome-SUB.1`.
fn write_pages(cmd: clap::Command, dir: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut cmd = cmd;
    cmd.build();
    let mut pages = vec![(String::from("metronome"), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let page = sub.clone().version(env!("CARGO_PKG_VERSION"));
        pages.push((format!("metronome-{}", sub.get_name()), page));
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).title(&name).render(&mut buf)?;
        std::fs::write(&path, buf).with_context(|| format!("cannot write {}", path.display()))?;
        writeln!(out, "{}", path.display())?;
    }
    Ok(())
}

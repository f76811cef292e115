//! metronome: an open-loop load generator with honest latency.
#![deny(unsafe_code)]

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Parser;
use metronome::cli::{Cli, Command};
use metronome::{UsageError, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => exit_on_clap_error(e),
    };
    let code = match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            let usage = e.downcast_ref::<UsageError>().is_some();
            eprintln!("metronome: {e:#}");
            if usage {
                EXIT_USAGE
            } else {
                EXIT_FAILED
            }
        }
    };
    std::process::exit(code);
}

fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) if args.repeat > 1 => metronome::repeat::run(&args),
        Command::Run(args) => {
            let r = metronome::run::run(&args)?;
            // `--out-intervals -`: stdout holds the lines; the summary goes
            // to stderr unless the JSON report was asked for.
            let lines_out =
                args.intervals_to_stdout() || metronome::run::requests_out::to_stdout(&args);
            if lines_out && args.format == metronome::cli::FormatArg::Text {
                eprint!("{}", metronome::report::text::render_text(&r.report));
            } else {
                metronome::report::show::print(&r.report, args.format.into())?;
            }
            if let Some(line) = &r.failure {
                eprintln!("metronome: {line}");
            }
            Ok(r.exit_code)
        }
        Command::Serve(args) => metronome::serve::run(*args).map(|()| EXIT_OK),
        Command::Demo(args) => metronome::demo::run(&args).map(|()| EXIT_OK),
        Command::Simulate(args) => metronome::simulate::run(&args).map(|()| EXIT_OK),
        Command::Report(args) => metronome::show::run(&args),
        Command::Merge(args) => metronome::merge::run(&args),
        Command::Sweep(args) => metronome::sweep::run(&args),
        Command::Completions(args) => {
            metronome::manual::completions(&args, &mut std::io::stdout().lock()).map(|()| EXIT_OK)
        }
        Command::Man(args) => {
            metronome::manual::man(&args, &mut std::io::stdout().lock()).map(|()| EXIT_OK)
        }
    }
}

/// Help and version print as clap renders them (exit 0); a usage error
/// prints one line naming the problem (exit 2).
fn exit_on_clap_error(e: clap::Error) -> ! {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            let text = e.render().to_string();
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            let mut first = lines
                .next()
                .unwrap_or("bad usage")
                .trim_start_matches("error: ")
                .to_string();
            // "the following required arguments were not provided:" lists
            // them on the next lines.
            if first.ends_with(':') {
                let named: Vec<&str> = lines
                    .take_while(|l| l.starts_with("  "))
                    .map(str::trim)
                    .collect();
                first = format!("{first} {}", named.join(", "));
            }
            // clap's "did you mean": a misspelled flag, value or subcommand.
            let suggested = [
                ContextKind::SuggestedArg,
                ContextKind::SuggestedValue,
                ContextKind::SuggestedSubcommand,
            ]
            .into_iter()
            .find_map(|k| match e.get(k) {
                Some(ContextValue::String(s)) => Some(s.clone()),
                Some(ContextValue::Strings(v)) if !v.is_empty() => Some(v.join("' or '")),
                _ => None,
            });
            // Only a near miss is suggested: `--rps` is not `--cpus`.
            let what = match e.kind() {
                ErrorKind::InvalidValue => ContextKind::InvalidValue,
                _ => ContextKind::InvalidArg,
            };
            let typed = match e.get(what) {
                Some(ContextValue::String(s)) => s.clone(),
                _ => String::new(),
            };
            if let Some(s) = suggested.filter(|s| near_miss(&typed, s)) {
                first = format!("{first}; did you mean '{s}'?");
            }
            // `--dashboard ADDR`: the address must be joined with `=`
            // (a value after a space is the run's URL).
            if e.kind() == ErrorKind::UnknownArgument {
                let argv: Vec<String> = std::env::args().collect();
                let addr = |v: &str| !v.contains("://") && metronome::cli::parse_listen(v).is_ok();
                if let Some(w) = argv
                    .windows(2)
                    .find(|w| w[0] == "--dashboard" && addr(&w[1]))
                {
                    first = format!(
                        "{first}; to serve the dashboard on {}, write --dashboard={}",
                        w[1], w[1]
                    );
                }
            }
            eprintln!("metronome: {first} (see --help)");
            std::process::exit(EXIT_USAGE);
        }
    }
}

/// Whether clap's suggestion `suggested` is a near miss of what was
/// `typed` (a flag cut short, or a misspelling: at most a third of its
/// characters changed, at least one), and so worth printing.
fn near_miss(typed: &str, suggested: &str) -> bool {
    if typed.is_empty() {
        // A value or subcommand: clap's own judgement.
        return true;
    }
    let (t, s) = (
        typed.trim_start_matches('-'),
        suggested.trim_start_matches('-'),
    );
    if t.len() >= 3 && s.starts_with(t) {
        // A flag cut short: `--conc` for `--connections`.
        return true;
    }
    let a: Vec<char> = t.chars().collect();
    let b: Vec<char> = s.chars().collect();
    // Levenshtein distance, one row at a time.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let next = (prev + cost).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()] <= (a.len() / 3).max(1)
}

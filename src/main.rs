//! metronome: an open-loop load generator with honest latency.

use clap::Parser;
use metronome::cli::{Cli, Command};
use metronome::{UsageError, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

fn main() {
    let cli = Cli::parse();
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
        Command::Run(args) => {
            let r = metronome::run::run(&args)?;
            metronome::run::print(&r.report, args.format)?;
            Ok(r.exit_code)
        }
        Command::Serve(args) => metronome::serve::run(args).map(|()| EXIT_OK),
        Command::Demo(args) => metronome::demo::run(&args).map(|()| EXIT_OK),
        Command::Simulate(args) => metronome::simulate::run(&args).map(|()| EXIT_OK),
        Command::Report(args) => metronome::report_cmd::report(&args),
        Command::Merge(args) => metronome::report_cmd::merge(&args),
    }
}

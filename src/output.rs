//! Output files named on the command line: checked before any work is
//! done, so a run never ends by losing its results to a path that could
//! not have been written (`--out`, `--html`, `--hgrm`, `--hlog`, `--svg`,
//! and the outputs of `report`, `merge`, `sweep` and `--repeat`).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use crate::UsageError;

/// Checks that `path`, given with `flag`, can be written: it is not a
/// directory, its directory exists, and a file can be written there (an
/// existing file is opened for writing without being changed; a new one
/// is tried with a probe file beside it, removed at once).
///
/// # Errors
/// A [`UsageError`] (exit 2), one line naming the flag, the path and why.
///
/// # Example
/// ```
/// use std::path::Path;
/// use metronome::output::check;
/// let dir = std::env::temp_dir();
/// assert!(check("--out", &dir.join("metronome-doc-check.json")).is_ok());
/// let e = check("--out", &dir).unwrap_err();
/// assert!(e.0.starts_with("--out ") && e.0.contains("is a directory"));
/// let e = check("--html", Path::new("/nonexistent/dir/x.html")).unwrap_err();
/// assert_eq!(e.0, "--html /nonexistent/dir/x.html: the directory /nonexistent/dir does not exist");
/// ```
pub fn check(flag: &str, path: &Path) -> Result<(), UsageError> {
    let shown = path.display();
    let bad = |why: String| UsageError(format!("{flag} {shown}: {why}"));
    if path.as_os_str().is_empty() {
        return Err(bad("an empty path; name a file".into()));
    }
    if path.is_dir() {
        return Err(bad("is a directory; name a file in it".into()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        return Err(bad(format!(
            "the directory {} does not exist",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(bad(format!("{} is not a directory", dir.display())));
    }
    if path.exists() {
        return OpenOptions::new()
            .write(true)
            .open(path)
            .map(drop)
            .map_err(|e| bad(format!("cannot write it ({})", io_reason(&e))));
    }
    let probe = dir.join(format!(
        ".{}.metronome-probe-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(bad(format!(
            "cannot write in {} ({})",
            dir.display(),
            io_reason(&e)
        ))),
    }
}

/// Checks every `(flag, path)` given ([`check`]), in order, and that no
/// two of them name the same file (one would be lost to the other): the
/// same path, or two spellings of one file (`x` and `./x`, a symbolic
/// link to it).
///
/// # Errors
/// The first path that cannot be written, or the first two flags that
/// name one file (one line naming both).
///
/// # Example
/// ```
/// use std::path::Path;
/// use metronome::output::check_all;
/// let dir = std::env::temp_dir();
/// let x = dir.join("metronome-doc-same.json");
/// let dot = dir.join(".").join("metronome-doc-same.json");
/// let e = check_all([("--out", Some(x.as_path())), ("--html", Some(dot.as_path()))]).unwrap_err();
/// assert!(e.0.starts_with("--out and --html both name "), "{}", e.0);
/// let y = dir.join("metronome-doc-other.html");
/// assert!(check_all([("--out", Some(x.as_path())), ("--html", Some(y.as_path()))]).is_ok());
/// ```
pub fn check_all<'a>(
    outputs: impl IntoIterator<Item = (&'a str, Option<&'a Path>)>,
) -> Result<(), UsageError> {
    let mut seen: Vec<(&str, &Path, PathBuf)> = Vec::new();
    for (flag, path) in outputs {
        if let Some(p) = path {
            check(flag, p)?;
            let key = identity(p);
            if let Some((first, shown, _)) = seen.iter().find(|(_, _, k)| *k == key) {
                return Err(UsageError(format!(
                    "{first} and {flag} both name {}: one would overwrite the other; give each output its own file",
                    if *shown == p {
                        shown.display().to_string()
                    } else {
                        format!("{} ({})", shown.display(), p.display())
                    }
                )));
            }
            seen.push((flag, p, key));
        }
    }
    Ok(())
}

/// What file `path` names, however it is spelt: its directory resolved
/// (`.`, `..`, symbolic links) and its name, the name itself resolved when
/// it is a symbolic link to an existing file.
fn identity(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    dir.join(path.file_name().unwrap_or_default())
}

/// An I/O error's reason without Rust's `(os error N)` suffix.
fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Where the JSON report of a run goes when a file it was asked to write
/// could not be written at the end: `metronome-report-RUN_ID.json` in the
/// current directory, else in the temporary directory. Returns the path
/// written, or why neither could be.
///
/// # Errors
/// Both writes' errors, one line.
pub fn write_fallback(run_id: &str, json: &str) -> Result<PathBuf, String> {
    let name = format!("metronome-report-{run_id}.json");
    let here = PathBuf::from(&name);
    let first = match std::fs::write(&here, json) {
        Ok(()) => return Ok(std::fs::canonicalize(&here).unwrap_or(here)),
        Err(e) => e,
    };
    let tmp = std::env::temp_dir().join(&name);
    std::fs::write(&tmp, json)
        .map(|()| tmp.clone())
        .map_err(|e| {
            format!(
                "nor could the JSON report be written to {name} ({}) or {} ({})",
                io_reason(&first),
                tmp.display(),
                io_reason(&e)
            )
        })
}

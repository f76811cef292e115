//! The number formatter: the tests' own (`fnum`, `fcount`, `fpct`) and the
//! page's (`window.metronomeFormat`, in Chromium) give every golden vector
//! of tests/data/numbers.json.

use super::*;

/// Digits with thousands separated by ','.
fn grouped(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The shared number rule (tests/data/numbers.json, its "about"), written
/// here independently of the page's JavaScript: at most 4 significant
/// digits (Rust's `{:.3e}` rounds the exact binary value), integer digits
/// never dropped, thousands separated from 1000 (an integer there).
pub(super) fn fnum(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let (a, sign) = (v.abs(), if v < 0.0 { "-" } else { "" });
    let e = format!("{a:.3e}");
    let (mant, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if exp >= 3 {
        return format!("{sign}{}", grouped(&format!("{a:.0}")));
    }
    let digits = mant.replace('.', "");
    let body = if exp >= 0 {
        let k = exp as usize + 1;
        format!("{}.{}", &digits[..k], &digits[k..])
    } else {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    };
    format!("{sign}{body}")
}

/// A statistic of `n` values as the page shows it: [`fnum`] where `n`
/// is enough for the quantile `q` by the one rule
/// (`metronome::report::enough`), else `-`.
pub(super) fn fq(n: u64, q: f64, v: f64) -> String {
    if metronome::report::enough::enough(n, q) {
        fnum(v)
    } else {
        "-".into()
    }
}

/// A count, thousands separated.
pub(super) fn fcount(v: u64) -> String {
    grouped(&v.to_string())
}

/// A fraction as a percentage.
pub(super) fn fpct(v: f64) -> String {
    if v.is_finite() {
        format!("{}%", fnum(100.0 * v))
    } else {
        "-".into()
    }
}

/// The golden vectors of the shared number rule.
pub(super) fn golden() -> Vec<(String, f64, String)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/numbers.json"
    ))
    .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_string(),
                c["value"].as_f64().unwrap(),
                c["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The test's own formatter gives the golden vectors (so the page's
/// numbers are checked against a rule that is itself checked).
#[test]
fn the_tests_formatter_gives_the_golden_vectors() {
    for (kind, v, want) in golden() {
        let got = match kind.as_str() {
            "num" => fnum(v),
            "count" => fcount(v as u64),
            "pct" => fpct(v),
            "bytes" => continue,
            other => panic!("unknown kind {other}"),
        };
        assert_eq!(got, want, "{kind} {v}");
    }
}

/// The page's formatter (`window.metronomeFormat`), evaluated in Chromium
/// on every golden vector of tests/data/numbers.json, gives each text.
#[test]
fn page_formatter_gives_the_golden_vectors() {
    let cases = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/numbers.json"
    ))
    .unwrap();
    let html = metronome::report::html::render_report(&example(), None).unwrap();
    // A script after the page's own: formats every case into #golden.
    let probe = format!(
        "<script>(function () {{ var g = {}; var f = window.metronomeFormat; \
         var p = document.createElement('pre'); p.id = 'golden'; \
         p.textContent = JSON.stringify(g.cases.map(function (c) {{ return f[c.kind](c.value); }})); \
         document.body.appendChild(p); }})();</script>\n</body>",
        cases.replace('<', "\\u003c")
    );
    let page = artifacts().join("golden.html");
    std::fs::write(&page, html.replacen("</body>", &probe, 1)).unwrap();
    let Some(exe) = exe_or_skip("the golden vectors") else {
        return;
    };
    let dom = chromium(&exe, &page, &["--dump-dom".to_string()]);
    let open = "<pre id=\"golden\">";
    let from = dom.find(open).expect("the probe ran") + open.len();
    let len = dom[from..].find("</pre>").unwrap();
    let got: Vec<String> = serde_json::from_str(&unescape(&dom[from..from + len])).unwrap();
    let want = golden();
    assert_eq!(got.len(), want.len());
    for ((kind, v, text), got) in want.iter().zip(&got) {
        assert_eq!(got, text, "{kind} {v}");
    }
}

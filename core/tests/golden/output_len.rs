//! `Recorder::output_len`: one value per successful stream (its tokens:
//! usage when sent, else content chunks), none for failures, merged exactly.

use metronome_core::measure::Slo;
use metronome_core::measure::{ErrorKind, Recorder, StreamTiming};

const MS: u64 = 1_000_000;

fn stream(chunks: u64, usage: Option<u32>, done: bool) -> StreamTiming {
    let mut t = StreamTiming::new(0, 0);
    for i in 0..chunks {
        t.on_content((10 + i) * MS);
    }
    if let Some(u) = usage {
        t.on_usage(u);
    }
    if done {
        t.on_done(100 * MS);
    }
    t
}

#[test]
fn output_len_per_successful_stream() {
    let mut a = Box::new(Recorder::new());
    let slo = Slo::default();
    assert_eq!(a.record_stream(&stream(3, None, true), &[], &slo), Ok(true));
    assert_eq!(
        a.record_stream(&stream(2, Some(40), true), &[], &slo),
        Ok(true)
    );
    assert_eq!(
        a.record_stream(&stream(5, Some(9), false), &[], &slo),
        Err(ErrorKind::StreamCut)
    );
    assert_eq!(
        (a.output_len.count(), a.output_len.min(), a.output_len.max()),
        (2, 3, 40)
    );
    assert_eq!(a.output_len.sum(), u128::from(a.output_tokens));

    let mut b = Box::new(Recorder::new());
    assert_eq!(
        b.record_stream(&stream(1, Some(7), true), &[], &slo),
        Ok(true)
    );
    a.merge(&b);
    assert_eq!((a.output_len.count(), a.output_len.sum()), (3, 50));
    assert_eq!(a.output_len.quantile(0.5), 7);
}

//! The golden table of a response head's fields (core/tests/data/heads.rs)
//! against core's one reading of them, `head::ResponseFields`, which
//! HTTP/1.1, HTTP/2 and HTTP/3 all use; tests/hostile/heads.rs runs the
//! same table end to end.

use crate::heads::{Reads, HEADS};
use metronome_core::head::ResponseFields;

#[test]
fn every_row_reads_as_the_table_says() {
    for row in HEADS {
        let mut f = ResponseFields::default();
        f.field(row.name.as_bytes(), row.value.as_bytes());
        let got = match row.reads {
            Reads::EventStream(_) => Reads::EventStream(f.event_stream),
            Reads::GrpcStatus(_) => Reads::GrpcStatus(f.grpc_status),
            Reads::ContentLength(_) => {
                Reads::ContentLength(f.content_length.filter(|_| !f.bad_length))
            }
        };
        assert_eq!(got, row.reads, "{}: {}", row.name, row.value);
        // Names are read in any case (HTTP/1.1 sends them so).
        let mut upper = ResponseFields::default();
        upper.field(
            row.name.to_ascii_uppercase().as_bytes(),
            row.value.as_bytes(),
        );
        assert_eq!(upper, f, "{}: {}", row.name, row.value);
    }
}

/// A field the reading does not know changes nothing; a later line of
/// the same field counts.
#[test]
fn other_fields_and_repeats() {
    let mut f = ResponseFields::default();
    f.field(b"x-other", b"text/event-stream");
    assert_eq!(f, ResponseFields::default());
    f.field(b"content-type", b"text/event-stream");
    f.field(b"content-type", b"text/plain");
    f.field(b"grpc-status", b"3");
    f.field(b"grpc-status", b"0");
    f.field(b"content-length", b"2");
    f.field(b"content-length", b"3");
    assert_eq!(
        (
            f.event_stream,
            f.grpc_status,
            f.content_length,
            f.bad_length
        ),
        (false, Some(0), Some(2), true)
    );
}

//! Prometheus remote write 1.0: the protobuf messages of `prompb/types.proto`
//! and `prompb/remote.proto` as of Prometheus v2.42, written by hand as
//! `prost` derives (no build script, no `protoc`), and the body a remote
//! write POST carries: the encoded [`WriteRequest`], snappy-compressed in
//! the raw block format (not the framed stream format).
//!
//! Field numbers and wire types are the `.proto` files' own; fields metronome
//! never sends (exemplars, metadata, float histograms' counts) are kept so
//! that the messages read back what a peer sends, and so tests can decode.

/// `Content-Encoding` of a remote write body.
pub const CONTENT_ENCODING: &str = "snappy";
/// `Content-Type` of a remote write body.
pub const CONTENT_TYPE: &str = "application/x-protobuf";
/// `X-Prometheus-Remote-Write-Version` of remote write 1.0.
pub const VERSION: &str = "0.1.0";

/// `prometheus.WriteRequest`: the body of one push.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series, each with its samples or histograms.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    /// Metric metadata (type, help, unit).
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// `prometheus.TimeSeries`: one series' labels and its values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// The labels, `__name__` among them, sorted by name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Float samples, oldest first.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Exemplars (metronome sends none).
    #[prost(message, repeated, tag = "3")]
    pub exemplars: Vec<Exemplar>,
    /// Native histogram samples, oldest first.
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, prost::Message)]
pub struct Label {
    /// Label name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Label value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`: one float value at a time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.Exemplar`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    /// The exemplar's labels (a trace id, say).
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// The value.
    #[prost(double, tag = "2")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// `prometheus.Histogram`: one native histogram sample. metronome sends the
/// integer form: `count_int`, `zero_count_int` and `positive_deltas`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// Observations: `count_int` (tag 1) or `count_float` (tag 2).
    #[prost(oneof = "Count", tags = "1, 2")]
    pub count: Option<Count>,
    /// Sum of the observations.
    #[prost(double, tag = "3")]
    pub sum: f64,
    /// Bucket schema, -4..=8: each power of two is split into `2^schema`
    /// exponential buckets, bucket `i` covering `(2^((i-1)/2^schema), 2^(i/2^schema)]`.
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    /// Half-width of the zero bucket `[-zero_threshold, zero_threshold]`.
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    /// Observations in the zero bucket: `zero_count_int` (tag 6) or
    /// `zero_count_float` (tag 7).
    #[prost(oneof = "ZeroCount", tags = "6, 7")]
    pub zero_count: Option<ZeroCount>,
    /// Spans of the negative buckets.
    #[prost(message, repeated, tag = "8")]
    pub negative_spans: Vec<BucketSpan>,
    /// Integer histograms: each negative bucket's count minus the previous one's.
    #[prost(sint64, repeated, tag = "9")]
    pub negative_deltas: Vec<i64>,
    /// Float histograms: each negative bucket's count.
    #[prost(double, repeated, tag = "10")]
    pub negative_counts: Vec<f64>,
    /// Spans of the positive buckets.
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    /// Integer histograms: each positive bucket's count minus the previous
    /// one's (the first: minus zero).
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// Float histograms: each positive bucket's count.
    #[prost(double, repeated, tag = "13")]
    pub positive_counts: Vec<f64>,
    /// `ResetHint`: 0 unknown, 1 yes, 2 no, 3 gauge.
    #[prost(int32, tag = "14")]
    pub reset_hint: i32,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

/// The `count` oneof of [`Histogram`].
#[derive(Clone, Copy, PartialEq, prost::Oneof)]
pub enum Count {
    /// Integer histograms.
    #[prost(uint64, tag = "1")]
    CountInt(u64),
    /// Float histograms.
    #[prost(double, tag = "2")]
    CountFloat(f64),
}

/// The `zero_count` oneof of [`Histogram`].
#[derive(Clone, Copy, PartialEq, prost::Oneof)]
pub enum ZeroCount {
    /// Integer histograms.
    #[prost(uint64, tag = "6")]
    ZeroCountInt(u64),
    /// Float histograms.
    #[prost(double, tag = "7")]
    ZeroCountFloat(f64),
}

/// `prometheus.BucketSpan`: `length` consecutive buckets, `offset` after the
/// previous span's end (for the first span: the first bucket's index).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BucketSpan {
    /// Gap to the previous span, or the first bucket's index.
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    /// Consecutive buckets in the span.
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// `prometheus.MetricMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricMetadata {
    /// `MetricType`: 0 unknown, 1 counter, 2 gauge, 3 histogram, 4 gauge
    /// histogram, 5 summary, 6 info, 7 stateset.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    /// The metric family's name.
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    /// Help text.
    #[prost(string, tag = "4")]
    pub help: String,
    /// Unit.
    #[prost(string, tag = "5")]
    pub unit: String,
}

/// The body of a remote write POST: `req` encoded, then compressed with
/// snappy's raw block format.
pub fn encode(req: &WriteRequest) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(req);
    // Compressing a byte slice into a fresh buffer of max_compress_len
    // cannot fail: the crate's only errors are a too-small output buffer and
    // an input over 2^32 - 1 bytes (a push is kilobytes).
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

/// Reads a body back: snappy's raw block format, then the protobuf. Used by
/// the tests (a fake receiver) and to check a body before a push.
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| format!("not snappy (raw block format): {e}"))?;
    <WriteRequest as prost::Message>::decode(raw.as_slice())
        .map_err(|e| format!("not a remote write WriteRequest: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn sample_encodes_as_the_proto_says() {
        // Field 1 double (tag 0x09, 8 bytes little-endian), field 2 varint (0x10).
        let s = Sample {
            value: 1.0,
            timestamp: 2,
        };
        assert_eq!(
            s.encode_to_vec(),
            [0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10, 0x02]
        );
    }

    #[test]
    fn histogram_fields_have_their_numbers_and_zigzag() {
        let h = Histogram {
            count: Some(Count::CountInt(3)),
            sum: 0.0,
            schema: 8,
            zero_threshold: 0.0,
            zero_count: Some(ZeroCount::ZeroCountInt(0)),
            positive_spans: vec![BucketSpan {
                offset: -1,
                length: 2,
            }],
            positive_deltas: vec![1, 1],
            timestamp: 5,
            ..Default::default()
        };
        let bytes = h.encode_to_vec();
        // count_int 3; schema sint32 8 -> zigzag 16; zero_count_int 0 (a
        // oneof member is written even when 0); span {offset -1 -> zigzag 1,
        // length 2}; packed sint64 deltas [1, 1] -> zigzag [2, 2]; timestamp 5.
        assert_eq!(
            bytes,
            [0x08, 3, 0x20, 16, 0x30, 0, 0x5a, 4, 0x08, 1, 0x10, 2, 0x62, 2, 2, 2, 0x78, 5]
        );
    }

    #[test]
    fn body_round_trips_through_snappy() {
        let req = WriteRequest {
            timeseries: vec![TimeSeries {
                labels: vec![Label {
                    name: "__name__".into(),
                    value: "metronome_requests_ok_total".into(),
                }],
                samples: vec![Sample {
                    value: 42.0,
                    timestamp: 1_700_000_000_000,
                }],
                ..Default::default()
            }],
            metadata: vec![],
        };
        let body = encode(&req);
        // The raw block format starts with the uncompressed length as a
        // varint (no stream identifier chunk 0xff "sNaPpY").
        let raw_len = req.encode_to_vec().len();
        assert_eq!(body[0] as usize, raw_len);
        assert_eq!(decode(&body), Ok(req));
        assert!(decode(b"\xff\x06\x00\x00sNaPpY").is_err());
    }
}

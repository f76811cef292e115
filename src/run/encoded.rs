//! The requests encoded for HTTP/2 (`--http2-prior-knowledge`, `--http2`)
//! or HTTP/3 (`--http3`): each one's HPACK header block or QPACK field
//! section, where its body starts and its field list's size (the server's
//! header size limit applies to it); and the plan's [`Wire`] they make.

use metronome_core::plan::{EncodedRequest, Streams, Wire};

use crate::cli::RunArgs;
use crate::UsageError;

/// `--http2-prior-knowledge`, `--http2` or `--http3`: each request's header
/// block (HPACK or QPACK), where its body starts in the HTTP/1.1 encoding
/// and its field list's size, made before the clock.
pub(super) struct Encoded {
    pub(super) blocks: Vec<Vec<u8>>,
    pub(super) body_at: Vec<usize>,
    pub(super) list_size: Vec<usize>,
}

/// Encodes every request for HTTP/2 (`--http2-prior-knowledge`: h2c,
/// scheme `http`; `--http2`: scheme `https`) or HTTP/3 (`--http3`, QPACK,
/// scheme `https`), before the clock.
///
/// # Errors
/// A [`UsageError`] naming the request that cannot go over HTTP/2 (or HTTP/3).
pub(super) fn requests(args: &RunArgs, requests: &[Vec<u8>]) -> anyhow::Result<Option<Encoded>> {
    if !args.http2_prior_knowledge && !args.http2 && !args.http3 {
        if args.max_streams.is_some() {
            return Err(UsageError(
                "--max-streams needs --http2, --http2-prior-knowledge or --http3".into(),
            )
            .into());
        }
        return Ok(None);
    }
    let https = args.url.starts_with("https://");
    if args.http3 && !https {
        return Err(
            UsageError("--http3 is HTTP/3 over QUIC, for an https:// URL only".into()).into(),
        );
    }
    if args.http2 && !https {
        return Err(UsageError(
            "--http2 is HTTP/2 over TLS (ALPN h2) for an https:// URL; for http:// use \
             --http2-prior-knowledge (h2c)"
                .into(),
        )
        .into());
    }
    if args.http2_prior_knowledge && https {
        return Err(UsageError(
            "--http2-prior-knowledge is h2c on an http:// URL; for https:// use --http2".into(),
        )
        .into());
    }
    if let Some(n) = args.max_streams {
        if n == 0 || n > metronome_core::plan::MAX_STREAMS {
            return Err(UsageError(format!(
                "--max-streams {n} must be 1 to {}",
                metronome_core::plan::MAX_STREAMS
            ))
            .into());
        }
    }
    let mut blocks = Vec::with_capacity(requests.len());
    let mut body_at = Vec::with_capacity(requests.len());
    let mut list_size = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        let mut out = vec![0u8; r.len() * 2 + 256];
        let scheme: &[u8] = if https { b"https" } else { b"http" };
        let e = if args.http3 {
            metronome_core::h3::request::from_http1(r, scheme, &mut out)
                .map_err(|e| UsageError(format!("request {} cannot go over HTTP/3: {e}", i + 1)))?
        } else {
            metronome_core::h2::request::from_http1(r, scheme, &mut out)
                .map_err(|e| UsageError(format!("request {} cannot go over HTTP/2: {e}", i + 1)))?
        };
        out.truncate(e.len);
        blocks.push(out);
        body_at.push(e.body_at);
        list_size.push(e.list_size);
    }
    Ok(Some(Encoded {
        blocks,
        body_at,
        list_size,
    }))
}

/// The plan's [`Wire`]: HTTP/3 for `--http3`, HTTP/2 for the other
/// requests `encoded` (made by [`requests`]), else HTTP/1.1.
pub(super) fn wire<'a>(args: &RunArgs, encoded: Option<&'a [EncodedRequest<'a>]>) -> Wire<'a> {
    let Some(requests) = encoded else {
        return Wire::Http1;
    };
    let streams = Streams {
        requests,
        max_streams: args.max_streams.unwrap_or(0),
    };
    if args.http3 {
        Wire::Http3(streams)
    } else {
        Wire::Http2(streams)
    }
}

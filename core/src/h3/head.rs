//! The server's side of QPACK decoding: a request's field section and a
//! request's trailers, with the rules of RFC 9114 sections 4.2 and 4.3.1
//! checked as the fields are decoded (no allocation: nothing is kept but
//! flags, the `:method` being CONNECT and the `content-length`).
//!
//! A request head ([`Decoder::decode_request`]) is malformed
//! ([`H3Error::Message`], H3_MESSAGE_ERROR, a stream error) by the rule
//! HTTP/2's server keeps too, [`RequestFields`] (pseudo-headers,
//! connection-specific fields, bytes, `content-length`), or when it lacks
//! the pseudo-headers a request needs ([`RequestFields::complete`]).
//! Trailers ([`Decoder::decode_trailers`]) follow the same field rules and
//! may carry no pseudo-header. Uppercase names are refused by the decoder
//! itself.

use super::error::H3Error;
use super::qpack::Decoder;
use crate::head::RequestFields;

/// What a request head held, beyond the fields handed to the callback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestSection {
    /// Fields passed to the callback.
    pub fields: usize,
    /// The section's size as RFC 9114 section 4.2.2 counts it.
    pub size: usize,
    /// The method was CONNECT.
    pub connect: bool,
    /// The `content-length`, when given (the caller checks it against the
    /// DATA received: RFC 9114 section 4.1.2).
    pub content_length: Option<u64>,
}

impl<const N: usize> Decoder<N> {
    /// Decodes a request's field section (a HEADERS frame's payload on a
    /// request stream, read by a server that advertised a table capacity
    /// of 0), calling `emit(name, value)` for each field in order, the
    /// pseudo-headers included, and checking the rules of the module docs.
    ///
    /// # Errors
    /// As [`Decoder::decode`] for the encoding and the size;
    /// [`H3Error::Message`] for a malformed request. Fields may have been
    /// emitted before an error.
    ///
    /// ```
    /// use metronome_core::h3::qpack::{encode_request, Decoder};
    /// use metronome_core::h3::H3Error;
    /// let mut block = [0u8; 128];
    /// let n = encode_request(b"POST", b"https", b"x", b"/v1", &[(b"content-length", b"5")], false, &mut block).unwrap();
    /// let mut seen = Vec::new();
    /// let r = Decoder::<1024>::new().decode_request(&block[..n], |k, v| seen.push((k.to_vec(), v.to_vec()))).unwrap();
    /// assert_eq!((r.fields, r.connect, r.content_length), (5, false, Some(5)));
    /// assert_eq!(seen[3], (b":path".to_vec(), b"/v1".to_vec()));
    /// // No :path: malformed.
    /// let n = encode_request(b"GET", b"https", b"x", b"", &[], false, &mut block).unwrap();
    /// assert_eq!(Decoder::<1024>::new().decode_request(&block[..n], |_, _| {}), Err(H3Error::Message));
    /// ```
    pub fn decode_request<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        mut emit: F,
    ) -> Result<RequestSection, H3Error> {
        let mut rule = RequestFields::default();
        let (fields, size) = self.lines(block, |name, value| {
            rule.field(name, value).map_err(|_| H3Error::Message)?;
            emit(name, value);
            Ok(())
        })?;
        if !rule.complete() {
            return Err(H3Error::Message);
        }
        Ok(RequestSection {
            fields,
            size,
            connect: rule.connect(),
            content_length: rule.content_length(),
        })
    }

    /// Decodes a request's trailers: regular fields only, with the rules
    /// of the module docs. Returns the number of fields.
    ///
    /// # Errors
    /// As [`Decoder::decode_request`]; any pseudo-header is
    /// [`H3Error::Message`].
    pub fn decode_trailers<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        mut emit: F,
    ) -> Result<usize, H3Error> {
        let mut rule = RequestFields::default();
        let (fields, _) = self.lines(block, |name, value| {
            rule.field(name, value).map_err(|_| H3Error::Message)?;
            if rule.pseudo() {
                return Err(H3Error::Message);
            }
            emit(name, value);
            Ok(())
        })?;
        Ok(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::qpack::{encode_field, encode_prefix};
    use std::vec::Vec;

    /// A section of `fields`, each written as the encoder writes it.
    fn block(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = std::vec![0u8; 1024];
        let mut n = encode_prefix(&mut out).unwrap();
        for (name, value) in fields {
            n += encode_field(name, value, false, &mut out[n..]).unwrap();
        }
        out.truncate(n);
        out
    }

    fn request(fields: &[(&[u8], &[u8])]) -> Result<RequestSection, H3Error> {
        Decoder::<4096>::new().decode_request(&block(fields), |_, _| {})
    }

    const GET: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/"),
    ];

    fn with(extra: &[(&'static [u8], &'static [u8])]) -> Vec<(&'static [u8], &'static [u8])> {
        let mut v = GET.to_vec();
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn well_formed_requests() {
        let r = request(&GET).unwrap();
        assert_eq!(
            r,
            RequestSection {
                fields: 4,
                size: 7 + 3 + 7 + 5 + 10 + 9 + 5 + 1 + 4 * 32,
                connect: false,
                content_length: None,
            }
        );
        // host instead of :authority; te trailers; content-length twice, equal.
        let r = request(&[
            (b":method", b"POST"),
            (b":scheme", b"https"),
            (b":path", b"/v1/chat/completions?x=1"),
            (b"host", b"example"),
            (b"te", b"trailers"),
            (b"content-length", b"42"),
            (b"content-length", b"42"),
        ])
        .unwrap();
        assert_eq!((r.fields, r.content_length), (7, Some(42)));
        // A scheme without authority needs no :authority.
        assert!(request(&[(b":method", b"GET"), (b":scheme", b"foo"), (b":path", b"*")]).is_ok());
        // CONNECT: :method and :authority only.
        let r = request(&[(b":method", b"CONNECT"), (b":authority", b"h:443")]).unwrap();
        assert!(r.connect);
    }

    #[test]
    fn malformed_requests() {
        let cases: Vec<Vec<(&[u8], &[u8])>> = std::vec![
            GET[1..].to_vec(),                                              // no :method
            std::vec![GET[0], GET[2], GET[3]],                              // no :scheme
            GET[..3].to_vec(),                                              // no :path
            std::vec![GET[0], GET[1], GET[3]], // https, no authority or host
            std::vec![GET[0], GET[1], GET[2], (b":path", b"")], // empty :path
            with(&[(b":path", b"/")]),         // :path twice
            with(&[(b":status", b"200")]),     // :status in a request
            with(&[(b":protocol", b"websocket")]), // unknown pseudo-header
            std::vec![GET[0], GET[1], (b"accept", b"*/*"), GET[2], GET[3]], // pseudo after regular
            with(&[(b"connection", b"close")]),
            with(&[(b"keep-alive", b"5")]),
            with(&[(b"proxy-connection", b"x")]),
            with(&[(b"transfer-encoding", b"chunked")]),
            with(&[(b"upgrade", b"h2c")]),
            with(&[(b"te", b"gzip")]),
            with(&[(b"content-length", b"4x")]),
            with(&[(b"content-length", b"")]),
            with(&[(b"content-length", b"1"), (b"content-length", b"2")]),
            with(&[(b"x-a", b"a\r\nb")]),
            with(&[(b"x-a", b"a\0")]),
            with(&[(b"x-a", b" padded")]),
            with(&[(b"x-a", b"padded\t")]),
            std::vec![
                (b":method", b"CONNECT"),
                (b":authority", b"h"),
                (b":path", b"/")
            ],
            std::vec![(b":method", b"CONNECT")],
        ];
        for (i, fields) in cases.iter().enumerate() {
            assert_eq!(
                request(fields),
                Err(H3Error::Message),
                "case {i}: {fields:?}"
            );
        }
        // Uppercase names: the decoder's own rule.
        let mut b = block(&GET);
        b.extend_from_slice(b"\x23X-a\x01b");
        assert_eq!(
            Decoder::<4096>::new().decode_request(&b, |_, _| {}),
            Err(H3Error::Message)
        );
    }

    #[test]
    fn trailers_carry_no_pseudo_header() {
        let mut d = Decoder::<256>::new();
        let mut seen = 0;
        assert_eq!(
            d.decode_trailers(&block(&[(b"x-checksum", b"1")]), |_, _| seen += 1),
            Ok(1)
        );
        assert_eq!(seen, 1);
        assert_eq!(d.decode_trailers(&block(&[]), |_, _| {}), Ok(0));
        for bad in [
            std::vec![(&b":path"[..], &b"/"[..])],
            std::vec![(b"x-a", b"1"), (b":status", b"200")],
            std::vec![(b"connection", b"close")],
        ] {
            assert_eq!(
                d.decode_trailers(&block(&bad), |_, _| {}),
                Err(H3Error::Message)
            );
        }
        // Too large for the decoder: H3_EXCESSIVE_LOAD.
        assert_eq!(
            Decoder::<40>::new().decode_trailers(&block(&[(b"x-checksum", b"1")]), |_, _| {}),
            Err(H3Error::FieldSectionTooLarge)
        );
    }
}

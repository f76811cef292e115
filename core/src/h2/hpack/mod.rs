//! HPACK (RFC 7541): header compression for HTTP/2, allocation-free.
//!
//! - [`huffman`]: the Appendix B code, decoder and encoder.
//! - [`table`]: the static table and [`DynamicTable<N>`], a fixed `N`-byte
//!   buffer (its cost and bound are in the module docs).
//! - [`Decoder<N>`]: a header block in, fields out, the table updated.
//! - [`encode_field`], [`encode_request`], [`encode_response`],
//!   [`encode_fields`]: a stateless encoder (static indices and literals
//!   without indexing), for request heads, response heads and trailers;
//!   [`encode_table_size_update`].

use core::fmt;

mod decoder;
mod encoder;
pub mod huffman;
pub mod table;

pub use decoder::{Block, Decoder};
pub use encoder::{
    encode_field, encode_fields, encode_integer, encode_request, encode_response,
    encode_table_size_update,
};
pub use table::DynamicTable;

/// Why a header block could not be decoded. Each is a
/// `COMPRESSION_ERROR` for the connection (RFC 9113 section 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HpackError {
    /// The block ended inside a field representation.
    Truncated,
    /// An integer was longer than any index, length or size can be.
    Integer,
    /// An index of 0, or beyond the static and dynamic tables.
    Index,
    /// A dynamic table size update above the advertised maximum, or after
    /// the first field of a block.
    TableSizeUpdate,
    /// A Huffman-coded string contained the EOS symbol.
    HuffmanEos,
    /// A Huffman-coded string ended in more than 7 bits of padding, or in
    /// padding that was not all ones.
    HuffmanPadding,
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HpackError::Truncated => "HPACK block ends inside a field",
            HpackError::Integer => "HPACK integer too large",
            HpackError::Index => "HPACK index out of the tables",
            HpackError::TableSizeUpdate => {
                "HPACK table size update above the advertised size or after a field"
            }
            HpackError::HuffmanEos => "HPACK Huffman string contains EOS",
            HpackError::HuffmanPadding => "HPACK Huffman string has bad padding",
        })
    }
}

impl core::error::Error for HpackError {}

//! Encoding replies in the transmission phase: simple replies, and the structured reply chunks
//! used once NBD_OPT_STRUCTURED_REPLY was negotiated (one OFFSET_DATA chunk per read, an ERROR
//! chunk with a message for a refused request).

use crate::wire::*;

/// A simple reply header (16 bytes). A successful READ's data follows it.
pub fn simple(errno: u32, handle: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&errno.to_be_bytes());
    out.extend_from_slice(&handle.to_be_bytes());
}

fn chunk_header(flags: u16, chunk_type: u16, handle: u64, length: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&chunk_type.to_be_bytes());
    out.extend_from_slice(&handle.to_be_bytes());
    out.extend_from_slice(&length.to_be_bytes());
}

/// The header of a final OFFSET_DATA chunk (28 bytes); `data_bytes` of data follow it.
pub fn data_chunk(handle: u64, offset: u64, data_bytes: u32, out: &mut Vec<u8>) {
    chunk_header(REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, handle, data_bytes + 8, out);
    out.extend_from_slice(&offset.to_be_bytes());
}

/// A final ERROR chunk carrying the error value and a human-readable message.
pub fn error_chunk(handle: u64, errno: u32, message: &str, out: &mut Vec<u8>) {
    let mut message = message.as_bytes();
    if message.len() > STRING_BYTES_MAX {
        message = &message[..STRING_BYTES_MAX];
    }
    chunk_header(REPLY_FLAG_DONE, REPLY_TYPE_ERROR, handle, 6 + message.len() as u32, out);
    out.extend_from_slice(&errno.to_be_bytes());
    out.extend_from_slice(&(message.len() as u16).to_be_bytes());
    out.extend_from_slice(message);
}

/// The header of a final BLOCK_STATUS chunk; the context ID and descriptors (`payload_bytes`)
/// follow it.
pub fn block_status_chunk(handle: u64, payload_bytes: u32, out: &mut Vec<u8>) {
    chunk_header(REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, handle, payload_bytes, out);
}

/// A final NONE chunk: success without payload.
pub fn none_chunk(handle: u64, out: &mut Vec<u8>) {
    chunk_header(REPLY_FLAG_DONE, REPLY_TYPE_NONE, handle, 0, out);
}

/// The reply header to a request: simple, or structured when negotiated. A READ reply header
/// is followed by `data_bytes` of data on success.
pub fn header(
    structured: bool,
    is_read: bool,
    handle: u64,
    offset: u64,
    result: Result<u32, (u32, &str)>,
    out: &mut Vec<u8>,
) {
    match (structured, result) {
        (false, Ok(_)) => simple(0, handle, out),
        (false, Err((errno, _))) => simple(errno, handle, out),
        (true, Ok(data_bytes)) if is_read && data_bytes > 0 => data_chunk(handle, offset, data_bytes, out),
        // A structured read of zero bytes has no content chunk to send.
        (true, Ok(_)) if is_read => none_chunk(handle, out),
        (true, Ok(_)) => simple(0, handle, out),
        (true, Err((errno, message))) => error_chunk(handle, errno, message, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_reply_layout() {
        let mut out = Vec::new();
        simple(EINVAL, 0x0102_0304_0506_0708, &mut out);
        assert_eq!(out, [0x67, 0x44, 0x66, 0x98, 0, 0, 0, 22, 1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn structured_chunks_layout() {
        let mut out = Vec::new();
        data_chunk(9, 4096, 512, &mut out);
        assert_eq!(out.len(), 28);
        assert_eq!(&out[0..4], &STRUCTURED_REPLY_MAGIC.to_be_bytes());
        assert_eq!(u16::from_be_bytes([out[4], out[5]]), REPLY_FLAG_DONE);
        assert_eq!(u32::from_be_bytes(out[16..20].try_into().unwrap()), 520);
        out.clear();
        error_chunk(9, EINVAL, "bad", &mut out);
        assert_eq!(out.len(), 20 + 6 + 3);
        assert_eq!(u16::from_be_bytes([out[6], out[7]]), REPLY_TYPE_ERROR);
        out.clear();
        header(true, true, 1, 0, Ok(0), &mut out);
        assert_eq!(u16::from_be_bytes([out[6], out[7]]), REPLY_TYPE_NONE);
    }
}

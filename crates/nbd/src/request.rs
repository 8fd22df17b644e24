//! Transmission-phase requests: parsing the 28-byte header and deciding, before anything is
//! touched, whether the request is valid for this export (doc/proto.md, "Request types",
//! "Block size constraints", "Error values"). Pure: the server does the reading and writing.

use crate::wire::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub command: u16,
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
}

/// The request magic was wrong: the stream cannot be resynchronised, so the session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("request magic {0:#010x} is not NBD_REQUEST_MAGIC 0x25609513")]
pub struct BadRequestMagic(pub u32);

impl RequestHeader {
    pub fn parse(bytes: &[u8; REQUEST_HEADER_BYTES]) -> Result<RequestHeader, BadRequestMagic> {
        let magic = u32::from_be_bytes(bytes[0..4].try_into().expect("4 bytes"));
        if magic != REQUEST_MAGIC {
            return Err(BadRequestMagic(magic));
        }
        Ok(RequestHeader {
            flags: u16::from_be_bytes([bytes[4], bytes[5]]),
            command: u16::from_be_bytes([bytes[6], bytes[7]]),
            handle: u64::from_be_bytes(bytes[8..16].try_into().expect("8 bytes")),
            offset: u64::from_be_bytes(bytes[16..24].try_into().expect("8 bytes")),
            length: u32::from_be_bytes(bytes[24..28].try_into().expect("4 bytes")),
        })
    }

    pub fn encode(&self) -> [u8; REQUEST_HEADER_BYTES] {
        let mut b = [0u8; REQUEST_HEADER_BYTES];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.command.to_be_bytes());
        b[8..16].copy_from_slice(&self.handle.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// Bytes that follow the header on the wire: the data of a WRITE, whatever its validity.
    pub fn payload_bytes(&self) -> u32 {
        if self.command == CMD_WRITE {
            self.length
        } else {
            0
        }
    }
}

/// A WRITE payload longer than this is treated as a denial of service: the session ends
/// instead of the payload being drained (doc/proto.md allows it above 2^25 bytes).
pub const WRITE_DRAIN_MAX_BYTES: u32 = 1 << 25;

/// What the export allows, as advertised in the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub size_bytes: u64,
    pub block_min_bytes: u32,
    pub block_max_bytes: u32,
    pub read_only: bool,
    pub structured_replies: bool,
    /// base:allocation was negotiated: NBD_CMD_BLOCK_STATUS is allowed.
    pub block_status: bool,
}

/// A valid request. Lengths of zero are valid and do nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Read {
        offset: u64,
        length: u32,
    },
    Write {
        offset: u64,
        length: u32,
        fua: bool,
    },
    Disconnect,
    Flush,
    Trim {
        offset: u64,
        length: u32,
        fua: bool,
    },
    Cache {
        offset: u64,
        length: u32,
    },
    WriteZeroes {
        offset: u64,
        length: u32,
        no_hole: bool,
        fua: bool,
    },
    /// Which parts of the range are holes (base:allocation); `one`: a single extent.
    BlockStatus {
        offset: u64,
        length: u32,
        one: bool,
    },
}

/// Why a request is refused: the error value of the reply and a message for the log (and for
/// the structured error chunk when structured replies were negotiated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub errno: u32,
    pub message: String,
}

impl Refusal {
    pub fn new(errno: u32, message: impl Into<String>) -> Self {
        Refusal { errno, message: message.into() }
    }
}

/// Checks a request against the export's limits. `Err` carries the reply's error value.
pub fn validate(h: &RequestHeader, limits: &Limits) -> Result<Request, Refusal> {
    let name = command_name(h.command);
    let mut allowed = CMD_FLAG_FUA; // valid on every command once NBD_FLAG_SEND_FUA is offered
    match h.command {
        CMD_READ | CMD_WRITE | CMD_DISC | CMD_FLUSH | CMD_TRIM | CMD_CACHE | CMD_WRITE_ZEROES => {}
        CMD_BLOCK_STATUS if limits.block_status => allowed |= CMD_FLAG_REQ_ONE,
        CMD_BLOCK_STATUS => {
            return Err(Refusal::new(EINVAL, "BLOCK_STATUS without a negotiated metadata context"))
        }
        other => return Err(Refusal::new(EINVAL, format!("unknown command {other}"))),
    }
    if h.command == CMD_WRITE_ZEROES {
        allowed |= CMD_FLAG_NO_HOLE;
    }
    if h.command == CMD_READ && limits.structured_replies {
        allowed |= CMD_FLAG_DF;
    }
    if h.flags & !allowed != 0 {
        return Err(Refusal::new(
            EINVAL,
            format!("{name} with command flags {:#x}; accepted {allowed:#x}", h.flags),
        ));
    }
    let fua = h.flags & CMD_FLAG_FUA != 0;
    match h.command {
        CMD_DISC => return Ok(Request::Disconnect),
        CMD_FLUSH => {
            if h.offset != 0 || h.length != 0 {
                return Err(Refusal::new(
                    EINVAL,
                    format!("FLUSH with offset {} length {} (both must be 0)", h.offset, h.length),
                ));
            }
            return Ok(Request::Flush);
        }
        _ => {}
    }
    let writes = matches!(h.command, CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES);
    if writes && limits.read_only {
        return Err(Refusal::new(EPERM, format!("{name} on a read-only export")));
    }
    let (offset, length) = (h.offset, h.length);
    let end = offset.checked_add(length as u64);
    if end.is_none_or(|end| end > limits.size_bytes) {
        let errno = if matches!(h.command, CMD_WRITE | CMD_WRITE_ZEROES) { ENOSPC } else { EINVAL };
        return Err(Refusal::new(
            errno,
            format!(
                "{name} at offset {offset} of {length} bytes ends past the export's {} bytes",
                limits.size_bytes
            ),
        ));
    }
    let min = limits.block_min_bytes as u64;
    if !offset.is_multiple_of(min) || !(length as u64).is_multiple_of(min) {
        return Err(Refusal::new(
            EINVAL,
            format!("{name} at offset {offset} of {length} bytes is not aligned to the {min}-byte minimum block size"),
        ));
    }
    if h.command == CMD_BLOCK_STATUS && length == 0 {
        return Err(Refusal::new(EINVAL, "BLOCK_STATUS of 0 bytes has no extent to describe"));
    }
    // TRIM, WRITE_ZEROES and BLOCK_STATUS carry no payload, so the maximum block size does not
    // bound them (doc/proto.md, "Block size constraints"; mkfs.xfs zeroes its 64 MiB log in one
    // request).
    if !matches!(h.command, CMD_TRIM | CMD_WRITE_ZEROES | CMD_BLOCK_STATUS) && length > limits.block_max_bytes
    {
        return Err(Refusal::new(
            EINVAL,
            format!(
                "{name} of {length} bytes exceeds the maximum block size of {} bytes",
                limits.block_max_bytes
            ),
        ));
    }
    Ok(match h.command {
        CMD_READ => Request::Read { offset, length },
        CMD_WRITE => Request::Write { offset, length, fua },
        CMD_TRIM => Request::Trim { offset, length, fua },
        CMD_CACHE => Request::Cache { offset, length },
        CMD_WRITE_ZEROES => {
            Request::WriteZeroes { offset, length, no_hole: h.flags & CMD_FLAG_NO_HOLE != 0, fua }
        }
        CMD_BLOCK_STATUS => Request::BlockStatus { offset, length, one: h.flags & CMD_FLAG_REQ_ONE != 0 },
        _ => unreachable!("request: command {} passed the type check", h.command),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        size_bytes: 1 << 20,
        block_min_bytes: 512,
        block_max_bytes: 64 << 10,
        read_only: false,
        structured_replies: false,
        block_status: false,
    };

    fn h(command: u16, flags: u16, offset: u64, length: u32) -> RequestHeader {
        RequestHeader { flags, command, handle: 7, offset, length }
    }

    fn errno(r: Result<Request, Refusal>) -> u32 {
        r.err().map_or(0, |e| e.errno)
    }

    #[test]
    fn header_round_trips_and_bad_magic_is_named() {
        let hdr = h(CMD_WRITE, CMD_FLAG_FUA, 4096, 512);
        assert_eq!(RequestHeader::parse(&hdr.encode()), Ok(hdr));
        let mut bytes = hdr.encode();
        bytes[0] = 0;
        assert_eq!(RequestHeader::parse(&bytes), Err(BadRequestMagic(0x00609513)));
        assert_eq!(hdr.payload_bytes(), 512);
        assert_eq!(h(CMD_READ, 0, 0, 512).payload_bytes(), 0);
    }

    #[test]
    fn valid_requests() {
        assert_eq!(
            validate(&h(CMD_READ, 0, 0, 4096), &LIMITS),
            Ok(Request::Read { offset: 0, length: 4096 })
        );
        assert_eq!(
            validate(&h(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 512, 512), &LIMITS),
            Ok(Request::WriteZeroes { offset: 512, length: 512, no_hole: true, fua: true })
        );
        // TRIM may cover the whole export, beyond the maximum block size.
        assert_eq!(
            validate(&h(CMD_TRIM, 0, 0, 1 << 20), &LIMITS),
            Ok(Request::Trim { offset: 0, length: 1 << 20, fua: false })
        );
        // Issue 13 item 13: WRITE_ZEROES beyond the maximum block size was EINVAL.
        assert_eq!(
            validate(&h(CMD_WRITE_ZEROES, 0, 0, 1 << 20), &LIMITS),
            Ok(Request::WriteZeroes { offset: 0, length: 1 << 20, no_hole: false, fua: false })
        );
        assert_eq!(validate(&h(CMD_FLUSH, 0, 0, 0), &LIMITS), Ok(Request::Flush));
        assert_eq!(validate(&h(CMD_DISC, 0, 0, 0), &LIMITS), Ok(Request::Disconnect));
        assert_eq!(
            validate(&h(CMD_READ, 0, 1 << 20, 0), &LIMITS),
            Ok(Request::Read { offset: 1 << 20, length: 0 })
        );
    }

    #[test]
    fn refusals_carry_the_protocol_errors() {
        assert_eq!(errno(validate(&h(99, 0, 0, 0), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_BLOCK_STATUS, 0, 0, 512), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_READ, CMD_FLAG_NO_HOLE, 0, 512), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_READ, CMD_FLAG_DF, 0, 512), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_WRITE_ZEROES, CMD_FLAG_FAST_ZERO, 0, 512), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_FLUSH, 0, 1, 0), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_READ, 0, 1 << 20, 512), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_WRITE, 0, 1 << 20, 512), &LIMITS)), ENOSPC);
        assert_eq!(errno(validate(&h(CMD_WRITE_ZEROES, 0, u64::MAX, 512), &LIMITS)), ENOSPC);
        assert_eq!(errno(validate(&h(CMD_TRIM, 0, u64::MAX - 10, 512), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_READ, 0, 100, 512), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_WRITE, 0, 0, 100), &LIMITS)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_READ, 0, 0, 128 << 10), &LIMITS)), EINVAL);
        let ro = Limits { read_only: true, ..LIMITS };
        assert_eq!(errno(validate(&h(CMD_TRIM, 0, 0, 512), &ro)), EPERM);
        let sr = Limits { structured_replies: true, ..LIMITS };
        assert_eq!(errno(validate(&h(CMD_READ, CMD_FLAG_DF, 0, 512), &sr)), 0);
        let bs = Limits { structured_replies: true, block_status: true, ..LIMITS };
        assert_eq!(
            validate(&h(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, 0, 1 << 20), &bs),
            Ok(Request::BlockStatus { offset: 0, length: 1 << 20, one: true })
        );
        assert_eq!(errno(validate(&h(CMD_BLOCK_STATUS, 0, 512, 1 << 20), &bs)), EINVAL);
        assert_eq!(errno(validate(&h(CMD_BLOCK_STATUS, 0, 0, 0), &bs)), EINVAL);
    }
}

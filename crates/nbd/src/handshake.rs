//! Fixed-newstyle option haggling as a pure state machine: the server feeds it the client's
//! flags and each option, and it answers with the bytes to send and what happens next. No I/O,
//! so the fuzz test and the unit tests drive it directly.
//!
//! Policy (doc/proto.md, "Option types"): NBD_OPT_EXPORT_NAME, NBD_OPT_GO, NBD_OPT_INFO,
//! NBD_OPT_LIST, NBD_OPT_ABORT, NBD_OPT_STRUCTURED_REPLY and NBD_OPT_LIST_META_CONTEXT /
//! NBD_OPT_SET_META_CONTEXT (one context, `base:allocation`) are served; every other option gets
//! NBD_REP_ERR_UNSUP (STARTTLS included: this server runs in NOTLS mode) and the haggling goes
//! on. A client that did not set NBD_FLAG_C_FIXED_NEWSTYLE may only send NBD_OPT_EXPORT_NAME.

use crate::wire::*;

/// What the server exports: one export, the simulated drive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportInfo {
    /// The export's canonical name. The empty name (the default export) also selects it.
    pub name: String,
    pub description: String,
    pub size_bytes: u64,
    /// Block size constraints (doc/proto.md, "Block size constraints").
    pub block_min_bytes: u32,
    pub block_preferred_bytes: u32,
    pub block_max_bytes: u32,
    pub read_only: bool,
}

impl ExportInfo {
    fn matches(&self, name: &str) -> bool {
        name.is_empty() || name == self.name
    }
}

/// The largest option payload read into memory. Our options need at most a name (4096 bytes)
/// plus a few info requests; a longer payload is drained and refused, up to
/// [`OPTION_DRAIN_MAX_BYTES`], beyond which the peer is dropped as a denial of service.
pub const OPTION_DATA_MAX_BYTES: u32 = 16 * 1024;
pub const OPTION_DRAIN_MAX_BYTES: u32 = 1 << 20;
/// Options one connection may send before it is dropped (each gets a reply; a client looping
/// on errors would otherwise hold a thread forever).
pub const OPTIONS_PER_CONNECTION_MAX: u32 = 256;

/// A client mistake that ends the session at once (the protocol leaves no way to answer it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("client flags {0:#x} set bits this server did not offer (accepted: FIXED_NEWSTYLE 0x1, NO_ZEROES 0x2)")]
    BadClientFlags(u32),
    #[error("option magic {0:#018x} is not IHAVEOPT (0x49484156454f5054)")]
    BadOptionMagic(u64),
}

/// How the server should treat an option's payload before handing it to [`Negotiation::handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadPolicy {
    Read,
    /// Too long to be valid: read and discard it, then send [`Negotiation::too_big`].
    DrainAndRefuse,
    /// Long enough to be an attack: hard disconnect.
    Disconnect,
}

/// What comes after an option's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Options,
    Transmission,
    Close,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionOutcome {
    /// Bytes to send (possibly none).
    pub reply: Vec<u8>,
    pub next: Next,
    /// A refusal worth logging.
    pub refused: Option<String>,
}

/// The server's side of option haggling for one connection.
pub struct Negotiation {
    export: ExportInfo,
    fixed_newstyle: bool,
    no_zeroes: bool,
    structured_replies: bool,
    /// `base:allocation` was selected by the last NBD_OPT_SET_META_CONTEXT.
    block_status: bool,
    options_seen: u32,
}

/// The server's first 18 bytes: NBDMAGIC, IHAVEOPT, handshake flags.
pub fn greeting() -> [u8; 18] {
    let mut g = [0u8; 18];
    g[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    g[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    g[16..18].copy_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    g
}

/// Splits an option header into (option, payload length).
pub fn parse_option_header(header: &[u8; OPTION_HEADER_BYTES]) -> Result<(u32, u32), HandshakeError> {
    let magic = u64::from_be_bytes(header[0..8].try_into().expect("8 bytes"));
    if magic != IHAVEOPT {
        return Err(HandshakeError::BadOptionMagic(magic));
    }
    let option = u32::from_be_bytes(header[8..12].try_into().expect("4 bytes"));
    let length = u32::from_be_bytes(header[12..16].try_into().expect("4 bytes"));
    Ok((option, length))
}

pub fn payload_policy(length: u32) -> PayloadPolicy {
    if length <= OPTION_DATA_MAX_BYTES {
        PayloadPolicy::Read
    } else if length <= OPTION_DRAIN_MAX_BYTES {
        PayloadPolicy::DrainAndRefuse
    } else {
        PayloadPolicy::Disconnect
    }
}

/// One option reply: magic, option, type, length, data.
pub fn option_reply(option: u32, reply_type: u32, data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply_type.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

fn string_is_valid(bytes: &[u8]) -> Option<&str> {
    if bytes.len() > STRING_BYTES_MAX || bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// Splits a LIST/SET_META_CONTEXT payload into the export name and the queries; `None` when
/// the lengths do not add up to the payload exactly.
fn parse_meta_payload(data: &[u8]) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    fn take<'a>(data: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
        let piece = data.get(*at..at.checked_add(n)?)?;
        *at += n;
        Some(piece)
    }
    fn length(data: &[u8], at: &mut usize) -> Option<usize> {
        take(data, at, 4).map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
    }
    let mut at = 0usize;
    let name_len = length(data, &mut at)?;
    let name = take(data, &mut at, name_len)?.to_vec();
    let count = length(data, &mut at)?;
    let mut queries = Vec::new();
    // Each query takes at least 4 bytes, which bounds the loop by the payload.
    for _ in 0..count.min(data.len() / 4) {
        let len = length(data, &mut at)?;
        queries.push(take(data, &mut at, len)?.to_vec());
    }
    (queries.len() == count && at == data.len()).then_some((name, queries))
}

impl Negotiation {
    /// Starts haggling once the client's 32-bit flags have arrived.
    pub fn new(export: ExportInfo, client_flags: u32) -> Result<Negotiation, HandshakeError> {
        if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
            return Err(HandshakeError::BadClientFlags(client_flags));
        }
        Ok(Negotiation {
            export,
            fixed_newstyle: client_flags & FLAG_C_FIXED_NEWSTYLE != 0,
            no_zeroes: client_flags & FLAG_C_NO_ZEROES != 0,
            structured_replies: false,
            block_status: false,
            options_seen: 0,
        })
    }

    pub fn export(&self) -> &ExportInfo {
        &self.export
    }

    pub fn structured_replies(&self) -> bool {
        self.structured_replies
    }

    /// Whether NBD_CMD_BLOCK_STATUS may be used (base:allocation negotiated).
    pub fn block_status(&self) -> bool {
        self.block_status
    }

    /// The transmission flags for this connection's negotiated state.
    pub fn transmission_flags(&self) -> u16 {
        let mut flags = FLAG_HAS_FLAGS
            | FLAG_SEND_FLUSH
            | FLAG_SEND_FUA
            | FLAG_SEND_TRIM
            | FLAG_SEND_WRITE_ZEROES
            | FLAG_SEND_CACHE
            | FLAG_CAN_MULTI_CONN;
        if self.export.read_only {
            flags |= FLAG_READ_ONLY;
        }
        if self.structured_replies {
            // We always answer a read with one data chunk, so "don't fragment" costs nothing.
            flags |= FLAG_SEND_DF;
        }
        flags
    }

    /// The reply to an option whose payload was too long to read ([`PayloadPolicy::DrainAndRefuse`]).
    pub fn too_big(&mut self, option: u32, length: u32) -> OptionOutcome {
        self.options_seen += 1;
        let mut reply = Vec::new();
        let message =
            format!("{} payload of {length} bytes exceeds {OPTION_DATA_MAX_BYTES}", option_name(option));
        // EXPORT_NAME has no error reply (the client would read the magic as the export size),
        // and a name this long cannot be valid: end the session.
        if !self.fixed_newstyle || option == OPT_EXPORT_NAME {
            return OptionOutcome { reply, next: Next::Close, refused: Some(message) };
        }
        option_reply(option, REP_ERR_TOO_BIG, message.as_bytes(), &mut reply);
        OptionOutcome { reply, next: self.after_error(), refused: Some(message) }
    }

    fn after_error(&self) -> Next {
        if self.options_seen >= OPTIONS_PER_CONNECTION_MAX {
            Next::Close
        } else {
            Next::Options
        }
    }

    fn error(&self, option: u32, reply_type: u32, message: String) -> OptionOutcome {
        let mut reply = Vec::new();
        option_reply(option, reply_type, message.as_bytes(), &mut reply);
        OptionOutcome {
            reply,
            next: self.after_error(),
            refused: Some(format!("{}: {message}", option_name(option))),
        }
    }

    /// Answers one option whose payload has been read in full.
    pub fn handle(&mut self, option: u32, data: &[u8]) -> OptionOutcome {
        self.options_seen += 1;
        if !self.fixed_newstyle && option != OPT_EXPORT_NAME {
            return OptionOutcome {
                reply: Vec::new(),
                next: Next::Close,
                refused: Some(format!(
                    "{} from a client without NBD_FLAG_C_FIXED_NEWSTYLE (only NBD_OPT_EXPORT_NAME is valid)",
                    option_name(option)
                )),
            };
        }
        if self.options_seen > OPTIONS_PER_CONNECTION_MAX {
            return OptionOutcome {
                reply: Vec::new(),
                next: Next::Close,
                refused: Some(format!("more than {OPTIONS_PER_CONNECTION_MAX} options")),
            };
        }
        match option {
            OPT_EXPORT_NAME => self.export_name(data),
            OPT_ABORT => {
                let mut reply = Vec::new();
                option_reply(option, REP_ACK, &[], &mut reply);
                OptionOutcome { reply, next: Next::Close, refused: None }
            }
            OPT_LIST => {
                if !data.is_empty() {
                    return self.error(option, REP_ERR_INVALID, "NBD_OPT_LIST takes no data".into());
                }
                let mut reply = Vec::new();
                let name = self.export.name.as_bytes();
                let mut entry = Vec::with_capacity(4 + name.len() + self.export.description.len());
                entry.extend_from_slice(&(name.len() as u32).to_be_bytes());
                entry.extend_from_slice(name);
                entry.extend_from_slice(self.export.description.as_bytes());
                option_reply(option, REP_SERVER, &entry, &mut reply);
                option_reply(option, REP_ACK, &[], &mut reply);
                OptionOutcome { reply, next: Next::Options, refused: None }
            }
            OPT_INFO | OPT_GO => self.info_or_go(option, data),
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => self.meta_context(option, data),
            OPT_STRUCTURED_REPLY => {
                if !data.is_empty() {
                    return self.error(
                        option,
                        REP_ERR_INVALID,
                        "NBD_OPT_STRUCTURED_REPLY takes no data".into(),
                    );
                }
                if self.structured_replies {
                    return self.error(
                        option,
                        REP_ERR_INVALID,
                        "structured replies already negotiated".into(),
                    );
                }
                self.structured_replies = true;
                let mut reply = Vec::new();
                option_reply(option, REP_ACK, &[], &mut reply);
                OptionOutcome { reply, next: Next::Options, refused: None }
            }
            _ => self.error(
                option,
                REP_ERR_UNSUP,
                format!("option {option} ({}) is not supported by trimlab", option_name(option)),
            ),
        }
    }

    fn export_name(&mut self, data: &[u8]) -> OptionOutcome {
        // This option cannot be answered with an error: a bad name ends the session.
        match string_is_valid(data) {
            Some(name) if self.export.matches(name) => {}
            Some(name) => {
                return OptionOutcome {
                    reply: Vec::new(),
                    next: Next::Close,
                    refused: Some(format!("NBD_OPT_EXPORT_NAME: no export named {name:?}")),
                }
            }
            None => {
                return OptionOutcome {
                    reply: Vec::new(),
                    next: Next::Close,
                    refused: Some("NBD_OPT_EXPORT_NAME: name is not a valid NBD string".into()),
                }
            }
        }
        let mut reply = Vec::with_capacity(134);
        reply.extend_from_slice(&self.export.size_bytes.to_be_bytes());
        reply.extend_from_slice(&self.transmission_flags().to_be_bytes());
        if !self.no_zeroes {
            reply.extend_from_slice(&[0u8; 124]);
        }
        OptionOutcome { reply, next: Next::Transmission, refused: None }
    }

    /// LIST or SET of metadata contexts. Data: export name (32-bit length + string), number of
    /// queries (32), queries (32-bit length + string each). Only `base:allocation` exists; the
    /// queries `base:` and `base:allocation` name it, and LIST with no query lists it.
    fn meta_context(&mut self, option: u32, data: &[u8]) -> OptionOutcome {
        let set = option == OPT_SET_META_CONTEXT;
        if set {
            // "Issuing this command replaces all previously-set metadata contexts (including
            // when this command fails)."
            self.block_status = false;
            if !self.structured_replies {
                return self.error(option, REP_ERR_INVALID, "negotiate structured replies first".into());
            }
        }
        let parsed = parse_meta_payload(data);
        let Some((name, queries)) = parsed else {
            return self.error(option, REP_ERR_INVALID, format!("malformed payload of {} bytes", data.len()));
        };
        let Some(name) = string_is_valid(&name) else {
            return self.error(option, REP_ERR_INVALID, "export name is not a valid NBD string".into());
        };
        if !self.export.matches(name) {
            return self.error(option, REP_ERR_UNKNOWN, format!("no export named {name:?}"));
        }
        let wanted = if queries.is_empty() {
            !set // LIST with no query lists everything; SET with none selects nothing
        } else {
            queries.iter().any(|q| q == b"base:" || q == META_BASE_ALLOCATION.as_bytes())
        };
        let mut reply = Vec::new();
        if wanted {
            let id = if set { META_BASE_ALLOCATION_ID } else { 0 };
            let mut entry = id.to_be_bytes().to_vec();
            entry.extend_from_slice(META_BASE_ALLOCATION.as_bytes());
            option_reply(option, REP_META_CONTEXT, &entry, &mut reply);
        }
        option_reply(option, REP_ACK, &[], &mut reply);
        self.block_status = set && wanted;
        OptionOutcome { reply, next: Next::Options, refused: None }
    }

    fn info_or_go(&mut self, option: u32, data: &[u8]) -> OptionOutcome {
        // Data: name length (32), name, number of requests (16), requests (16 each).
        if data.len() < 6 {
            return self.error(
                option,
                REP_ERR_INVALID,
                format!("payload of {} bytes is shorter than 6", data.len()),
            );
        }
        let name_len = u32::from_be_bytes(data[0..4].try_into().expect("4 bytes")) as usize;
        if name_len > data.len() - 6 {
            return self.error(
                option,
                REP_ERR_INVALID,
                format!("name length {name_len} exceeds the payload of {} bytes - 6", data.len()),
            );
        }
        let name_bytes = &data[4..4 + name_len];
        let rest = &data[4 + name_len..];
        let requests = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        if rest.len() != 2 + 2 * requests {
            return self.error(
                option,
                REP_ERR_INVALID,
                format!(
                    "{requests} information requests need {} bytes, got {}",
                    2 * requests,
                    rest.len() - 2
                ),
            );
        }
        let Some(name) = string_is_valid(name_bytes) else {
            return self.error(option, REP_ERR_INVALID, "export name is not a valid NBD string".into());
        };
        if !self.export.matches(name) {
            return self.error(
                option,
                REP_ERR_UNKNOWN,
                format!("no export named {name:?} (this server has {:?})", self.export.name),
            );
        }
        let wants = |t: u16| rest[2..].chunks_exact(2).any(|c| u16::from_be_bytes([c[0], c[1]]) == t);
        let mut reply = Vec::new();
        let mut info = Vec::with_capacity(14);
        info.extend_from_slice(&INFO_EXPORT.to_be_bytes());
        info.extend_from_slice(&self.export.size_bytes.to_be_bytes());
        info.extend_from_slice(&self.transmission_flags().to_be_bytes());
        option_reply(option, REP_INFO, &info, &mut reply);
        // Sent whether asked or not: our constraints (512-byte minimum) are not the default.
        info.clear();
        info.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        info.extend_from_slice(&self.export.block_min_bytes.to_be_bytes());
        info.extend_from_slice(&self.export.block_preferred_bytes.to_be_bytes());
        info.extend_from_slice(&self.export.block_max_bytes.to_be_bytes());
        option_reply(option, REP_INFO, &info, &mut reply);
        if wants(INFO_NAME) {
            info.clear();
            info.extend_from_slice(&INFO_NAME.to_be_bytes());
            info.extend_from_slice(self.export.name.as_bytes());
            option_reply(option, REP_INFO, &info, &mut reply);
        }
        if wants(INFO_DESCRIPTION) {
            info.clear();
            info.extend_from_slice(&INFO_DESCRIPTION.to_be_bytes());
            info.extend_from_slice(self.export.description.as_bytes());
            option_reply(option, REP_INFO, &info, &mut reply);
        }
        option_reply(option, REP_ACK, &[], &mut reply);
        let next = if option == OPT_GO { Next::Transmission } else { Next::Options };
        OptionOutcome { reply, next, refused: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn export() -> ExportInfo {
        ExportInfo {
            name: "trimlab".into(),
            description: "test".into(),
            size_bytes: 1 << 30,
            block_min_bytes: 512,
            block_preferred_bytes: 4096,
            block_max_bytes: 32 << 20,
            read_only: false,
        }
    }

    fn go_payload(name: &str, requests: &[u16]) -> Vec<u8> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(requests.len() as u16).to_be_bytes());
        for r in requests {
            d.extend_from_slice(&r.to_be_bytes());
        }
        d
    }

    /// Splits option replies into (option, type, data).
    fn replies(mut bytes: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            assert_eq!(u64::from_be_bytes(bytes[0..8].try_into().unwrap()), REPLY_MAGIC);
            let opt = u32::from_be_bytes(bytes[8..12].try_into().unwrap());
            let ty = u32::from_be_bytes(bytes[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(bytes[16..20].try_into().unwrap()) as usize;
            out.push((opt, ty, bytes[20..20 + len].to_vec()));
            bytes = &bytes[20 + len..];
        }
        out
    }

    #[test]
    fn greeting_is_nbdmagic_ihaveopt_fixed_newstyle() {
        let g = greeting();
        assert_eq!(&g[0..8], b"NBDMAGIC");
        assert_eq!(&g[8..16], b"IHAVEOPT");
        assert_eq!(u16::from_be_bytes([g[16], g[17]]), 3);
    }

    #[test]
    fn unknown_client_flags_end_the_session() {
        assert_eq!(Negotiation::new(export(), 4).err(), Some(HandshakeError::BadClientFlags(4)));
        assert!(Negotiation::new(export(), 3).is_ok());
    }

    #[test]
    fn go_sends_export_and_block_size_then_ack() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        let out = n.handle(OPT_GO, &go_payload("", &[INFO_BLOCK_SIZE, INFO_NAME]));
        assert_eq!(out.next, Next::Transmission);
        let r = replies(&out.reply);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].1, REP_INFO);
        assert_eq!(u16::from_be_bytes([r[0].2[0], r[0].2[1]]), INFO_EXPORT);
        assert_eq!(u64::from_be_bytes(r[0].2[2..10].try_into().unwrap()), 1 << 30);
        let flags = u16::from_be_bytes([r[0].2[10], r[0].2[11]]);
        assert_eq!(flags & FLAG_SEND_TRIM, FLAG_SEND_TRIM);
        assert_eq!(flags & FLAG_SEND_DF, 0, "DF needs structured replies");
        assert_eq!(r[1].2.len(), 14);
        assert_eq!(&r[2].2[2..], b"trimlab");
        assert_eq!(r[3].1, REP_ACK);
    }

    #[test]
    fn info_stays_in_haggling_and_unknown_export_is_refused() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        assert_eq!(n.handle(OPT_INFO, &go_payload("trimlab", &[])).next, Next::Options);
        let out = n.handle(OPT_GO, &go_payload("other", &[]));
        assert_eq!(out.next, Next::Options);
        assert_eq!(replies(&out.reply)[0].1, REP_ERR_UNKNOWN);
    }

    #[test]
    fn malformed_go_payloads_are_invalid() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        for bad in [
            vec![0u8; 5],
            {
                let mut d = go_payload("", &[1]);
                d.pop();
                d
            },
            {
                let mut d = go_payload("", &[]);
                d[3] = 9;
                d
            },
        ] {
            let out = n.handle(OPT_GO, &bad);
            assert_eq!(out.next, Next::Options);
            assert_eq!(replies(&out.reply)[0].1, REP_ERR_INVALID, "{bad:?}");
        }
    }

    #[test]
    fn unknown_options_and_starttls_are_unsupported() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        for opt in [OPT_STARTTLS, 4, 11, 0xdead_beef] {
            let out = n.handle(opt, b"xyz");
            assert_eq!(out.next, Next::Options);
            assert_eq!(replies(&out.reply)[0].1, REP_ERR_UNSUP);
        }
    }

    #[test]
    fn structured_reply_adds_df_and_cannot_repeat() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        assert_eq!(replies(&n.handle(OPT_STRUCTURED_REPLY, &[]).reply)[0].1, REP_ACK);
        assert!(n.structured_replies());
        assert_ne!(n.transmission_flags() & FLAG_SEND_DF, 0);
        assert_eq!(replies(&n.handle(OPT_STRUCTURED_REPLY, &[]).reply)[0].1, REP_ERR_INVALID);
    }

    #[test]
    fn list_names_the_export() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        let r = replies(&n.handle(OPT_LIST, &[]).reply);
        assert_eq!(r[0].1, REP_SERVER);
        assert_eq!(&r[0].2[4..11], b"trimlab");
        assert_eq!(r[1].1, REP_ACK);
        assert_eq!(replies(&n.handle(OPT_LIST, &[1]).reply)[0].1, REP_ERR_INVALID);
    }

    #[test]
    fn export_name_honours_no_zeroes() {
        let mut n = Negotiation::new(export(), 3).unwrap();
        let out = n.handle(OPT_EXPORT_NAME, b"trimlab");
        assert_eq!((out.next, out.reply.len()), (Next::Transmission, 10));
        let mut n = Negotiation::new(export(), 1).unwrap();
        assert_eq!(n.handle(OPT_EXPORT_NAME, b"").reply.len(), 134);
        let mut n = Negotiation::new(export(), 1).unwrap();
        assert_eq!(n.handle(OPT_EXPORT_NAME, b"nope").next, Next::Close);
    }

    #[test]
    fn an_oversized_export_name_disconnects_without_a_reply() {
        // Issue 13 item 5: a 100,000-byte name got NBD_REP_ERR_TOO_BIG, which EXPORT_NAME's
        // client reads as the export size.
        let mut n = Negotiation::new(export(), 1).unwrap();
        assert_eq!(payload_policy(100_000), PayloadPolicy::DrainAndRefuse);
        let out = n.too_big(OPT_EXPORT_NAME, 100_000);
        assert_eq!((out.next, out.reply.len()), (Next::Close, 0));
        let out = n.too_big(OPT_GO, 100_000);
        assert_eq!((out.next, replies(&out.reply)[0].1), (Next::Options, REP_ERR_TOO_BIG));
    }

    fn meta_payload(name: &str, queries: &[&str]) -> Vec<u8> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
        for q in queries {
            d.extend_from_slice(&(q.len() as u32).to_be_bytes());
            d.extend_from_slice(q.as_bytes());
        }
        d
    }

    #[test]
    fn base_allocation_is_listed_and_set_after_structured_replies() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        let r = replies(&n.handle(OPT_LIST_META_CONTEXT, &meta_payload("", &[])).reply);
        assert_eq!((r[0].1, &r[0].2[4..]), (REP_META_CONTEXT, &b"base:allocation"[..]));
        assert_eq!(r[1].1, REP_ACK);
        let r = replies(&n.handle(OPT_SET_META_CONTEXT, &meta_payload("", &["base:allocation"])).reply);
        assert_eq!(r[0].1, REP_ERR_INVALID, "structured replies come first");
        n.handle(OPT_STRUCTURED_REPLY, &[]);
        let r = replies(&n.handle(OPT_SET_META_CONTEXT, &meta_payload("trimlab", &["x:y", "base:"])).reply);
        assert_eq!((r[0].1, u32::from_be_bytes(r[0].2[0..4].try_into().unwrap())), (REP_META_CONTEXT, 1));
        assert!(n.block_status());
        let r = replies(&n.handle(OPT_SET_META_CONTEXT, &meta_payload("", &["qemu:dirty-bitmap:x"])).reply);
        assert_eq!((r.len(), r[0].1), (1, REP_ACK));
        assert!(!n.block_status(), "a SET that selects nothing clears the selection");
        assert_eq!(replies(&n.handle(OPT_SET_META_CONTEXT, &[0, 0, 0, 9]).reply)[0].1, REP_ERR_INVALID);
        let r = replies(&n.handle(OPT_SET_META_CONTEXT, &meta_payload("nope", &["base:"])).reply);
        assert_eq!(r[0].1, REP_ERR_UNKNOWN);
    }

    #[test]
    fn non_fixed_client_may_only_send_export_name() {
        let mut n = Negotiation::new(export(), 0).unwrap();
        assert_eq!(n.handle(OPT_LIST, &[]).next, Next::Close);
    }

    #[test]
    fn abort_is_acked_and_closes() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        let out = n.handle(OPT_ABORT, b"ignored");
        assert_eq!(out.next, Next::Close);
        assert_eq!(replies(&out.reply)[0].1, REP_ACK);
    }

    #[test]
    fn option_flood_is_cut_off() {
        let mut n = Negotiation::new(export(), 1).unwrap();
        let mut last = Next::Options;
        for _ in 0..OPTIONS_PER_CONNECTION_MAX + 1 {
            last = n.handle(99, &[]).next;
        }
        assert_eq!(last, Next::Close);
    }

    #[test]
    fn payload_policy_bounds() {
        assert_eq!(payload_policy(0), PayloadPolicy::Read);
        assert_eq!(payload_policy(OPTION_DATA_MAX_BYTES + 1), PayloadPolicy::DrainAndRefuse);
        assert_eq!(payload_policy(u32::MAX), PayloadPolicy::Disconnect);
    }
}

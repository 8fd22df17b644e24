//! A minimal NBD client and a small test server, shared by the socket and fuzz tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};
use trimlab_nbd::server::Clock;
use trimlab_nbd::wire::*;
use trimlab_nbd::{Pace, Server, ServerConfig, SparseStore};
use trimlab_sim::ByteSize;

pub const EXPORT_BYTES: u64 = 64 << 20;

pub fn device() -> SsdConfig {
    let device = DeviceSection {
        logical_bytes: Some(ByteSize(EXPORT_BYTES)),
        channels: Some(2),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        pages_per_block: Some(64),
        ..Default::default()
    };
    SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default())
        .expect("test device resolves")
}

pub fn server(block_max_bytes: u32, clock: Clock, connections_max: usize) -> Server {
    server_paced(block_max_bytes, clock, connections_max, Pace::None)
}

pub fn server_paced(block_max_bytes: u32, clock: Clock, connections_max: usize, pace: Pace) -> Server {
    server_with(block_max_bytes, clock, connections_max, pace, |c| c)
}

/// The test server with a memory limit and any config change.
pub fn server_with(
    block_max_bytes: u32,
    clock: Clock,
    connections_max: usize,
    pace: Pace,
    change: impl FnOnce(ServerConfig) -> ServerConfig,
) -> Server {
    server_with_memory(block_max_bytes, clock, connections_max, pace, u64::MAX, change)
}

pub fn server_with_memory(
    block_max_bytes: u32,
    clock: Clock,
    connections_max: usize,
    pace: Pace,
    memory_max: u64,
    change: impl FnOnce(ServerConfig) -> ServerConfig,
) -> Server {
    let device = device();
    let store = Box::new(
        SparseStore::new(device.logical_bytes(), device.geometry.page_bytes as u64, memory_max).unwrap(),
    );
    Server::new(
        device,
        store,
        change(ServerConfig {
            export_name: "trimlab".into(),
            description: "test".into(),
            block_max_bytes,
            pace,
            clock,
            connections_max,
            handshake_timeout: std::time::Duration::from_millis(500),
            handshakes_per_address_max: trimlab_nbd::server::HANDSHAKES_PER_ADDRESS_DEFAULT,
            io_timeout: trimlab_nbd::server::IO_TIMEOUT_DEFAULT,
            stall_timeout: trimlab_nbd::server::STALL_TIMEOUT_DEFAULT,
            log: std::env::var_os("TRIMLAB_NBD_LOG").is_some(),
            record: None,
            timeseries_interval_ns: None,
            read_only: false,
            inflight_per_connection_bytes: trimlab_nbd::server::INFLIGHT_PER_CONNECTION_DEFAULT,
            inflight_total_bytes: trimlab_nbd::server::INFLIGHT_TOTAL_DEFAULT,
            power_loss: false,
            power_cut_after: None,
            inject_panic_after: None,
        }),
    )
    .expect("server starts")
}

/// One option reply: (option, type, data).
pub type OptReply = (u32, u32, Vec<u8>);

pub struct Client<S: Read + Write> {
    pub s: S,
    pub structured: bool,
    next_handle: u64,
}

pub fn go_payload(name: &str, requests: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(requests.len() as u16).to_be_bytes());
    for r in requests {
        d.extend_from_slice(&r.to_be_bytes());
    }
    d
}

pub fn option_bytes(option: u32, data: &[u8]) -> Vec<u8> {
    let mut b = IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    b
}

pub fn request_bytes(command: u16, flags: u16, handle: u64, offset: u64, length: u32) -> Vec<u8> {
    trimlab_nbd::RequestHeader { flags, command, handle, offset, length }.encode().to_vec()
}

impl<S: Read + Write> Client<S> {
    /// Reads the greeting and sends the client flags.
    pub fn start(mut s: S, client_flags: u32) -> std::io::Result<Client<S>> {
        let mut g = [0u8; 18];
        s.read_exact(&mut g)?;
        assert_eq!(&g[0..16], b"NBDMAGICIHAVEOPT");
        s.write_all(&client_flags.to_be_bytes())?;
        Ok(Client { s, structured: false, next_handle: 1 })
    }

    /// Sends an option and reads replies up to the final one.
    pub fn option(&mut self, option: u32, data: &[u8]) -> std::io::Result<Vec<OptReply>> {
        self.s.write_all(&option_bytes(option, data))?;
        let mut out = Vec::new();
        loop {
            let mut h = [0u8; 20];
            self.s.read_exact(&mut h)?;
            assert_eq!(u64::from_be_bytes(h[0..8].try_into().unwrap()), REPLY_MAGIC);
            let ty = u32::from_be_bytes(h[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
            let mut d = vec![0u8; len];
            self.s.read_exact(&mut d)?;
            let opt = u32::from_be_bytes(h[8..12].try_into().unwrap());
            assert_eq!(opt, option, "reply to the option sent");
            let last = ty == REP_ACK || ty & (1 << 31) != 0;
            out.push((opt, ty, d));
            if last {
                return Ok(out);
            }
        }
    }

    /// NBD_OPT_GO on the default export; returns (size, transmission flags).
    pub fn go(&mut self) -> std::io::Result<(u64, u16)> {
        let replies = self.option(OPT_GO, &go_payload("", &[INFO_BLOCK_SIZE]))?;
        assert_eq!(replies.last().unwrap().1, REP_ACK, "{replies:?}");
        let export =
            replies.iter().find(|r| r.1 == REP_INFO && r.2[0..2] == [0, 0]).expect("NBD_INFO_EXPORT");
        Ok((
            u64::from_be_bytes(export.2[2..10].try_into().unwrap()),
            u16::from_be_bytes([export.2[10], export.2[11]]),
        ))
    }

    /// Sends one request and reads its reply: (error, read data).
    pub fn request(
        &mut self,
        command: u16,
        flags: u16,
        offset: u64,
        length: u32,
        data: &[u8],
    ) -> std::io::Result<(u32, Vec<u8>)> {
        let handle = self.next_handle;
        self.next_handle += 1;
        let mut b = request_bytes(command, flags, handle, offset, length);
        b.extend_from_slice(data);
        self.s.write_all(&b)?;
        self.reply(handle, command == CMD_READ, length)
    }

    pub fn reply(&mut self, handle: u64, is_read: bool, length: u32) -> std::io::Result<(u32, Vec<u8>)> {
        let mut magic = [0u8; 4];
        self.s.read_exact(&mut magic)?;
        match u32::from_be_bytes(magic) {
            SIMPLE_REPLY_MAGIC => {
                let mut h = [0u8; 12];
                self.s.read_exact(&mut h)?;
                let errno = u32::from_be_bytes(h[0..4].try_into().unwrap());
                assert_eq!(u64::from_be_bytes(h[4..12].try_into().unwrap()), handle);
                let mut data = Vec::new();
                if is_read && errno == 0 {
                    data.resize(length as usize, 0);
                    self.s.read_exact(&mut data)?;
                }
                Ok((errno, data))
            }
            STRUCTURED_REPLY_MAGIC => {
                let mut h = [0u8; 16];
                self.s.read_exact(&mut h)?;
                let flags = u16::from_be_bytes([h[0], h[1]]);
                let ty = u16::from_be_bytes([h[2], h[3]]);
                assert_eq!(u64::from_be_bytes(h[4..12].try_into().unwrap()), handle);
                assert_ne!(flags & REPLY_FLAG_DONE, 0, "trimlab sends one chunk per reply");
                let len = u32::from_be_bytes(h[12..16].try_into().unwrap()) as usize;
                let mut payload = vec![0u8; len];
                self.s.read_exact(&mut payload)?;
                match ty {
                    REPLY_TYPE_OFFSET_DATA => Ok((0, payload[8..].to_vec())),
                    REPLY_TYPE_NONE => Ok((0, Vec::new())),
                    REPLY_TYPE_ERROR => {
                        Ok((u32::from_be_bytes(payload[0..4].try_into().unwrap()), Vec::new()))
                    }
                    other => panic!("unexpected chunk type {other}"),
                }
            }
            other => panic!("bad reply magic {other:#x}"),
        }
    }
}

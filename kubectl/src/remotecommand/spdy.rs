//! A SPDY/3.1 client session, as much of it as upstream's streaming protocols use: streams
//! opened by us with a header block, data frames both ways, half-close with FIN, pings echoed.
//!
//! Why SPDY and not WebSocket: the container runtime behind our kubelet (containerd 1.6) knows
//! only the `v4.channel.k8s.io` WebSocket protocol, which cannot half-close stdin, so `exec -i`
//! fed from a pipe would never see EOF; SPDY streams can. Upstream's kubectl falls back to the
//! same SPDY path when the WebSocket upgrade is refused.
//!
//! Header blocks are zlib streams primed with SPDY's dictionary; we write ours as stored
//! (uncompressed) deflate blocks with no dictionary flag, which every zlib reader accepts, and
//! never decode the server's (we open every stream, so its replies tell us nothing we need).

use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

const VERSION: u16 = 3;
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const FLAG_FIN: u8 = 0x01;
/// RST_STREAM status CANCEL.
const CANCEL: u32 = 5;
/// Largest payload we put in one data frame (the field allows 16 MiB; peers buffer less).
const MAX_DATA: usize = 32 * 1024;

/// One parsed frame from the peer.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Data {
        stream: u32,
        fin: bool,
        data: Bytes,
    },
    Control {
        kind: u16,
        flags: u8,
        payload: Bytes,
    },
}

/// Encodes a name/value header block (names lowercased, as SPDY requires) as zlib stored blocks;
/// `first` adds the zlib stream header, which only the session's first block carries.
pub fn header_block(headers: &[(&str, &str)], first: bool) -> Vec<u8> {
    let mut raw = Vec::new();
    raw.extend_from_slice(&(headers.len() as u32).to_be_bytes());
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        raw.extend_from_slice(&(name.len() as u32).to_be_bytes());
        raw.extend_from_slice(name.as_bytes());
        raw.extend_from_slice(&(value.len() as u32).to_be_bytes());
        raw.extend_from_slice(value.as_bytes());
    }
    let mut out = Vec::with_capacity(raw.len() + 16);
    if first {
        // CMF 0x78 (deflate, 32 KiB window), FLG 0x01: no preset dictionary, check bits valid.
        out.extend_from_slice(&[0x78, 0x01]);
    }
    for chunk in raw.chunks(u16::MAX as usize) {
        let len = chunk.len() as u16;
        // A non-final stored block: BFINAL=0, BTYPE=00, then byte-aligned LEN and NLEN.
        out.push(0);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    // An empty stored block, as a zlib sync flush ends: Go's inflater hands out what it has
    // only when it reaches one, and would otherwise read past the frame for the next block.
    out.extend_from_slice(&[0, 0, 0, 0xff, 0xff]);
    out
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.push(flags);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(payload);
    out
}

/// A SYN_STREAM frame opening `stream` with an already encoded header block.
pub fn syn_stream(stream: u32, block: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(10 + block.len());
    payload.extend_from_slice(&stream.to_be_bytes());
    payload.extend_from_slice(&0u32.to_be_bytes());
    payload.extend_from_slice(&[0, 0]);
    payload.extend_from_slice(block);
    control(SYN_STREAM, 0, &payload)
}

/// A data frame.
pub fn data(stream: u32, fin: bool, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + bytes.len());
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.push(if fin { FLAG_FIN } else { 0 });
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(bytes);
    out
}

fn rst_stream(stream: u32) -> Vec<u8> {
    let mut payload = stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&CANCEL.to_be_bytes());
    control(RST_STREAM, 0, &payload)
}

/// Reads one frame; `Ok(None)` at a clean end of the connection.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Option<Frame>> {
    let mut head = [0u8; 8];
    match r.read_exact(&mut head[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut head[1..]).await?;
    let flags = head[4];
    let len = u32::from_be_bytes([0, head[5], head[6], head[7]]) as usize;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await?;
    let payload = Bytes::from(payload);
    if head[0] & 0x80 != 0 {
        let kind = u16::from_be_bytes([head[2], head[3]]);
        Ok(Some(Frame::Control {
            kind,
            flags,
            payload,
        }))
    } else {
        let stream = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) & 0x7fff_ffff;
        Ok(Some(Frame::Data {
            stream,
            fin: flags & FLAG_FIN != 0,
            data: payload,
        }))
    }
}

fn stream_id(payload: &[u8]) -> Option<u32> {
    let b: [u8; 4] = payload.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(b) & 0x7fff_ffff)
}

type Inbox = mpsc::UnboundedSender<Bytes>;

struct Shared {
    out: mpsc::UnboundedSender<Vec<u8>>,
    inboxes: Mutex<HashMap<u32, Inbox>>,
    /// Serialises header encoding with queueing, so the block carrying the zlib header is the
    /// first one on the wire.
    opened: Mutex<bool>,
    next_id: AtomicU32,
}

/// A client session over an upgraded connection.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    closed: tokio_util::sync::CancellationToken,
}

impl Session {
    /// Starts reading and writing frames on `io`.
    pub fn start<T>(io: T) -> Session
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut rd, mut wr) = tokio::io::split(io);
        let (out, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
        let shared = Arc::new(Shared {
            out,
            inboxes: Mutex::new(HashMap::new()),
            opened: Mutex::new(false),
            next_id: AtomicU32::new(1),
        });
        let closed = tokio_util::sync::CancellationToken::new();
        tokio::spawn(async move {
            while let Some(frame) = queue.recv().await {
                if wr.write_all(&frame).await.is_err() || wr.flush().await.is_err() {
                    break;
                }
            }
        });
        let reader = shared.clone();
        let done = closed.clone();
        tokio::spawn(async move {
            while let Ok(Some(frame)) = read_frame(&mut rd).await {
                if !reader.dispatch(frame) {
                    break;
                }
            }
            reader
                .inboxes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            done.cancel();
        });
        Session { shared, closed }
    }

    /// Opens a stream with `headers`; returns its id and what the peer sends on it (the
    /// receiver ends at the peer's FIN, a reset, or the end of the session).
    pub fn open(&self, headers: &[(&str, &str)]) -> (u32, mpsc::UnboundedReceiver<Bytes>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut opened = self.shared.opened.lock().unwrap_or_else(|e| e.into_inner());
        let id = self.shared.next_id.fetch_add(2, Ordering::SeqCst);
        if !self.closed.is_cancelled() {
            self.shared
                .inboxes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, tx);
        }
        let block = header_block(headers, !*opened);
        *opened = true;
        let _ = self.shared.out.send(syn_stream(id, &block));
        (id, rx)
    }

    /// Sends `bytes` on `stream`.
    pub fn write(&self, stream: u32, bytes: &[u8]) -> bool {
        bytes
            .chunks(MAX_DATA)
            .all(|c| self.shared.out.send(data(stream, false, c)).is_ok())
    }

    /// Half-closes our side of `stream`.
    pub fn close(&self, stream: u32) {
        let _ = self.shared.out.send(data(stream, true, &[]));
    }

    /// Abandons `stream` both ways.
    pub fn reset(&self, stream: u32) {
        self.shared
            .inboxes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&stream);
        let _ = self.shared.out.send(rst_stream(stream));
    }

    /// Resolves when the peer has closed the connection.
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }
}

impl Shared {
    /// Routes one frame; false when the session is over.
    fn dispatch(&self, frame: Frame) -> bool {
        let mut inboxes = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        match frame {
            Frame::Data { stream, fin, data } => {
                if !data.is_empty()
                    && let Some(tx) = inboxes.get(&stream)
                {
                    let _ = tx.send(data);
                }
                if fin {
                    inboxes.remove(&stream);
                }
            }
            Frame::Control {
                kind,
                flags,
                payload,
            } => match kind {
                SYN_REPLY | HEADERS if flags & FLAG_FIN != 0 => {
                    if let Some(id) = stream_id(&payload) {
                        inboxes.remove(&id);
                    }
                }
                RST_STREAM => {
                    if let Some(id) = stream_id(&payload) {
                        inboxes.remove(&id);
                    }
                }
                PING => {
                    let _ = self.out.send(control(PING, 0, &payload));
                }
                GOAWAY => return false,
                _ => {}
            },
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_blocks_are_stored_zlib_blocks() {
        let block = header_block(&[("streamType", "error")], true);
        let raw: &[u8] = &[
            0, 0, 0, 1, 0, 0, 0, 10, b's', b't', b'r', b'e', b'a', b'm', b't', b'y', b'p', b'e', 0,
            0, 0, 5, b'e', b'r', b'r', b'o', b'r',
        ];
        assert_eq!(&block[..2], &[0x78, 0x01]);
        assert_eq!((0x78u32 * 256 + 0x01) % 31, 0, "zlib header check bits");
        assert_eq!(block[2], 0);
        let len = u16::from_le_bytes([block[3], block[4]]);
        assert_eq!(len as usize, raw.len());
        assert_eq!(u16::from_le_bytes([block[5], block[6]]), !len);
        assert_eq!(&block[7..7 + raw.len()], raw);
        assert_eq!(
            &block[7 + raw.len()..],
            &[0, 0, 0, 0xff, 0xff],
            "the sync flush"
        );
        let later = header_block(&[("a", "b")], false);
        assert_eq!(
            later[0], 0,
            "later blocks continue the stream without a zlib header"
        );
    }

    #[tokio::test]
    async fn frames_round_trip() {
        let cases: Vec<(Vec<u8>, Frame)> = vec![
            (
                data(3, true, b"hi"),
                Frame::Data {
                    stream: 3,
                    fin: true,
                    data: Bytes::from_static(b"hi"),
                },
            ),
            (
                data(5, false, b""),
                Frame::Data {
                    stream: 5,
                    fin: false,
                    data: Bytes::new(),
                },
            ),
            (
                rst_stream(7),
                Frame::Control {
                    kind: RST_STREAM,
                    flags: 0,
                    payload: Bytes::from_static(&[0, 0, 0, 7, 0, 0, 0, 5]),
                },
            ),
        ];
        for (bytes, want) in cases {
            let mut r = &bytes[..];
            assert_eq!(read_frame(&mut r).await.unwrap(), Some(want));
            assert_eq!(read_frame(&mut r).await.unwrap(), None);
        }
        let syn = syn_stream(1, b"xyz");
        assert_eq!(&syn[..4], &[0x80, 0x03, 0x00, 0x01]);
        assert_eq!(u32::from_be_bytes([0, syn[5], syn[6], syn[7]]), 13);
    }

    #[tokio::test]
    async fn session_routes_data_and_echoes_pings() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let session = Session::start(ours);
        let (id, mut rx) = session.open(&[("streamType", "stdout")]);
        assert_eq!(id, 1);
        let (mut peer_rd, mut peer_wr) = tokio::io::split(theirs);
        let Some(Frame::Control { kind, .. }) = read_frame(&mut peer_rd).await.unwrap() else {
            panic!("expected SYN_STREAM");
        };
        assert_eq!(kind, SYN_STREAM);
        peer_wr
            .write_all(&control(PING, 0, &[0, 0, 0, 9]))
            .await
            .unwrap();
        peer_wr.write_all(&data(1, false, b"out")).await.unwrap();
        peer_wr.write_all(&data(1, true, b"")).await.unwrap();
        assert_eq!(rx.recv().await.unwrap(), Bytes::from_static(b"out"));
        assert_eq!(rx.recv().await, None);
        let echoed = read_frame(&mut peer_rd).await.unwrap().unwrap();
        assert_eq!(
            echoed,
            Frame::Control {
                kind: PING,
                flags: 0,
                payload: Bytes::from_static(&[0, 0, 0, 9])
            }
        );
        drop(peer_wr);
        drop(peer_rd);
        session.closed().await;
    }
}

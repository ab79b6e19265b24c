//! Reads each HTTP/1 request head before hyper does, so that requests hyper would refuse with a
//! bare, empty 400/414/431 get OpenSearch's answer instead.
//!
//! hyper parses the request line and the headers itself, before axum sees anything, and has no
//! hook for the body of its rejection. [`GuardedIo`] sits between the socket and hyper:
//! - bytes of a request target that `http::Uri` refuses but OpenSearch takes as they are (`>`,
//!   `<`, `"`, `\`, `^`, `` ` ``, `{`, `|`, `}`, control characters, non-ASCII) are
//!   percent-encoded, so `?q=price:>10` reaches the handler as OpenSearch would read it (the
//!   REST layer decodes them back);
//! - a head OpenSearch rejects (a request line over 4096 bytes, headers over 8192 bytes, a header
//!   line without a colon, an unparsable Content-Length, a malformed request line, an unknown
//!   HTTP version), and one that hyper's stricter parser would refuse (a target that is not a
//!   path, a header name that is not a token, a control character in a header value, two
//!   different Content-Lengths, a Transfer-Encoding not ending in chunked or in HTTP/1.0) is
//!   replaced by a small synthetic request carrying the error in the private
//!   header [`REJECTION_HEADER`]; `server` renders it as OpenSearch's error body, and the
//!   connection ends after that answer, as OpenSearch closes it.
//!
//! A chunked Transfer-Encoding wins over a Content-Length, which is dropped (RFC 9112).
//! Bodies pass through unchanged, delimited by Content-Length, read straight into hyper's buffer. A chunked body
//! (`Transfer-Encoding`) is not parsed here: after one, the connection is passed to hyper
//! untouched, so a later malformed request on that same connection still gets hyper's empty
//! answer. A client that sends the private header itself only gets an error for its own request.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The header the synthetic request carries: `<status> <type> <percent-encoded reason>`.
pub const REJECTION_HEADER: &str = "x-tessera-http-rejection";

/// `http.max_initial_line_length` (OpenSearch's default).
const MAX_INITIAL_LINE: usize = 4096;
/// `http.max_header_size` (OpenSearch's default).
const MAX_HEADER_SIZE: usize = 8192;
/// A head is never longer than this: the line and the headers, with their line ends.
const MAX_HEAD: usize = MAX_INITIAL_LINE + MAX_HEADER_SIZE + 1024;
const READ_CHUNK: usize = 16 * 1024;

/// Why a head was refused: OpenSearch's status, exception type and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub status: u16,
    pub kind: &'static str,
    pub reason: String,
}

impl Rejection {
    fn illegal(reason: impl Into<String>) -> Self {
        Rejection {
            status: 400,
            kind: "illegal_argument_exception",
            reason: reason.into(),
        }
    }

    /// The value of [`REJECTION_HEADER`].
    fn header_value(&self) -> String {
        let mut out = format!("{} {} ", self.status, self.kind);
        for &b in self.reason.as_bytes() {
            if b.is_ascii_alphanumeric() || b"-_.:[]()".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }

    /// Reads a [`REJECTION_HEADER`] value back.
    pub fn from_header(value: &str) -> Option<Rejection> {
        let mut parts = value.splitn(3, ' ');
        let status = parts.next()?.parse().ok()?;
        let kind = match parts.next()? {
            "too_long_http_line_exception" => "too_long_http_line_exception",
            "too_long_http_header_exception" => "too_long_http_header_exception",
            _ => "illegal_argument_exception",
        };
        let reason = crate::request::decode_path_segment(parts.next().unwrap_or(""));
        Some(Rejection {
            status,
            kind,
            reason,
        })
    }
}

/// What follows a head on the connection.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Another head after this many body bytes.
    Body(u64),
    /// A chunked body: hand the rest of the connection to hyper untouched.
    Passthrough,
}

/// Checks and rewrites one complete head (`head` ends with its empty line).
fn rewrite_head(head: &[u8]) -> Result<(Vec<u8>, Next), Rejection> {
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = trim_cr(&head[..line_end]);
    if line.len() > MAX_INITIAL_LINE {
        return Err(Rejection {
            status: 400,
            kind: "too_long_http_line_exception",
            reason: format!("An HTTP line is larger than {MAX_INITIAL_LINE} bytes."),
        });
    }
    let headers = &head[(line_end + 1).min(head.len())..];
    if headers.len() > MAX_HEADER_SIZE {
        return Err(Rejection {
            status: 400,
            kind: "too_long_http_header_exception",
            reason: format!("HTTP header is larger than {MAX_HEADER_SIZE} bytes."),
        });
    }
    // as Netty reads it: the method up to the first space, the version after the last one,
    // the target in between (spaces and all)
    let text = trim_spaces(line);
    let (Some(first), Some(last)) = (
        text.iter().position(|&b| b == b' '),
        text.iter().rposition(|&b| b == b' '),
    ) else {
        return Err(Rejection::illegal("text is empty (possibly HTTP/0.9)"));
    };
    if first == last {
        return Err(Rejection::illegal("text is empty (possibly HTTP/0.9)"));
    }
    let (method, target, version) = (
        &text[..first],
        trim_spaces(&text[first..last]),
        &text[last + 1..],
    );
    if !method.iter().all(|&b| is_token(b)) {
        return Err(Rejection::illegal(format!(
            "invalid character in HTTP method [{}]",
            String::from_utf8_lossy(method)
        )));
    }
    if version != b"HTTP/1.1" && version != b"HTTP/1.0" {
        return Err(Rejection::illegal(format!(
            "invalid version format: {}",
            String::from_utf8_lossy(version)
        )));
    }
    // origin form (`/path?query`), absolute form (`http://host/path`) or `*`: anything else
    // is not a URI hyper can route
    if !(target.starts_with(b"/")
        || target == b"*"
        || target.starts_with(b"http://")
        || target.starts_with(b"https://"))
    {
        return Err(Rejection::illegal(format!(
            "invalid URI [{}]: a request target starts with [/]",
            String::from_utf8_lossy(target)
        )));
    }
    let mut out = Vec::with_capacity(head.len() + 16);
    out.extend_from_slice(method);
    out.push(b' ');
    for &b in target {
        if needs_encoding(b) {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
    out.push(b' ');
    out.extend_from_slice(version);
    out.extend_from_slice(b"\r\n");

    let mut content_length: Option<u64> = None;
    let mut transfer_encoding: Option<String> = None;
    let mut kept: Vec<(&[u8], bool)> = Vec::new();
    for raw in headers.split(|&b| b == b'\n') {
        let field = trim_cr(raw);
        if field.is_empty() {
            continue;
        }
        let Some(colon) = field.iter().position(|&b| b == b':') else {
            return Err(Rejection::illegal("No colon found"));
        };
        let name = field[..colon].to_ascii_lowercase();
        let value = String::from_utf8_lossy(&field[colon + 1..])
            .trim()
            .to_string();
        // what hyper's parser refuses in a header line, refused here with words for it
        if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
            return Err(Rejection::illegal(format!(
                "a header name contains a prohibited character: {}",
                String::from_utf8_lossy(&field[..colon])
            )));
        }
        if let Some(&bad) = field[colon + 1..]
            .iter()
            .find(|&&b| (b < 0x20 && b != b'\t') || b == 0x7F)
        {
            return Err(Rejection::illegal(format!(
                "a header value contains a prohibited character '\\u{bad:04x}': {value}"
            )));
        }
        if name == REJECTION_HEADER.as_bytes() {
            continue;
        }
        let is_length = name == b"content-length";
        if is_length {
            let Ok(n) = value.parse::<u64>() else {
                return Err(Rejection::illegal(format!(
                    "Content-Length value is not a number: {value}"
                )));
            };
            if content_length.is_some_and(|other| other != n) {
                return Err(Rejection::illegal(format!(
                    "Multiple Content-Length values found: [{}, {n}]",
                    content_length.unwrap_or(0)
                )));
            }
            content_length = Some(n);
        }
        if name == b"transfer-encoding" {
            transfer_encoding = Some(value.to_ascii_lowercase());
        }
        kept.push((raw, is_length));
    }
    let next = match transfer_encoding {
        // chunked wins over a Content-Length, which is dropped (RFC 9112 §6.3), as Netty does
        Some(coding) => {
            if version == b"HTTP/1.0" {
                return Err(Rejection::illegal(
                    "Transfer-Encoding is not allowed in an HTTP/1.0 request",
                ));
            }
            if coding.rsplit(',').next().map(str::trim) != Some("chunked") {
                return Err(Rejection::illegal(format!(
                    "unsupported Transfer-Encoding [{coding}]: the last coding must be chunked"
                )));
            }
            Next::Passthrough
        }
        None => Next::Body(content_length.unwrap_or(0)),
    };
    for (raw, is_length) in kept {
        if !(is_length && next == Next::Passthrough) {
            out.extend_from_slice(raw);
            out.push(b'\n');
        }
    }
    out.extend_from_slice(b"\r\n");
    Ok((out, next))
}

/// A `tchar` of RFC 9110 (header names, methods).
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn trim_spaces(mut text: &[u8]) -> &[u8] {
    while let [b' ', rest @ ..] = text {
        text = rest;
    }
    while let [rest @ .., b' '] = text {
        text = rest;
    }
    text
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Bytes `http::Uri` refuses in a path or query that OpenSearch reads as they are.
fn needs_encoding(b: u8) -> bool {
    b <= 0x20 || b >= 0x7F || b"\"<>\\^`{|}".contains(&b)
}

/// The request hyper sees instead of a refused head.
fn synthetic_request(rejection: &Rejection) -> Vec<u8> {
    format!(
        "GET / HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n{REJECTION_HEADER}: {}\r\n\r\n",
        rejection.header_value()
    )
    .into_bytes()
}

/// The end of the head at the start of `buf` (just past its empty line), if complete.
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut start = 0;
    while let Some(pos) = memchr::memchr(b'\n', &buf[start..]) {
        let end = start + pos + 1;
        let rest = &buf[end..];
        if rest.starts_with(b"\n") {
            return Some(end + 1);
        }
        if rest.starts_with(b"\r\n") {
            return Some(end + 2);
        }
        start = end;
    }
    None
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Head,
    Body(u64),
    Passthrough,
    /// After a rejection: the connection ends once hyper has answered.
    Closed,
}

/// A connection whose request heads are checked and made acceptable to hyper (module docs).
pub struct GuardedIo<T> {
    inner: T,
    /// Read from the socket, not yet examined.
    raw: Vec<u8>,
    /// Ready for hyper.
    out: Vec<u8>,
    out_pos: usize,
    state: State,
    eof: bool,
}

impl<T> GuardedIo<T> {
    pub fn new(inner: T) -> Self {
        GuardedIo {
            inner,
            raw: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
            state: State::Head,
            eof: false,
        }
    }

    /// Moves what can be decided from `raw` to `out`; false when more input is needed.
    fn advance(&mut self) -> bool {
        match self.state {
            State::Closed => false,
            State::Passthrough => {
                if self.raw.is_empty() {
                    return false;
                }
                self.out.append(&mut self.raw);
                true
            }
            State::Body(n) => {
                if n == 0 {
                    self.state = State::Head;
                    return self.advance();
                }
                if self.raw.is_empty() {
                    return false;
                }
                let take = (n.min(self.raw.len() as u64)) as usize;
                self.out.extend(self.raw.drain(..take));
                self.state = State::Body(n - take as u64);
                true
            }
            State::Head => {
                // empty lines between requests are allowed (RFC 9112 §2.2)
                let skip = self
                    .raw
                    .iter()
                    .take_while(|b| **b == b'\r' || **b == b'\n')
                    .count();
                if skip > 0 {
                    self.raw.drain(..skip);
                }
                if self.raw.is_empty() {
                    return false;
                }
                let outcome = match head_end(&self.raw) {
                    Some(end) => {
                        let result = rewrite_head(&self.raw[..end]);
                        self.raw.drain(..end);
                        result
                    }
                    None if self.raw.len() > MAX_HEAD => {
                        let first_line = memchr::memchr(b'\n', &self.raw).unwrap_or(self.raw.len());
                        Err(if first_line > MAX_INITIAL_LINE {
                            Rejection {
                                status: 400,
                                kind: "too_long_http_line_exception",
                                reason: format!(
                                    "An HTTP line is larger than {MAX_INITIAL_LINE} bytes."
                                ),
                            }
                        } else {
                            Rejection {
                                status: 400,
                                kind: "too_long_http_header_exception",
                                reason: format!(
                                    "HTTP header is larger than {MAX_HEADER_SIZE} bytes."
                                ),
                            }
                        })
                    }
                    None if self.eof => {
                        // a truncated head: hyper sees it as it is, then the end of the stream
                        self.state = State::Passthrough;
                        return self.advance();
                    }
                    None => return false,
                };
                match outcome {
                    Ok((head, next)) => {
                        self.out.extend_from_slice(&head);
                        self.state = match next {
                            Next::Body(n) => State::Body(n),
                            Next::Passthrough => State::Passthrough,
                        };
                    }
                    Err(rejection) => {
                        self.out.extend_from_slice(&synthetic_request(&rejection));
                        self.raw.clear();
                        self.state = State::Closed;
                    }
                }
                true
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GuardedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_pos < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_pos);
                buf.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.state == State::Closed {
                // what follows a rejected head is discarded; hyper closes the connection once it
                // has answered (the synthetic request says `connection: close`). The end of the
                // stream must still come from the socket: hyper takes it as the client leaving
                let mut scratch = [0u8; 1024];
                let mut scratch_buf = ReadBuf::new(&mut scratch);
                match Pin::new(&mut this.inner).poll_read(cx, &mut scratch_buf) {
                    Poll::Ready(Ok(())) if !scratch_buf.filled().is_empty() => continue,
                    other => return other,
                }
            }
            if this.advance() {
                continue;
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            // a passthrough connection with nothing buffered reads straight into hyper's buffer,
            // and so does a body: at most its remaining bytes, the next head stays here
            match this.state {
                State::Passthrough => return Pin::new(&mut this.inner).poll_read(cx, buf),
                State::Body(n) if n > 0 && buf.remaining() > 0 => {
                    let limit = n.min(buf.remaining() as u64) as usize;
                    let mut direct = ReadBuf::new(buf.initialize_unfilled_to(limit));
                    match Pin::new(&mut this.inner).poll_read(cx, &mut direct) {
                        Poll::Ready(Ok(())) => {
                            let read = direct.filled().len();
                            buf.advance(read);
                            if read == 0 {
                                this.eof = true;
                            } else {
                                this.state = State::Body(n - read as u64);
                            }
                            return Poll::Ready(Ok(()));
                        }
                        other => return other,
                    }
                }
                _ => {}
            }
            let mut chunk = [0u8; READ_CHUNK];
            let mut chunk_buf = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk_buf) {
                Poll::Ready(Ok(())) => {
                    let filled = chunk_buf.filled();
                    if filled.is_empty() {
                        this.eof = true;
                    } else {
                        this.raw.extend_from_slice(filled);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GuardedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A TCP listener whose connections are [`GuardedIo`]s.
/// A listener whose connections go through the guard: plain TCP, or the TLS listener (the
/// guard reads the decrypted stream).
pub struct GuardedListener<L = tokio::net::TcpListener>(pub L);

impl<L> axum::serve::Listener for GuardedListener<L>
where
    L: axum::serve::Listener,
    L::Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Io = GuardedIo<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = self.0.accept().await;
        (GuardedIo::new(io), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything hyper would read from a connection that sent `input` (in pieces of `piece`).
    fn through(input: &[u8], piece: usize) -> Vec<u8> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut builder = tokio_test_reader(input, piece);
            let mut guarded = GuardedIo::new(&mut builder);
            let mut out = Vec::new();
            loop {
                let mut chunk = [0u8; 100];
                let mut buf = ReadBuf::new(&mut chunk);
                std::future::poll_fn(|cx| Pin::new(&mut guarded).poll_read(cx, &mut buf))
                    .await
                    .unwrap();
                if buf.filled().is_empty() {
                    return out;
                }
                out.extend_from_slice(buf.filled());
            }
        })
    }

    /// A reader yielding `input` in pieces (a socket delivering partial reads).
    fn tokio_test_reader(input: &[u8], piece: usize) -> Pieces {
        Pieces {
            data: input.to_vec(),
            pos: 0,
            piece,
        }
    }

    struct Pieces {
        data: Vec<u8>,
        pos: usize,
        piece: usize,
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self
                .piece
                .min(self.data.len() - self.pos)
                .min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.data[start..start + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn uri_bytes_hyper_refuses_are_encoded_and_bodies_untouched() {
        let body = b"{\"q\":\"a > b\r\n\r\nGET /x>y HTTP/1.1\"}";
        let mut input = format!(
            "POST /idx/_search?q=price:>10|\"x\" HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        input.extend_from_slice(body);
        input.extend_from_slice(b"GET /a^b HTTP/1.1\r\nHost: x\r\n\r\n");
        for piece in [1, 3, 7, 4096] {
            let out = String::from_utf8(through(&input, piece)).unwrap();
            let expected = format!(
                "POST /idx/_search?q=price:%3E10%7C%22x%22 HTTP/1.1\r\nContent-Length: {}\r\n\r\n{}GET /a%5Eb HTTP/1.1\r\nHost: x\r\n\r\n",
                body.len(),
                String::from_utf8_lossy(body)
            );
            assert_eq!(out, expected, "piece {piece}");
        }
        // a space inside the target, as Netty reads the line
        assert_eq!(
            through(b"GET /a b  HTTP/1.1\r\n\r\n", 64),
            b"GET /a%20b HTTP/1.1\r\n\r\n".to_vec()
        );
    }

    #[test]
    fn malformed_heads_become_a_synthetic_request_and_the_end() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                b"GARBAGE\r\n\r\nGET / HTTP/1.1\r\n\r\n".to_vec(),
                "text is empty (possibly HTTP/0.9)",
            ),
            (
                b"GET / HTTP/1.1\r\nBad Header\r\n\r\n".to_vec(),
                "No colon found",
            ),
            (
                b"GET / HTTP/9.9\r\n\r\n".to_vec(),
                "invalid version format: HTTP/9.9",
            ),
            (
                b"GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n".to_vec(),
                "Content-Length value is not a number: abc",
            ),
            (
                format!("GET /?q={} HTTP/1.1\r\n\r\n", "a".repeat(5000)).into_bytes(),
                "An HTTP line is larger than 4096 bytes.",
            ),
            (
                format!("GET /?q={}", "a".repeat(20000)).into_bytes(),
                "An HTTP line is larger than 4096 bytes.",
            ),
            (
                format!("GET / HTTP/1.1\r\nX-A: {}\r\n\r\n", "a".repeat(9000)).into_bytes(),
                "HTTP header is larger than 8192 bytes.",
            ),
            (
                b"GET / HTTP/1.1\r\nX A: b\r\n\r\n".to_vec(),
                "a header name contains a prohibited character: X A",
            ),
            (
                b"GET / HTTP/1.1\r\n: b\r\n\r\n".to_vec(),
                "a header name contains a prohibited character: ",
            ),
            (
                b"GET / HTTP/1.1\r\nX-A: a\x01b\r\n\r\n".to_vec(),
                "a header value contains a prohibited character '\\u0001'",
            ),
            (
                b"G(T / HTTP/1.1\r\n\r\n".to_vec(),
                "invalid character in HTTP method [G(T]",
            ),
            (
                b"GET abc HTTP/1.1\r\n\r\n".to_vec(),
                "invalid URI [abc]: a request target starts with [/]",
            ),
            (
                b"PUT / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
                "Transfer-Encoding is not allowed in an HTTP/1.0 request",
            ),
            (
                b"PUT / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(),
                "unsupported Transfer-Encoding [gzip]",
            ),
            (
                b"PUT / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".to_vec(),
                "Multiple Content-Length values found: [1, 2]",
            ),
        ];
        for (input, expected) in cases {
            let out = String::from_utf8(through(&input, 1000)).unwrap();
            let (head, _) = out.split_once("\r\n\r\n").unwrap();
            assert!(out.ends_with("\r\n\r\n"), "one request only: {out}");
            let value = head
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{REJECTION_HEADER}: ")))
                .unwrap_or_else(|| panic!("no rejection in {out}"));
            let rejection = Rejection::from_header(value).unwrap();
            assert_eq!(rejection.status, 400);
            assert!(
                rejection.reason.contains(expected) || rejection.kind == expected,
                "{rejection:?} for {expected}"
            );
        }
    }

    #[test]
    fn chunked_wins_over_a_content_length() {
        let input =
            b"PUT /i HTTP/1.1\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        assert_eq!(
            String::from_utf8(through(input, 16)).unwrap(),
            "PUT /i HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn chunked_bodies_pass_through_and_a_forged_header_is_dropped() {
        let input = b"PUT /i/_doc/1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{}>\r\n0\r\n\r\nGET /a>b HTTP/1.1\r\n\r\n";
        assert_eq!(through(input, 5), input.to_vec());
        let forged = format!("GET / HTTP/1.1\r\n{REJECTION_HEADER}: 400 x y\r\n\r\n");
        assert_eq!(
            String::from_utf8(through(forged.as_bytes(), 64)).unwrap(),
            "GET / HTTP/1.1\r\n\r\n"
        );
    }

    #[test]
    fn rejection_header_round_trips() {
        let rejection = Rejection::illegal("bad [x] 100% \"quoted\"\nline");
        let value = rejection.header_value();
        assert!(value.bytes().all(|b| (0x20..0x7F).contains(&b)), "{value}");
        assert_eq!(Rejection::from_header(&value), Some(rejection));
    }
}

//! The little the proxy reads of what the program sends: one HTTP/1.x request head, the
//! first TLS record (the ClientHello) for its server name, and the 5-byte header of every
//! TLS record a tunnel carries after it. Strict: anything a lenient server and a strict one
//! could read differently is refused, not guessed at.

use std::io::Read;

/// Most a request head may take (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;
/// Most a TLS record may carry (2^14 plus the expansion TLS 1.2 permits).
pub const MAX_RECORD: usize = 16384 + 2048;
/// A TLS record header: content type, legacy version (2 bytes), length (2 bytes).
pub const RECORD_HEADER: usize = 5;
/// The record content type of a handshake message (ClientHello, ServerHello).
pub const HANDSHAKE: u8 = 22;
/// The record content type of an alert.
pub const ALERT: u8 = 21;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The one value of header `name` (case-insensitive); Err when it appears twice.
    pub fn one(&self, name: &str) -> Result<Option<&str>, &'static str> {
        let mut it = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let first = it.next().map(|(_, v)| v.as_str());
        if it.next().is_some() {
            return Err("duplicate_header");
        }
        Ok(first)
    }
}

/// Read until the blank line that ends a head: (the head, bytes read past it).
pub fn read_head(r: &mut impl Read) -> Result<(Vec<u8>, Vec<u8>), &'static str> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = r.read(&mut chunk).map_err(|_| "request_read_failed")?;
        if n == 0 {
            return Err("request_incomplete");
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let end = from + i + 4;
            if end > MAX_HEAD {
                return Err("request_head_too_large");
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err("request_head_too_large");
        }
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Parse a head read by [`read_head`]: CRLF line ends only, no folded lines, no control
/// characters, token header names, HTTP/1.0 or 1.1.
pub fn parse_head(head: &[u8]) -> Result<Head, &'static str> {
    let text = std::str::from_utf8(head).map_err(|_| "request_not_utf8")?;
    let text = text.strip_suffix("\r\n\r\n").ok_or("request_incomplete")?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err("bad_request_line");
    };
    if !is_token(method) || target.is_empty() || !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err("bad_request_line");
    }
    if target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("bad_request_line");
    }
    let mut headers = Vec::new();
    for l in lines {
        if l.contains('\n') || l.contains('\r') {
            return Err("bad_line_ending");
        }
        let (n, v) = l.split_once(':').ok_or("bad_header")?;
        if !is_token(n) {
            return Err("bad_header");
        }
        let v = v.trim_matches(|c| c == ' ' || c == '\t');
        if v.bytes().any(|b| (b < b' ' && b != b'\t') || b == 0x7f) {
            return Err("bad_header");
        }
        headers.push((n.to_string(), v.to_string()));
    }
    Ok(Head {
        method: method.into(),
        target: target.into(),
        version: version.into(),
        headers,
    })
}

/// `http://host[:port][/path]` → (host as written, port, origin-form path). No user info,
/// no other scheme, no fragment.
pub fn parse_http_url(url: &str) -> Result<(String, u16, String), &'static str> {
    let rest = match url.get(..7) {
        Some(s) if s.eq_ignore_ascii_case("http://") => &url[7..],
        _ => return Err("not_http_url"),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') || path.contains('#') {
        return Err("bad_url");
    }
    let (host, port) = split_authority(authority, 80)?;
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    Ok((host, port, path))
}

/// `host[:port]` or `[v6][:port]`, with `default` when no port is given.
pub fn split_authority(a: &str, default: u16) -> Result<(String, u16), &'static str> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, p) = rest.split_once(']').ok_or("bad_authority")?;
        let p = match p {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("bad_authority")?),
        };
        (format!("[{h}]"), p)
    } else {
        match a.split_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (a.to_string(), None),
        }
    };
    let port = match port {
        None => default,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or("bad_port")?,
    };
    if host.is_empty() || host == "[]" {
        return Err("bad_authority");
    }
    Ok((host, port))
}

/// The first bytes the program sent after CONNECT's 200.
#[derive(Debug, PartialEq, Eq)]
pub enum First {
    /// A whole TLS handshake record (header included).
    Tls(Vec<u8>),
    /// Anything else: these bytes.
    NotTls(Vec<u8>),
}

/// A well-formed TLS record header: (content type, body length), or None.
///
/// - content type 20..=24: change_cipher_spec, alert, handshake, application_data,
///   heartbeat (RFC 8446 5.1, RFC 6520);
/// - legacy version 0x0301..=0x0304: TLS 1.0 to 1.3 (a TLS 1.3 stack writes 0x0303, or
///   0x0301 in its first ClientHello). 0x0300 (SSL 3.0) is refused: RFC 7568 forbids it,
///   no stack rustls, OpenSSL, BoringSSL or Go ships sends it, and every accepted pair of
///   bytes is one more a non-TLS protocol could start a line with;
/// - length at most 2^14 + 2048 (TLSCiphertext's limit), and not 0 except for
///   application_data (RFC 5246 6.2.1: only it may be empty).
pub fn record_header(h: &[u8]) -> Option<(u8, usize)> {
    let [kind, major, minor, hi, lo] = *h.get(..RECORD_HEADER)? else {
        return None;
    };
    let len = u16::from_be_bytes([hi, lo]) as usize;
    let ok = (20..=24).contains(&kind)
        && major == 3
        && (1..=4).contains(&minor)
        && len <= MAX_RECORD
        && (len > 0 || kind == 23);
    ok.then_some((kind, len))
}

/// Read the first TLS record, or give up at the first byte that is not a handshake record.
pub fn read_first_record(r: &mut impl Read) -> Result<First, &'static str> {
    let mut hdr = [0u8; 5];
    let mut got = 0;
    while got < 5 {
        let n = r.read(&mut hdr[got..]).map_err(|_| "tls_read_failed")?;
        if n == 0 {
            return Err("tls_incomplete");
        }
        got += n;
        if hdr[0] != 0x16 {
            return Ok(First::NotTls(hdr[..got].to_vec()));
        }
    }
    let Some((_, len)) = record_header(&hdr) else {
        return Err("tls_bad_record");
    };
    let mut rec = vec![0u8; 5 + len];
    rec[..5].copy_from_slice(&hdr);
    r.read_exact(&mut rec[5..]).map_err(|_| "tls_incomplete")?;
    Ok(First::Tls(rec))
}

/// A bounds-checked reader over a byte slice.
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.0.len() < n {
            return Err("tls_bad_client_hello");
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<usize, &'static str> {
        Ok(self.take(1)?[0] as usize)
    }
    fn u16(&mut self) -> Result<usize, &'static str> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]) as usize)
    }
    fn vec8(&mut self) -> Result<&'a [u8], &'static str> {
        let n = self.u8()?;
        self.take(n)
    }
    fn vec16(&mut self) -> Result<&'a [u8], &'static str> {
        let n = self.u16()?;
        self.take(n)
    }
}

/// The server name of a ClientHello record (None: it names none). The whole ClientHello
/// must be in this one record.
pub fn client_hello_sni(record: &[u8]) -> Result<Option<String>, &'static str> {
    let mut c = Cur(record);
    c.take(5)?; // record header, checked by read_first_record
    if c.u8()? != 1 {
        return Err("tls_not_client_hello");
    }
    let len = c.take(3)?;
    let len = (len[0] as usize) << 16 | (len[1] as usize) << 8 | len[2] as usize;
    if len > c.0.len() {
        return Err("tls_client_hello_fragmented");
    }
    let mut h = Cur(c.take(len)?);
    h.take(2 + 32)?; // legacy version, random
    h.vec8()?; // session id
    h.vec16()?; // cipher suites
    h.vec8()?; // compression methods
    if h.0.is_empty() {
        return Ok(None);
    }
    let mut ext = Cur(h.vec16()?);
    let mut sni = None;
    while !ext.0.is_empty() {
        let kind = ext.u16()?;
        let data = ext.vec16()?;
        if kind != 0 {
            continue;
        }
        if sni.is_some() {
            return Err("tls_duplicate_sni");
        }
        let mut list = Cur(Cur(data).vec16()?);
        while !list.0.is_empty() {
            let t = list.u8()?;
            let name = list.vec16()?;
            if t == 0 {
                if sni.is_some() {
                    return Err("tls_duplicate_sni");
                }
                let s = std::str::from_utf8(name).map_err(|_| "tls_bad_sni")?;
                sni = Some(s.to_string());
            }
        }
    }
    Ok(sni)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ClientHello record naming `sni` (none when None), with `extra` extensions.
    pub fn client_hello(sni: Option<&str>) -> Vec<u8> {
        let mut ext = Vec::new();
        // an unrelated extension first (supported_versions)
        ext.extend_from_slice(&[0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04]);
        if let Some(name) = sni {
            let n = name.as_bytes();
            let mut list = vec![0u8];
            list.extend_from_slice(&(n.len() as u16).to_be_bytes());
            list.extend_from_slice(n);
            let mut data = (list.len() as u16).to_be_bytes().to_vec();
            data.extend_from_slice(&list);
            ext.extend_from_slice(&[0, 0]);
            ext.extend_from_slice(&(data.len() as u16).to_be_bytes());
            ext.extend_from_slice(&data);
        }
        let mut body = vec![0x03, 0x03];
        body.extend_from_slice(&[7u8; 32]);
        body.push(0); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]); // one suite
        body.extend_from_slice(&[1, 0]); // null compression
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let mut hs = vec![1, 0, 0, 0];
        let l = body.len() as u32;
        hs[1..4].copy_from_slice(&l.to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut rec = vec![0x16, 0x03, 0x01];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    #[test]
    fn sni_is_found_or_absent() {
        let r = client_hello(Some("pypi.org"));
        assert_eq!(client_hello_sni(&r).unwrap().as_deref(), Some("pypi.org"));
        assert_eq!(client_hello_sni(&client_hello(None)).unwrap(), None);
        assert_eq!(
            read_first_record(&mut &r[..]).unwrap(),
            First::Tls(r.clone())
        );
    }

    #[test]
    fn malformed_hellos_are_errors() {
        let r = client_hello(Some("pypi.org"));
        for cut in [6, 9, 40, r.len() - 3] {
            let mut t = r[..cut].to_vec();
            // keep the record length consistent with what is left
            let l = (t.len() - 5) as u16;
            t[3..5].copy_from_slice(&l.to_be_bytes());
            assert!(client_hello_sni(&t).is_err(), "cut at {cut}");
        }
        let mut not_hello = r.clone();
        not_hello[5] = 2;
        assert_eq!(client_hello_sni(&not_hello), Err("tls_not_client_hello"));
        assert!(
            matches!(read_first_record(&mut &b"GET / HTTP/1.1\r\n"[..]), Ok(First::NotTls(b)) if b[0] == b'G')
        );
        assert_eq!(read_first_record(&mut &r[..20]), Err("tls_incomplete"));
        assert_eq!(
            read_first_record(&mut &[0x16u8, 3, 1, 0xff, 0xff][..]),
            Err("tls_bad_record")
        );
        assert_eq!(
            read_first_record(&mut &[0x16u8, 3][..]),
            Err("tls_incomplete")
        );
    }

    #[test]
    fn record_headers() {
        for ok in [
            [22u8, 3, 1, 0, 1],
            [23, 3, 3, 0x48, 0],
            [23, 3, 3, 0, 0],
            [20, 3, 3, 0, 1],
            [21, 3, 4, 0, 2],
            [24, 3, 2, 0, 3],
        ] {
            assert!(record_header(&ok).is_some(), "{ok:?}");
        }
        assert_eq!(record_header(&[23, 3, 3, 0x48, 0]), Some((23, 0x4800)));
        for bad in [
            *b"SET k",
            *b"GET /",
            [19, 3, 3, 0, 1],
            [25, 3, 3, 0, 1],
            [22, 3, 0, 0, 1],
            [22, 3, 5, 0, 1],
            [22, 2, 3, 0, 1],
            [22, 3, 3, 0, 0],
            [23, 3, 3, 0x48, 1],
        ] {
            assert_eq!(record_header(&bad), None, "{bad:?}");
        }
        assert_eq!(record_header(&[22, 3, 3, 0]), None, "short");
    }

    #[test]
    fn two_server_names_are_refused() {
        let mut r = client_hello(Some("a.example.com"));
        // append a second SNI extension and fix the lengths
        let extra = [0u8, 0, 0, 8, 0, 6, 0, 0, 3, b'e', b'v', b'l'];
        let ext_len_at = 5 + 4 + 2 + 32 + 1 + 4 + 2;
        let old = u16::from_be_bytes([r[ext_len_at], r[ext_len_at + 1]]);
        r[ext_len_at..ext_len_at + 2].copy_from_slice(&(old + extra.len() as u16).to_be_bytes());
        r.extend_from_slice(&extra);
        let hs_len = (r.len() - 9) as u32;
        r[6..9].copy_from_slice(&hs_len.to_be_bytes()[1..]);
        let rec_len = (r.len() - 5) as u16;
        r[3..5].copy_from_slice(&rec_len.to_be_bytes());
        assert_eq!(client_hello_sni(&r), Err("tls_duplicate_sni"));
    }

    #[test]
    fn heads() {
        let raw = b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\nextra";
        let (head, rest) = read_head(&mut &raw[..]).unwrap();
        assert_eq!(rest, b"extra");
        let h = parse_head(&head).unwrap();
        assert_eq!(
            (h.method.as_str(), h.target.as_str()),
            ("CONNECT", "pypi.org:443")
        );
        assert_eq!(h.one("host").unwrap(), Some("pypi.org:443"));
        for bad in [
            &b"GET  / HTTP/1.1\r\n\r\n"[..],
            b"GET / HTTP/2\r\n\r\n",
            b"GET / HTTP/1.1\r\n folded\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: a\nY: b\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: a\x01\r\n\r\n",
            b"G\xffT / HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                parse_head(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let dup = parse_head(b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n").unwrap();
        assert_eq!(dup.one("Host"), Err("duplicate_header"));
        assert_eq!(
            read_head(&mut &b"GET / HTTP/1.1\r\n"[..]),
            Err("request_incomplete")
        );
        let big = vec![b'a'; MAX_HEAD + 10];
        assert_eq!(read_head(&mut &big[..]), Err("request_head_too_large"));
    }

    #[test]
    fn urls() {
        assert_eq!(
            parse_http_url("http://a.test:8080/x?y").unwrap(),
            ("a.test".into(), 8080, "/x?y".into())
        );
        assert_eq!(
            parse_http_url("HTTP://a.test").unwrap(),
            ("a.test".into(), 80, "/".into())
        );
        assert_eq!(
            parse_http_url("http://a.test?q").unwrap(),
            ("a.test".into(), 80, "/?q".into())
        );
        assert_eq!(
            parse_http_url("http://[::1]:81/").unwrap(),
            ("[::1]".into(), 81, "/".into())
        );
        for bad in [
            "https://a.test/",
            "/relative",
            "http://user@a.test/",
            "http://a.test:0/",
            "http://a.test:x/",
            "http:///",
            "http://a.test/#frag",
            "http://[::1/",
        ] {
            assert!(parse_http_url(bad).is_err(), "{bad}");
        }
        assert_eq!(
            split_authority("a.test", 443).unwrap(),
            ("a.test".into(), 443)
        );
        assert!(split_authority("[::1]x", 443).is_err());
    }
}

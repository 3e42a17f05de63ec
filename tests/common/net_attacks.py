# The network allowlist's attacks from inside a jail (tests/jail/network.rs through `exec`,
# tests/frontends/serve/workspace_net.rs through workspace_exec). One line per attack:
# `label outcome`, where outcome is `ok:<detail>` when the payload got through and
# `blocked:<detail>` otherwise. The site's port: argv[1] or $SITE_PORT.
import socket, ssl, urllib.request, urllib.error, json, sys, os
PORT = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ['SITE_PORT'])
def out(label, ok, detail):
    print(label, ('ok:' if ok else 'blocked:') + str(detail)[:120], flush=True)
def get(url):
    return urllib.request.urlopen(url, timeout=20).read()
def attempt(label, f):
    try:
        out(label, True, f())
    except urllib.error.HTTPError as e:
        out(label, False, '%s %s' % (e.code, e.read()[:100]))
    except Exception as e:
        out(label, False, repr(e))
def raw(req, after=None):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
    s.sendall(req)
    first = s.recv(200)
    if after is not None and first.startswith(b'HTTP/1.1 200'):
        s.sendall(after)
        rest = s.recv(200)
        if rest:
            return first + rest
        raise OSError('closed after CONNECT: ' + repr(first))
    if not first.startswith(b'HTTP/1.1 200'):
        raise OSError(first)
    return first
attempt('allowed', lambda: get('http://localhost:%d/ok' % PORT))
attempt('direct_ip_via_proxy', lambda: get('http://127.0.0.1:%d/ok' % PORT))
attempt('direct_connect', lambda: socket.create_connection(('127.0.0.1', PORT), timeout=5))
attempt('ipv6_via_proxy', lambda: get('http://[::1]:%d/ok' % PORT))
attempt('ipv6_direct', lambda: socket.create_connection(('::1', PORT), timeout=5))
attempt('host_mismatch', lambda: raw(b'GET http://localhost:%d/ok HTTP/1.1\r\nHost: evil.test\r\n\r\n' % PORT))
def sni():
    s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
    s.sendall(b'CONNECT localhost:%d HTTP/1.1\r\n\r\n' % PORT)
    if not s.recv(200).startswith(b'HTTP/1.1 200'):
        raise OSError('no tunnel')
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(s, server_hostname='evil.test').version()
attempt('sni_mismatch', sni)
attempt('connect_internal_port', lambda: raw(b'CONNECT localhost:22 HTTP/1.1\r\n\r\n', b'x'))
attempt('redirect_off_list', lambda: get('http://localhost:%d/redirect' % PORT))
attempt('metadata', lambda: get('http://169.254.169.254/latest/meta-data/'))
attempt('localhost_other_port', lambda: get('http://localhost:%d/ok' % (PORT + 1)))
attempt('https_off_list', lambda: get('https://example.com/'))
attempt('raw_socket', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return s.sendto(b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01', ('8.8.8.8', 53))
attempt('udp_dns', udp)
attempt('resolver', lambda: socket.getaddrinfo('example.com', 443))
attempt('bind_other_port', lambda: socket.create_server(('127.0.0.1', 8080)))
def big():
    return len(get('http://localhost:%d/big' % PORT))
attempt('over_limit', big)

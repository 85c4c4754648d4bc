#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The exporter toolkit's web configuration served for real (issue 17): TLS checked by curl
against a CA openssl made, client certificates, basic auth with a hash htpasswd made, a real
Prometheus scraping over TLS with basic_auth, certificates renewed by SIGHUP while a client
keeps connecting, a broken file on reload, the rate limit, and the detail endpoints from
another host (a network namespace with a veth pair) and from this one."""

import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, free_port, parse_prom_text, prom_query, skip  # noqa: E402

for tool, package in (("openssl", "openssl"), ("curl", "curl"), ("htpasswd", "apache2-utils"),
                      ("prometheus", "prometheus"), ("ip", "iproute2")):
    if not shutil.which(tool):
        skip(f"{tool} not installed (Debian package '{package}')")

PKI = tempfile.mkdtemp(prefix="armprofd-pki-")
PASSWORD = "s3cret scraper"


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_cert(name, sans, usage, ca="ca"):
    """An EC key and a certificate for it signed by `ca` (None: self-signed)."""
    key, crt = f"{PKI}/{name}.key", f"{PKI}/{name}.crt"
    if ca is None:
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", crt, "-days", "2", "-subj", f"/CN={name}",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign")
        return crt, key
    ext = f"{PKI}/{name}.ext"
    with open(ext, "w") as f:
        f.write(f"subjectAltName={sans}\nextendedKeyUsage={usage}\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
            "-out", f"{PKI}/{name}.csr", "-subj", f"/CN={name}")
    openssl("x509", "-req", "-in", f"{PKI}/{name}.csr", "-CA", f"{PKI}/{ca}.crt", "-CAkey", f"{PKI}/{ca}.key",
            "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext)
    return crt, key


CA, _ = make_cert("ca", None, None, ca=None)
SERVER_SANS = "DNS:localhost,IP:127.0.0.1,IP:10.213.7.1"
make_cert("server", SERVER_SANS, "serverAuth")
make_cert("server2", SERVER_SANS, "serverAuth")  # the renewed one
make_cert("scraper", "DNS:scraper.example", "clientAuth")
make_cert("rogue-ca", None, None, ca=None)
make_cert("rogue", "DNS:scraper.example", "clientAuth", ca="rogue-ca")
HTPASSWD = subprocess.run(["htpasswd", "-nbBC", "10", "prometheus", PASSWORD], check=True,
                          capture_output=True, text=True).stdout.strip().split(":", 1)[1]


def der(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def web_config(d, text):
    path = os.path.join(d.tmp if hasattr(d, "tmp") else d, "web.yml")
    with open(path, "w") as f:
        f.write(text)
    return path


def start(web_text, listen="127.0.0.1:0", extra_config=""):
    """A daemon with this web config; waits until it logs its address."""
    tmp = tempfile.mkdtemp(prefix="web-", dir=PKI)
    path = web_config(tmp, web_text)
    d = Daemon(args=["--web.config.file", path, "--log-level", "debug"], listen=listen,
               config_text="[http]\n" + extra_config)
    d.web_path = path
    m = d.wait_log(r"Serving on (\S+)", 10)
    d.host, d.port = m.group(1).rsplit(":", 1)[0].strip("[]"), int(m.group(1).rsplit(":", 1)[1])
    return d


def curl(d, path, *args, scheme="https", host="localhost", netns=None):
    """(curl's exit code, HTTP status, headers+body) of one request."""
    argv = ["curl", "-sS", "-m", "5", "-i", "-o", "-", "-w", "\n%{http_code}", *args,
            f"{scheme}://{host}:{d.port}{path}"]
    if netns:
        argv = ["ip", "netns", "exec", netns] + argv
    p = subprocess.run(argv, capture_output=True, text=True)
    out, _, code = p.stdout.rpartition("\n")
    return p.returncode, int(code or 0), out


TLS = f"""tls_server_config:
  cert_file: {PKI}/server.crt
  key_file: {PKI}/server.key
"""
USERS = f"""basic_auth_users:
  prometheus: {HTPASSWD}
"""


def test_tls_basic_auth_headers():
    with start(TLS + USERS + "http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n"
               "    X-Frame-Options: deny\n") as d:
        ca = ["--cacert", CA]
        rc, code, out = curl(d, "/metrics", *ca)
        assert (rc, code) == (0, 401), (rc, code, out)
        assert 'www-authenticate: basic realm="armprofd"' in out.lower(), out
        rc, code, _ = curl(d, "/metrics", *ca, "-u", "prometheus:wrong")
        assert (rc, code) == (0, 401), (rc, code)
        rc, code, _ = curl(d, "/metrics", *ca, "-u", "nobody:" + PASSWORD)
        assert (rc, code) == (0, 401), (rc, code)
        rc, code, out = curl(d, "/metrics", *ca, "-u", "prometheus:" + PASSWORD)
        assert (rc, code) == (0, 200), (rc, code, out)
        assert "strict-transport-security: max-age=31536000" in out.lower(), out
        assert "x-frame-options: deny" in out.lower(), out
        assert "armprofd_build_info" in out
        # Authenticated: the detail endpoints too; healthz needs the password like everything else.
        assert curl(d, "/hotpcs", *ca, "-u", "prometheus:" + PASSWORD)[1] == 200
        assert curl(d, "/healthz", *ca)[1] == 401
        # Without the CA curl refuses the certificate (60: peer certificate cannot be authenticated).
        assert curl(d, "/healthz")[0] == 60
        # Plain HTTP to the TLS port: refused cleanly and at once, and the server serves on.
        t0 = time.monotonic()
        rc, code, _ = curl(d, "/healthz", scheme="http")
        assert rc in (52, 56) and code == 0 and time.monotonic() - t0 < 3, (rc, code)
        rc, code, _ = curl(d, "/healthz", *ca, "-u", "prometheus:" + PASSWORD)
        assert (rc, code) == (0, 200)
        # One bcrypt per distinct credential: the repeats were cache hits.
        m = parse_prom_text(curl(d, "/metrics", *ca, "-u", "prometheus:" + PASSWORD)[2].split("\n\n", 1)[1])
        assert m[("armprofd_http_auth_bcrypts_total", frozenset())] == 3, m[("armprofd_http_auth_bcrypts_total", frozenset())]
        # /hotpcs, the /healthz after the plain request, and this /metrics.
        assert m[("armprofd_http_auth_cache_hits_total", frozenset())] == 3
        assert m[("armprofd_http_requests_total", frozenset({("handler", "metrics"), ("code", "401")}))] == 3


def test_client_certificates():
    with start(TLS + f"""  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: {CA}
  client_allowed_sans: [scraper.example]
  min_version: TLS13
""") as d:
        ca = ["--cacert", CA]
        good = ["--cert", f"{PKI}/scraper.crt", "--key", f"{PKI}/scraper.key"]
        rc, code, out = curl(d, "/healthz", *ca)
        assert code == 403 and "client certificate is required" in out, (rc, code, out)
        rc, code, out = curl(d, "/healthz", *ca, "--cert", f"{PKI}/rogue.crt", "--key", f"{PKI}/rogue.key")
        assert code == 403 and "not valid" in out, (rc, code, out)
        rc, code, out = curl(d, "/hotlines", *ca, *good)
        assert (rc, code) == (0, 200), (rc, code, out)
        # min_version TLS13: a TLS 1.2 client fails the handshake (curl 35).
        rc, code, _ = curl(d, "/healthz", *ca, *good, "--tls-max", "1.2")
        assert rc == 35 and code == 0, (rc, code)
        # A certificate from the right CA without an allowed SAN.
        make_cert("other-client", "DNS:other.example", "clientAuth")
        rc, code, out = curl(d, "/healthz", *ca, "--cert", f"{PKI}/other-client.crt", "--key",
                             f"{PKI}/other-client.key")
        assert code == 403 and "client_allowed_sans" in out, (rc, code, out)


def peer_cert(d):
    ctx = ssl.create_default_context(cafile=CA)
    with socket.create_connection((d.host, d.port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            return t.getpeercert(binary_form=True)


def test_reload_certificates():
    with start(TLS) as d:
        assert peer_cert(d) == der(f"{PKI}/server.crt")
        # A client connecting all along: the port never refuses.
        refused, connects, stop = [], [0], threading.Event()

        def hammer():
            while not stop.is_set():
                try:
                    # From another address than the kept-alive one: per_ip_connections would evict it.
                    socket.create_connection((d.host, d.port), timeout=2, source_address=("127.0.0.2", 0)).close()
                    connects[0] += 1
                except OSError as e:
                    refused.append(repr(e))

        # A scrape kept alive across the reload: answered before, closed by the reload.
        ka = http_keepalive(d)
        t = threading.Thread(target=hammer)
        t.start()
        try:
            time.sleep(0.3)
            busy_before = busy_seconds(d)
            web_config(d.web_path.rsplit("/", 1)[0], TLS.replace("server.", "server2."))
            d.signal(1)  # SIGHUP
            d.wait_log(r"now serving HTTPS", 5)
            d.wait_log(r"Configuration reloaded", 5)
            deadline = time.monotonic() + 5
            while peer_cert(d) != der(f"{PKI}/server2.crt"):
                assert time.monotonic() < deadline, "the renewed certificate never came"
                time.sleep(0.05)
            d.wait_log(r"the server a reload replaced has answered its last request", 5)
            time.sleep(0.3)
        finally:
            stop.set()
            t.join()
        assert not refused, refused[:3]
        assert connects[0] > 10, connects
        # The idle kept-alive connection was closed by the reload (its client reconnects).
        ka_sock = ka.sock
        ka_sock.settimeout(2)
        assert ka_sock.recv(1) == b"", "the idle connection on the replaced server stayed open"
        ka.close()
        closed = parse_prom_text(curl(d, "/metrics", "--cacert", CA)[2].split("\n\n", 1)[1])
        assert closed[("armprofd_http_connections_closed_total", frozenset({("reason", "reload")}))] >= 1
        # The replaced server's threads ended; what they used stays counted under their names.
        busy_after = busy_seconds(d)
        assert set(busy_before) <= set(busy_after), (busy_before, busy_after)
        for name, v in busy_before.items():
            assert busy_after[name] >= v, (name, busy_before, busy_after)

        # A broken file: the reload fails, logged, and the renewed certificate is still served.
        web_config(d.web_path.rsplit("/", 1)[0], TLS.replace("server.", "server2.") + "  bogus_key: 1\n")
        d.signal(1)
        d.wait_log(r"web_config: .*web\.yml: line 4: tls_server_config: unknown key 'bogus_key'", 5)
        d.wait_log(r"reload failed", 5)
        assert peer_cert(d) == der(f"{PKI}/server2.crt")
        # A key that is not the certificate's: refused too, before anything changes.
        web_config(d.web_path.rsplit("/", 1)[0], TLS.replace("server.key", "scraper.key"))
        d.signal(1)
        d.wait_log(r"the certificate .* and key .*: .*", 5)
        assert peer_cert(d) == der(f"{PKI}/server2.crt")
        rc, code, _ = curl(d, "/healthz", "--cacert", CA)
        assert (rc, code) == (0, 200)


def busy_seconds(d):
    m = parse_prom_text(curl(d, "/metrics", "--cacert", CA)[2].split("\n\n", 1)[1])
    return {dict(k[1])["thread"]: v for k, v in m.items() if k[0] == "armprofd_collector_busy_seconds_total"}


def http_keepalive(d):
    """An HTTPS connection with one answered request, kept open."""
    import http.client
    c = http.client.HTTPSConnection(d.host, d.port, context=ssl.create_default_context(cafile=CA), timeout=5)
    c.request("GET", "/healthz", headers={"Host": "localhost"})
    assert c.getresponse().read() == b"ok\n"
    return c


def s_client(d, *args):
    """What openssl s_client negotiated: (protocol, cipher, server temp key), None when refused."""
    p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{d.port}", "-CAfile", CA, *args],
                       input="", capture_output=True, text=True, timeout=10)
    got = dict(line.strip().split(", Cipher is ") for line in p.stdout.splitlines() if ", Cipher is " in line)
    proto = next(iter(got), "(NONE)").replace("New, ", "")
    if proto == "(NONE)":
        return None
    key = [line.split(":", 1)[1].strip() for line in p.stdout.splitlines() if line.startswith("Server Temp Key")]
    return proto, got["New, " + proto], key[0] if key else None


def test_cipher_suites_and_curves():
    with start(TLS + """  max_version: TLS12
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [CurveP384]
""") as d:
        assert s_client(d, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256") == \
            ("TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDH, secp384r1, 384 bits")
        assert s_client(d, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384") is None
        assert s_client(d, "-tls1_2", "-curves", "prime256v1") is None
        assert s_client(d, "-tls1_3") is None
    # A list GnuTLS cannot honour as it stands is refused, naming the suite that would come along.
    tmp = tempfile.mkdtemp(prefix="web-", dir=PKI)
    path = web_config(tmp, TLS + "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "
                                 "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n")
    empty = os.path.join(tmp, "armprofd.conf")
    open(empty, "w").close()
    p = subprocess.run([os.environ["ARMPROFD_BIN"], "-c", empty, "--web.config.file", path, "--check-config"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "would enable" in p.stderr and "0xc02c" in p.stderr, p.stderr


def test_rate_limit():
    with start("rate_limit:\n  burst: 3\n  interval: 1h\n") as d:
        codes = [curl(d, "/healthz", scheme="http")[1] for _ in range(5)]
        assert codes == [200, 200, 200, 429, 429], codes


def test_check_config():
    tmp = tempfile.mkdtemp(prefix="web-", dir=PKI)
    bad = web_config(tmp, TLS.replace("server.key", "scraper.key"))
    empty = os.path.join(tmp, "armprofd.conf")
    open(empty, "w").close()
    p = subprocess.run([os.environ["ARMPROFD_BIN"], "-c", empty, "--web.config.file", bad, "--check-config"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "key" in p.stderr and "server.crt" in p.stderr, (p.returncode, p.stderr)
    good = web_config(tmp, TLS + USERS)
    p = subprocess.run([os.environ["ARMPROFD_BIN"], "-c", empty, "--web.config.file", good, "--check-config"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_prometheus_scrapes_over_tls_with_basic_auth():
    with start(TLS + USERS) as d:
        tmp = tempfile.mkdtemp(prefix="armprofd-prom-")
        with open(f"{tmp}/pass", "w") as f:
            f.write(PASSWORD)
        port = free_port()
        with open(f"{tmp}/prometheus.yml", "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: armprofd
    scheme: https
    tls_config:
      ca_file: {CA}
      server_name: localhost
    basic_auth:
      username: prometheus
      password_file: {tmp}/pass
    static_configs:
      - targets: ['127.0.0.1:{d.port}']
""")
        prom = subprocess.Popen([shutil.which("prometheus"), f"--config.file={tmp}/prometheus.yml",
                                 f"--storage.tsdb.path={tmp}/data", f"--web.listen-address=127.0.0.1:{port}",
                                 "--log.level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline, got = time.monotonic() + 40, []
            while time.monotonic() < deadline and not got:
                try:
                    got = prom_query(port, 'armprofd_http_requests_total{job="armprofd",handler="metrics",code="200"}')
                except OSError:
                    pass
                time.sleep(0.5)
            assert got and float(got[0]["value"][1]) >= 1, (got, d.log()[-2000:])
            assert prom_query(port, 'up{job="armprofd"}')[0]["value"][1] == "1"
            # Each scrape was authenticated: no 401 ever, and bcrypt ran once for Prometheus's password.
            m = parse_prom_text(curl(d, "/metrics", "--cacert", CA, "-u", "prometheus:" + PASSWORD)[2]
                                .split("\n\n", 1)[1])
            assert m[("armprofd_http_auth_bcrypts_total", frozenset())] == 1
            assert ("armprofd_http_requests_total", frozenset({("handler", "metrics"), ("code", "401")})) not in m
        finally:
            prom.terminate()
            prom.wait(10)
            shutil.rmtree(tmp, ignore_errors=True)


NETNS = f"armprofd-t{os.getpid()}"


def make_netns():
    """A network namespace reaching this host at 10.213.7.1 over a veth pair; None when not possible."""
    host_if, peer_if = f"apd{os.getpid() % 100000}h", f"apd{os.getpid() % 100000}p"
    cmds = [["ip", "netns", "add", NETNS],
            ["ip", "link", "add", host_if, "type", "veth", "peer", "name", peer_if],
            ["ip", "link", "set", peer_if, "netns", NETNS],
            ["ip", "addr", "add", "10.213.7.1/24", "dev", host_if],
            ["ip", "link", "set", host_if, "up"],
            ["ip", "netns", "exec", NETNS, "ip", "addr", "add", "10.213.7.2/24", "dev", peer_if],
            ["ip", "netns", "exec", NETNS, "ip", "link", "set", peer_if, "up"],
            ["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up"]]
    for c in cmds:
        p = subprocess.run(c, capture_output=True, text=True)
        if p.returncode != 0:
            remove_netns(host_if)
            return None, f"{' '.join(c)}: {p.stderr.strip()}"
    return host_if, None


def remove_netns(host_if):
    subprocess.run(["ip", "link", "del", host_if], capture_output=True)
    subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)


def test_detail_from_another_host():
    host_if, why = make_netns()
    if not host_if:
        print(f"SKIP detail from another host: cannot make a network namespace ({why})")
        return "skipped"
    try:
        # No web config: /hotlines is this host's only.
        with start("", listen=":0") as d:
            rc, code, out = curl(d, "/hotlines", scheme="http", host="10.213.7.1", netns=NETNS)
            assert code == 403 and "[http] detail = any" in out, (rc, code, out)
            assert curl(d, "/metrics", scheme="http", host="10.213.7.1", netns=NETNS)[1] == 200
            assert curl(d, "/hotlines", scheme="http", host="127.0.0.1")[1] == 200
        # With authentication: the other host is served detail once it authenticates.
        with start(TLS + USERS, listen=":0") as d:
            ca = ["--cacert", CA]
            assert curl(d, "/hotlines", *ca, host="10.213.7.1", netns=NETNS)[1] == 401
            rc, code, out = curl(d, "/hotlines", *ca, "-u", "prometheus:" + PASSWORD, host="10.213.7.1", netns=NETNS)
            assert (rc, code) == (0, 200), (rc, code, out)
            assert '"lines"' in out or '"interval"' in out, out[:300]
            assert curl(d, "/hotlines", *ca, "-u", "prometheus:" + PASSWORD)[1] == 200
    finally:
        remove_netns(host_if)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("note: not root; the network namespace test will be skipped")
    skipped = []
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            t0 = time.monotonic()
            if fn() == "skipped":
                skipped.append(name)
            print(f"{name}: ok ({time.monotonic() - t0:.1f} s)")
    shutil.rmtree(PKI, ignore_errors=True)
    if skipped:
        print(f"SKIP: {', '.join(skipped)}")
        sys.exit(77)

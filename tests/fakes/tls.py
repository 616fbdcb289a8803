"""TLS for the tests: a CA and certificates made on the spot, and stunnel (Debian's `stunnel4`,
deploy/apt-packages.txt) as the TLS terminator in front of the embedded broker, which speaks
plaintext only (streams/tools/broker.py).

The broker must advertise the terminator's port, not its own: clients reconnect to the address
in the metadata, and that connection must go through TLS too.
"""
from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from streams.tools.broker import _die_with_parent, wait_for_port

STUNNEL = shutil.which("stunnel4") or shutil.which("stunnel")


@dataclass(frozen=True)
class Certs:
    """PEM files: `ca` signs `server` (localhost, 127.0.0.1) and `client`; `other_ca` signs
    nothing here (a client trusting only it refuses the server). `client_key` is encrypted with
    `client_key_password`."""

    ca: Path
    server: Path
    server_key: Path
    client: Path
    client_key: Path
    client_key_password: str
    other_ca: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
                 issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def make_certs(directory: Path) -> Certs:
    """A CA, a server and a client certificate it signs, and an unrelated CA, in `directory`."""
    pem = serialization.Encoding.PEM
    pkcs8 = serialization.PrivateFormat.PKCS8
    ca_key, other_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("memstream test CA", ca_key, _name("memstream test CA"), ca_key, ca=True)
    other = _certificate("another CA", other_key, _name("another CA"), other_key, ca=True)
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    server = _certificate("localhost", server_key, ca.subject, ca_key, ca=False)
    client = _certificate("memstream client", client_key, ca.subject, ca_key, ca=False)
    password = "client key password"
    return Certs(
        ca=_write(directory / "ca.pem", ca.public_bytes(pem)),
        server=_write(directory / "server.pem", server.public_bytes(pem)),
        server_key=_write(directory / "server.key", server_key.private_bytes(
            pem, pkcs8, serialization.NoEncryption())),
        client=_write(directory / "client.pem", client.public_bytes(pem)),
        client_key=_write(directory / "client.key", client_key.private_bytes(
            pem, pkcs8, serialization.BestAvailableEncryption(password.encode()))),
        client_key_password=password,
        other_ca=_write(directory / "other-ca.pem", other.public_bytes(pem)),
    )


class Stunnel:
    """stunnel accepting TLS on 127.0.0.1:`accept_port` with `certs.server`, forwarding plaintext
    to 127.0.0.1:`connect_port`; with `client_certificates`, only clients showing a certificate
    of `certs.ca` (mutual TLS). Use as a context manager; it dies with its parent."""

    def __init__(self, accept_port: int, connect_port: int, certs: Certs, directory: Path,
                 client_certificates: bool = False) -> None:
        self.accept_port = accept_port
        self.connect_port = connect_port
        self.config = directory / "stunnel.conf"
        self.log_path = directory / "stunnel.log"
        self.config.write_text(
            "foreground = yes\npid =\ndebug = 4\n[kafka]\n"
            f"accept = 127.0.0.1:{accept_port}\nconnect = 127.0.0.1:{connect_port}\n"
            f"cert = {certs.server}\nkey = {certs.server_key}\n"
            + (f"requireCert = yes\nverifyChain = yes\nCAfile = {certs.ca}\n"
               if client_certificates else ""))
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> "Stunnel":
        assert STUNNEL is not None, "stunnel is not installed"
        self._proc = subprocess.Popen([STUNNEL, str(self.config)], stdout=open(self.log_path, "ab"),
                                      stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        wait_for_port("127.0.0.1", self.accept_port, 20.0, self._proc)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)

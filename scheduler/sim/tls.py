"""A self-signed serving certificate, made with the `openssl` command line tool.

`cryptography` is not among muster's dependencies; openssl is on every machine sim runs on.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


class TlsError(RuntimeError):
    """The certificate could not be generated; the message says what to install or fix."""


@dataclass(frozen=True)
class ServingCert:
    """A certificate and key on disk; the certificate doubles as the clients' CA."""

    cert_path: Path
    key_path: Path

    def server_context(self) -> ssl.SSLContext:
        """An SSL context that serves this certificate."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(self.cert_path), str(self.key_path))
        return context


def self_signed(directory: Path, host: str) -> ServingCert:
    """Generate a P-256 self-signed certificate valid for `host`, 127.0.0.1 and localhost."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError("--tls needs the `openssl` command; install openssl or run without --tls")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "sim.crt", directory / "sim.key"
    names = {"IP:127.0.0.1", "DNS:localhost"}
    names.add(f"IP:{host}" if host.replace(".", "").isdigit() or ":" in host else f"DNS:{host}")
    command = [
        openssl,
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(cert),
        "-days",
        "365",
        "-subj",
        "/CN=muster-sim",
        "-addext",
        "subjectAltName=" + ",".join(sorted(names)),
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
        "-addext",
        "extendedKeyUsage=serverAuth",
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise TlsError(f"openssl could not create a certificate: {result.stderr.strip()}")
    return ServingCert(cert, key)

"""sim's certificate authority: a CA, the serving certificate it signs, and client certificates.

Made with the `openssl` command line tool, which is on every machine sim runs on.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class TlsError(RuntimeError):
    """A certificate could not be generated; the message says what to install or fix."""


@dataclass(frozen=True)
class ClientCert:
    """A client certificate and its key on disk (CN = user, O = groups)."""

    cert_path: Path
    key_path: Path


@dataclass(frozen=True)
class ServingCert:
    """sim's CA and the serving certificate it signed, on disk."""

    ca_path: Path
    ca_key_path: Path
    cert_path: Path
    key_path: Path

    def server_context(self) -> ssl.SSLContext:
        """Serve this certificate; verify client certificates (when sent) against the CA.

        CERT_OPTIONAL, as kube-apiserver's --client-ca-file: a client without a certificate
        may still use a token, a certificate of another CA fails the handshake.
        """
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(self.cert_path), str(self.key_path))
        context.load_verify_locations(cafile=str(self.ca_path))
        context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def client_cert(self, directory: Path, user: str, groups: Sequence[str] = ()) -> ClientCert:
        """Sign a client certificate for `user` in `groups` (valid one year)."""
        if not user:
            raise TlsError("a client certificate needs a user name (its CN)")
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
        key, csr, cert = (directory / f"client-{stem}{ext}" for ext in (".key", ".csr", ".crt"))
        subject = "".join(f"/O={_escape(g)}" for g in groups) + f"/CN={_escape(user)}"
        _openssl(
            "a client key",
            *("req", "-new", "-newkey", *_EC, "-nodes", "-keyout", str(key), "-out", str(csr)),
            *("-subj", subject),
        )
        extensions = directory / f"client-{stem}.ext"
        extensions.write_text(
            "basicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\n"
            "extendedKeyUsage=clientAuth\n"
        )
        _sign(csr, cert, self, extensions)
        return ClientCert(cert, key)


_EC = ["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]


def _escape(value: str) -> str:
    # openssl -subj separates fields with / and takes \ as the escape
    return value.replace("\\", "\\\\").replace("/", "\\/")


def _openssl(what: str, *args: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError(
            "muster sim needs the `openssl` command for its certificates; install openssl, "
            "or run `muster sim --insecure` (plain HTTP, no authentication)"
        )
    result = subprocess.run([openssl, *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise TlsError(f"openssl could not create {what}: {result.stderr.strip()}")


def _sign(csr: Path, cert: Path, ca: ServingCert, extensions: Path) -> None:
    _openssl(
        f"the certificate {cert.name}",
        *("x509", "-req", "-in", str(csr), "-CA", str(ca.ca_path), "-CAkey", str(ca.ca_key_path)),
        *("-CAcreateserial", "-out", str(cert), "-days", "365", "-sha256"),
        *("-extfile", str(extensions)),
    )


def make_ca(directory: Path, host: str) -> ServingCert:
    """A P-256 CA and a serving certificate it signs for `host`, 127.0.0.1 and localhost."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = directory / "ca.crt", directory / "ca.key"
    _openssl(
        "the CA",
        *("req", "-x509", "-newkey", *_EC, "-nodes", "-keyout", str(ca_key), "-out", str(ca_cert)),
        *("-days", "365", "-subj", "/CN=muster-sim-ca"),
        *("-addext", "basicConstraints=critical,CA:TRUE"),
        *("-addext", "keyUsage=critical,digitalSignature,keyCertSign,cRLSign"),
    )
    ca_key.chmod(0o600)
    pki = ServingCert(ca_cert, ca_key, directory / "sim.crt", directory / "sim.key")
    csr = directory / "sim.csr"
    _openssl(
        "the serving key",
        *("req", "-new", "-newkey", *_EC, "-nodes", "-keyout", str(pki.key_path)),
        *("-out", str(csr), "-subj", "/CN=muster-sim"),
    )
    names = {"IP:127.0.0.1", "DNS:localhost", "DNS:kubernetes.default.svc"}
    names.add(f"IP:{host}" if host.replace(".", "").isdigit() or ":" in host else f"DNS:{host}")
    extensions = directory / "sim.ext"
    extensions.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        f"subjectAltName={','.join(sorted(names))}\n"
    )
    _sign(csr, pki.cert_path, pki, extensions)
    return pki

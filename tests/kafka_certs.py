"""A throwaway certificate authority for TLS tests: broker and client certificates as PEM files.

Apache Kafka reads them as they are (``ssl.keystore.type=PEM``: one file with the
PKCS#8 private key and the certificate chain; ``ssl.truststore.type=PEM``: the CA).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_PEM = serialization.Encoding.PEM


@dataclass(frozen=True)
class CertificateFiles:
    """The files one test CA wrote."""

    ca: Path  # the CA certificate: the clients' KAFKA_SSL_CAFILE, the brokers' truststore
    broker_keystore: Path  # the broker's key, certificate and the CA, for ssl.keystore.location
    client_cert: Path  # a client certificate signed by the CA
    client_key: Path  # its private key, encrypted with ``client_key_password``
    client_key_password: str
    other_ca: Path  # a CA that signed nothing here: trusting it must fail


def make_certificates(folder: Path, client_key_password: str) -> CertificateFiles:
    """A CA, a broker certificate for 127.0.0.1 and localhost, and a client certificate."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _authority("goaicore test CA")
    _, other_cert = _authority("another CA")
    broker_key, broker_cert = _leaf(ca_key, ca_cert, "broker", server=True)
    client_key, client_cert = _leaf(ca_key, ca_cert, "goaicore-client", server=False)

    files = CertificateFiles(
        ca=folder / "ca.pem",
        broker_keystore=folder / "broker.pem",
        client_cert=folder / "client.pem",
        client_key=folder / "client.key",
        client_key_password=client_key_password,
        other_ca=folder / "other-ca.pem",
    )
    files.ca.write_bytes(ca_cert.public_bytes(_PEM))
    files.other_ca.write_bytes(other_cert.public_bytes(_PEM))
    files.broker_keystore.write_bytes(
        broker_key.private_bytes(
            _PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        + broker_cert.public_bytes(_PEM)
        + ca_cert.public_bytes(_PEM)
    )
    files.client_cert.write_bytes(client_cert.public_bytes(_PEM))
    files.client_key.write_bytes(
        client_key.private_bytes(
            _PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(client_key_password.encode()),
        )
    )
    return files


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return builder.not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(
        now + datetime.timedelta(days=7)
    )


def _authority(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    return key, _validity(builder).sign(key, hashes.SHA256())


def _leaf(
    ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, common_name: str, server: bool
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return key, _validity(builder).sign(ca_key, hashes.SHA256())

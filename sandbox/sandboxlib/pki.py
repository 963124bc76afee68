"""Local PKI for the sandbox API server: a CA, a serving cert for 127.0.0.1, the service-account key pair.

Uses the `openssl` CLI when present (no Python dependency), else the `cryptography` package.
"""

import datetime
import ipaddress
import os
import shutil
import subprocess
import tempfile

SERVER_SANS = ["127.0.0.1", "10.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
FILES = ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "sa.key", "sa.pub")


def ensure(pki_dir):
    """Create the PKI files once; later calls reuse them so kubeconfigs stay valid across restarts."""
    os.makedirs(pki_dir, mode=0o700, exist_ok=True)
    if all(os.path.exists(os.path.join(pki_dir, f)) for f in FILES):
        return "reused"
    if shutil.which("openssl"):
        _with_openssl(pki_dir)
        return "openssl"
    _with_cryptography(pki_dir)
    return "cryptography"


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _san_line():
    parts = []
    for name in SERVER_SANS:
        try:
            ipaddress.ip_address(name)
            parts.append("IP:" + name)
        except ValueError:
            parts.append("DNS:" + name)
    return "subjectAltName=" + ",".join(parts)


def _with_openssl(d):
    _openssl("genrsa", "-out", "ca.key", "2048", cwd=d)
    _openssl(
        "req",
        "-x509",
        "-new",
        "-key",
        "ca.key",
        "-days",
        "3650",
        "-subj",
        "/CN=rlark-sandbox-ca",
        "-out",
        "ca.crt",
        cwd=d,
    )
    _openssl("genrsa", "-out", "apiserver.key", "2048", cwd=d)
    _openssl("req", "-new", "-key", "apiserver.key", "-subj", "/CN=kube-apiserver", "-out", "apiserver.csr", cwd=d)
    with tempfile.NamedTemporaryFile("w", suffix=".cnf", dir=d, delete=False) as ext:
        ext.write(_san_line() + "\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n")
    try:
        _openssl(
            "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "3650", "-extfile", ext.name, "-out", "apiserver.crt", cwd=d,
        )  # fmt: skip
    finally:
        os.unlink(ext.name)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def _with_cryptography(d):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def key():
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def write_key(name, k):
        pem = k.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
        with open(os.path.join(d, name), "wb") as fh:
            fh.write(pem)

    def write_cert(name, cert):
        with open(os.path.join(d, name), "wb") as fh:
            fh.write(cert.public_bytes(serialization.Encoding.PEM))

    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(subject, issuer, public_key, signer, extensions):
        builder = x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
        builder = builder.serial_number(x509.random_serial_number()).not_valid_before(now)
        builder = builder.not_valid_after(now + datetime.timedelta(days=3650))
        for ext, critical in extensions:
            builder = builder.add_extension(ext, critical=critical)
        return builder.sign(signer, hashes.SHA256())

    ca_key, srv_key, sa_key = key(), key(), key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rlark-sandbox-ca")])
    ca = cert(ca_name, ca_name, ca_key.public_key(), ca_key, [(x509.BasicConstraints(ca=True, path_length=None), True)])
    sans = []
    for name in SERVER_SANS:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    srv_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    srv = cert(
        srv_name,
        ca_name,
        srv_key.public_key(),
        ca_key,
        [
            (x509.SubjectAlternativeName(sans), False),
            (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        ],
    )
    write_key("ca.key", ca_key)
    write_cert("ca.crt", ca)
    write_key("apiserver.key", srv_key)
    write_cert("apiserver.crt", srv)
    write_key("sa.key", sa_key)
    with open(os.path.join(d, "sa.pub"), "wb") as fh:
        fh.write(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


# The data-plane kube-apiservers reach rlark-sim's kubelet endpoints over TLS, both sides verified:
# the kubelet serves kubelet.crt (127.0.0.1) and accepts only clients signed by the sandbox CA.
KUBELET_FILES = {
    "kubelet": ("kubelet", "serverAuth", "IP:127.0.0.1,DNS:localhost"),
    "kubelet-client": ("kube-apiserver-kubelet-client", "clientAuth", None),
}


def ensure_kubelet(pki_dir):
    """kubelet.crt/key and kubelet-client.crt/key signed by the CA of ensure(); made once, then reused."""
    for name, (cn, usage, sans) in KUBELET_FILES.items():
        if all(os.path.exists(os.path.join(pki_dir, name + ext)) for ext in (".crt", ".key")):
            continue
        if shutil.which("openssl"):
            _issue_openssl(pki_dir, name, cn, usage, sans)
        else:
            _issue_cryptography(pki_dir, name, cn, usage, sans)


def _issue_openssl(d, name, cn, usage, sans):
    _openssl("genrsa", "-out", name + ".key", "2048", cwd=d)
    subj = "/O=system:masters/CN=" + cn if usage == "clientAuth" else "/CN=" + cn
    _openssl("req", "-new", "-key", name + ".key", "-subj", subj, "-out", name + ".csr", cwd=d)
    with tempfile.NamedTemporaryFile("w", suffix=".cnf", dir=d, delete=False) as ext:
        ext.write(("subjectAltName=%s\n" % sans if sans else "") + "extendedKeyUsage=%s\n" % usage)
        ext.write("keyUsage=digitalSignature,keyEncipherment\n")
    try:
        _openssl(
            "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "3650", "-extfile", ext.name, "-out", name + ".crt", cwd=d,
        )  # fmt: skip
    finally:
        os.unlink(ext.name)
        os.unlink(os.path.join(d, name + ".csr"))


def _issue_cryptography(d, name, cn, usage, sans):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    with open(os.path.join(d, "ca.key"), "rb") as fh:
        ca_key = serialization.load_pem_private_key(fh.read(), password=None)
    with open(os.path.join(d, "ca.crt"), "rb") as fh:
        ca = x509.load_pem_x509_certificate(fh.read())
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if usage == "clientAuth":
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"))
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(ca.subject)
    builder = builder.public_key(key.public_key()).serial_number(x509.random_serial_number())
    builder = builder.not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
    oid = ExtendedKeyUsageOID.SERVER_AUTH if usage == "serverAuth" else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = builder.add_extension(x509.ExtendedKeyUsage([oid]), critical=False)
    if sans:
        names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    with open(os.path.join(d, name + ".key"), "wb") as fh:
        fh.write(pem)
    with open(os.path.join(d, name + ".crt"), "wb") as fh:
        fh.write(cert.public_bytes(serialization.Encoding.PEM))

"""The exporter-toolkit web-config.yml (TLS, basic auth), validated with every problem listed."""

from __future__ import annotations

import os
import re
import ssl
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from npumon.yamlfile import LineOf, YamlFileError, key_path, load_yaml, on_line

TLSVersion = Literal["TLS10", "TLS11", "TLS12", "TLS13"]
ClientAuth = Literal["NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"]
Header = Literal[
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "X-XSS-Protection",
    "Strict-Transport-Security",
]  # exporter-toolkit's set; the values it checks:
_HEADER_VALUES = {"X-Content-Type-Options": ("nosniff",), "X-Frame-Options": ("deny", "sameorigin")}
_TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
_VERIFY_MODES = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_BCRYPT = re.compile(r"\$2[aby]\$[0-9][0-9]\$[./A-Za-z0-9]{53}\Z")  # ASCII digits only
BCRYPT_MIN_COST = 4  # the least bcrypt (and Go's bcrypt) accepts
# bcrypt takes 2**cost rounds: each step doubles a check. Go's bcrypt (exporter-toolkit) takes up
# to 31; npumon stops at 14 (about one second a check here, docs/privileges.md), as every
# uncached login, reload and password revocation waits for one check on the one bcrypt thread.
BCRYPT_MAX_COST = 14
_UNSUPPORTED = "is valid for exporter-toolkit but not supported by npumon"
_STRICT = ConfigDict(extra="forbid", frozen=True)
_FILES = ("cert_file", "key_file", "client_ca_file")
# What exporter-toolkit knows and npumon cannot honour, refused by name with the reason: the
# client_auth_types that do not verify the certificate they ask for (Python's ssl cannot), keys.
_UNVERIFIED = ("RequestClientCert", "RequireAnyClientCert")
_FILES_ONLY = "use the *_file keys; OpenSSL picks ciphers"
_REFUSED = {
    "rate_limit": "rate-limit in a proxy or with scrape_interval",
    "tls_server_config.cert": _FILES_ONLY,
    "tls_server_config.key": _FILES_ONLY,
    "tls_server_config.client_ca": _FILES_ONLY,
    "tls_server_config.client_allowed_sans": _FILES_ONLY,
    "tls_server_config.cipher_suites": _FILES_ONLY,
    "tls_server_config.prefer_server_cipher_suites": _FILES_ONLY,
    "tls_server_config.curve_preferences": _FILES_ONLY,
}


class WebConfigError(ValueError):
    """Every problem of a web-config file at once, each as 'dotted.path: message'."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source, self.problems = source, problems
        super().__init__(f"{source}: " + "; ".join(problems))


def _bcrypt_hash(value: str) -> str:
    if not _BCRYPT.match(value):
        raise ValueError("not a bcrypt hash ($2a$/$2b$/$2y$, 60 characters), e.g. htpasswd -nBC 10")
    cost = int(value[4:6])
    if cost < BCRYPT_MIN_COST:  # bcrypt itself refuses these
        raise ValueError(
            f"bcrypt cost {cost} is below bcrypt's least ({BCRYPT_MIN_COST}), e.g. htpasswd -nBC 10"
        )
    if cost > BCRYPT_MAX_COST:
        raise ValueError(
            f"bcrypt cost {cost} is above npumon's limit of {BCRYPT_MAX_COST} (each step doubles "
            "the time of a check, and logins, reloads and revocations wait for it; see "
            "docs/privileges.md): hash it again with a lower cost, e.g. htpasswd -nBC 10"
        )
    return value


def _user(name: str) -> str:
    if not name or ":" in name:
        raise ValueError("a user name must be non-empty and without ':'")
    return name


_User = Annotated[str, AfterValidator(_user)]
_BcryptHash = Annotated[str, AfterValidator(_bcrypt_hash)]


class TLSServerConfig(BaseModel):
    """tls_server_config: the file-based subset of exporter-toolkit's keys."""

    model_config = _STRICT
    cert_file: str
    key_file: str
    client_auth_type: ClientAuth = "NoClientCert"
    client_ca_file: str | None = None
    min_version: TLSVersion = "TLS12"
    max_version: TLSVersion = "TLS13"


class HTTPServerConfig(BaseModel):
    """http_server_config: extra response headers; http2 is accepted and ignored (HTTP/1.1)."""

    model_config = _STRICT
    http2: bool = True
    headers: dict[Header, str] = Field(default_factory=dict)

    @field_validator("headers")
    @classmethod
    def _values(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            allowed = _HEADER_VALUES.get(name, (value,))
            if value not in allowed:
                raise ValueError(f"{name} must be {' or '.join(allowed)} (as exporter-toolkit)")
            if any(c in value for c in "\r\n\0"):
                raise ValueError(f"{name}: the value must be one line")
        return headers


class WebConfig(BaseModel):
    """The whole web-config.yml; an empty file means plain HTTP without auth."""

    model_config = _STRICT
    tls_server_config: TLSServerConfig | None = None
    http_server_config: HTTPServerConfig = Field(default_factory=HTTPServerConfig)
    basic_auth_users: dict[_User, _BcryptHash] = Field(default_factory=dict)


def load_web_config(path: str | os.PathLike[str]) -> WebConfig:
    """Read and validate a web-config file (file names relative to its folder), or raise
    WebConfigError listing every problem: schema, missing files, unloadable certificates."""
    try:
        document = load_yaml(Path(path))
    except YamlFileError as exc:
        raise WebConfigError(str(path), [str(exc)]) from None
    base = Path(path).resolve().parent
    return parse_web_config(document.data, base=base, source=str(path), lines=document.line)


def parse_web_config(
    data: object, *, base: Path, source: str = "<web-config>", lines: LineOf | None = None
) -> WebConfig:
    """Validate already-loaded YAML data (see load_web_config); ``lines``: a key path's line."""
    try:
        config = WebConfig.model_validate({} if data is None else data)
    except ValidationError as exc:
        raise WebConfigError(source, [_problem(e, lines) for e in exc.errors()]) from None
    tls = config.tls_server_config
    if tls is None:
        return config
    tls = tls.model_copy(update={n: str(base / v) for n in _FILES if (v := getattr(tls, n))})
    where, problems = "tls_server_config", []
    if tls.client_auth_type != "NoClientCert" and tls.client_ca_file is None:
        problems.append(f"{where}.client_ca_file: required when client_auth_type verifies certs")
    if tls.client_auth_type == "NoClientCert" and tls.client_ca_file is not None:
        # exporter-toolkit: "client CA's have been configured without a Client Auth Policy";
        # serving anyway would let clients in without a certificate.
        problems.append(
            f"{where}.client_ca_file: set without client_auth_type, so no client certificate"
            " would be asked for; add client_auth_type: RequireAndVerifyClientCert"
        )
    if _TLS_VERSIONS[tls.min_version] > _TLS_VERSIONS[tls.max_version]:
        problems.append(f"{where}.min_version: {tls.min_version} is above max_version")
    for name in _FILES:
        file = getattr(tls, name)
        if file is not None and not os.access(file, os.R_OK):
            problems.append(f"{where}.{name}: cannot read the file it names")
    if not problems:
        try:
            ssl_context(tls)
        except (ssl.SSLError, OSError) as exc:
            problems.append(f"{where}: cannot load the certificate, key or CA: {exc}")
    if problems:
        raise WebConfigError(source, problems)
    return config.model_copy(update={"tls_server_config": tls})


def _problem(error: ErrorDetails, lines: LineOf | None) -> str:
    """``line 3: basic_auth_users.alice: message``; pydantic's messages hold no input value."""
    loc, msg = error["loc"], error["msg"]
    if loc and loc[-1] == "[key]":  # pydantic's marker for a bad mapping key
        loc, msg = loc[:-1], f"not an allowed key: {msg}"
    elif error["type"] == "extra_forbidden" and key_path(loc) in _REFUSED:
        msg = f"{_UNSUPPORTED}; {_REFUSED[key_path(loc)]}"
    elif error["type"] == "literal_error" and error["input"] in _UNVERIFIED:
        msg = f"{error['input']} {_UNSUPPORTED}; use {' or '.join(get_args(ClientAuth)[1:])}"
    return f"{on_line(lines(loc) if lines else None)}{key_path(loc)}: {msg}"


def ssl_context(tls: TLSServerConfig) -> ssl.SSLContext:
    """A server-side SSLContext for the TLS settings (the files are read here)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _TLS_VERSIONS[tls.min_version]
    context.maximum_version = _TLS_VERSIONS[tls.max_version]
    context.load_cert_chain(tls.cert_file, tls.key_file)
    context.verify_mode = _VERIFY_MODES[tls.client_auth_type]
    if tls.client_ca_file is not None:
        context.load_verify_locations(cafile=tls.client_ca_file)
    return context

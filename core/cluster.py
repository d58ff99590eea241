"""Reaching a Dask scheduler for a sweep: ``tcp://`` in plaintext (one machine, or a private network you trust), or
``tls://`` with certificates: Dask's own security settings (``distributed.comm.tls.*`` in its config files or
``DASK_DISTRIBUTED__COMM__TLS__*`` variables), which the command line's --tls-* options set for one sweep.

    with tls_config(ca_file, cert, key):            # {} when none is given: Dask's config as it is
        client = Client(address, security=security(address))
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from gradflow.core.config import ConfigError

TLS_KEYS = {"ca_file": "distributed.comm.tls.ca-file", "cert": "distributed.comm.tls.client.cert",
            "key": "distributed.comm.tls.client.key"}


def add_tls_arguments(parser):
    """--tls-ca-file / --tls-cert / --tls-key: the files of a tls:// cluster (else Dask's config)."""
    parser.add_argument("--tls-ca-file", metavar="PEM", help="with --cluster tls://…: the CA certificate that signed "
                        "the scheduler's (default: Dask's config, distributed.comm.tls.ca-file)")
    parser.add_argument("--tls-cert", metavar="PEM", help="with --cluster tls://…: this client's certificate "
                        "(default: distributed.comm.tls.client.cert)")
    parser.add_argument("--tls-key", metavar="PEM", help="with --cluster tls://…: this client's private key, if not "
                        "in --tls-cert (default: distributed.comm.tls.client.key)")


@contextlib.contextmanager
def tls_config(ca_file: str | None = None, cert: str | None = None, key: str | None = None):
    """Dask's config with the files given here as its TLS settings, for the duration of the block."""
    given = {TLS_KEYS[name]: str(Path(value).expanduser()) for name, value in
             (("ca_file", ca_file), ("cert", cert), ("key", key)) if value}
    if not given:
        yield
        return
    import dask
    with dask.config.set(given):
        yield


def check_address(address: str):
    """ConfigError naming `address` where it is no Dask scheduler's address (tcp://HOST:PORT, tls://...), or naming
    the extra where Dask distributed is not installed; the sweep checks this before it writes anything."""
    try:
        from distributed.comm import get_address_host_port
    except ImportError:
        raise ConfigError("--cluster needs Dask distributed: pip install 'gradient-flow-explorer[cluster]'") from None
    try:
        host, port = get_address_host_port(address)
        problem = "" if host and 0 < port < 2**16 else "it needs a host and a port in 1..65535"
    except ValueError as e:
        problem = str(e)
    if problem:
        raise ConfigError(f"--cluster {address!r} is not a Dask scheduler's address (e.g. tcp://HOST:8786): "
                          f"{problem}")


def security(address: str):
    """The distributed.Security to reach `address` with: from Dask's config; for tls:// it must name the CA
    certificate and this client's certificate, each a readable file (ConfigError saying which is missing)."""
    from distributed import Security
    settings: Any = Security()   # its tls_* attributes are set from Dask's config at run time
    if not address.startswith("tls://"):
        return settings
    needed = {"--tls-ca-file (distributed.comm.tls.ca-file)": settings.tls_ca_file,
              "--tls-cert (distributed.comm.tls.client.cert)": settings.tls_client_cert}
    missing = [name for name, value in needed.items() if not value]
    if missing:
        raise ConfigError(f"--cluster {address} is TLS: it needs {' and '.join(missing)}, the certificates its "
                          "scheduler was started with (README, 'On a cluster')")
    for value in (settings.tls_ca_file, settings.tls_client_cert, settings.tls_client_key):
        if value and "-----BEGIN" not in value and not Path(value).is_file():   # Dask takes a PEM's text too
            raise ConfigError(f"--cluster {address}: TLS file not found: {value}")
    return settings

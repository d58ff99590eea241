"""--cluster tls://: a sweep reaches a Dask scheduler that requires TLS with the certificates given by --tls-* (or
Dask's config), and without them is refused naming what it needs, before anything trains (core.cluster)."""
from __future__ import annotations

import csv
import shutil
import subprocess

import pytest
from gradflow.core.sweep import main

pytestmark = pytest.mark.slow

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """(certificate, key): one self-signed certificate, its own CA, for scheduler, worker and client alike."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


@pytest.fixture(scope="module")
def tls_cluster(pem):
    cert, key = pem
    security = distributed.Security(tls_ca_file=cert, tls_scheduler_cert=cert, tls_scheduler_key=key,
                                    tls_worker_cert=cert, tls_worker_key=key, tls_client_cert=cert,
                                    tls_client_key=key, require_encryption=True)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  protocol="tls://", security=security) as cluster:
        yield cluster.scheduler_address


def test_a_tls_cluster_runs_the_sweep_with_the_certificates_given(tmp_path, pem, tls_cluster, capsys):
    cert, key = pem
    assert tls_cluster.startswith("tls://")
    out = tmp_path / "s.csv"
    assert main(["--grid", "seq_len=10,12", "--set", "hidden_size=8", "--steps", "1", "--out", str(out),
                 "--cluster", tls_cluster, "--tls-ca-file", cert, "--tls-cert", cert, "--tls-key", key]) == 0
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and all(row["error"] == "" for row in rows)


def test_a_tls_cluster_without_certificates_is_refused_naming_them(tmp_path, tls_cluster, capsys):
    assert main(["--grid", "seq_len=10", "--steps", "1", "--out", str(tmp_path / "s.csv"),
                 "--cluster", tls_cluster]) == 2
    err = capsys.readouterr().err
    assert f"--cluster {tls_cluster} is TLS: it needs --tls-ca-file" in err and "--tls-cert" in err
    assert not (tmp_path / "s.csv").read_text().strip().count("\n")   # the header only: nothing trained

"""The operator's scrape-time series and the helpers behind the dashboard's check series."""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from preflight_operator.core import constants, remediation
from preflight_operator.core.podresults import PodResult
from preflight_operator.runtime import metrics


def _cert(not_after: datetime.datetime) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vllm-preflight.gpu-system.svc")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
        .not_valid_after(not_after)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def test_certificate_not_after_reads_utctime_and_generalizedtime() -> None:
    for when in (  # RFC 5280: UTCTime up to 2049, GeneralizedTime from 2050
        datetime.datetime(2027, 3, 4, 5, 6, 7, tzinfo=datetime.timezone.utc),
        datetime.datetime(2051, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc),
    ):
        assert metrics.certificate_not_after(_cert(when)) == when


def test_certificate_not_after_is_none_for_what_is_not_a_certificate() -> None:
    assert metrics.certificate_not_after(b"") is None
    assert metrics.certificate_not_after(b"-----BEGIN CERTIFICATE-----\n!!\n-----END") is None
    assert metrics.certificate_not_after(b"\x30\x82\xff\xff") is None


def samples() -> dict[str, float]:
    """The scrape-time series as Prometheus would read them from /metrics."""
    names = ("vllm_preflight_leader", "vllm_preflight_webhook_certificate_expiry_timestamp_seconds")
    text = generate_latest(metrics.REGISTRY).decode()
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in names
    }


def test_scrape_shows_leadership_and_certificate_expiry(tmp_path: Path) -> None:
    when = datetime.datetime(2027, 3, 4, tzinfo=datetime.timezone.utc)
    (tmp_path / "tls.crt").write_bytes(_cert(when))
    leading = [True]
    metrics.track(leader=lambda: leading[0], cert_file=tmp_path / "tls.crt")
    try:
        assert samples() == {
            "vllm_preflight_leader": 1.0,
            "vllm_preflight_webhook_certificate_expiry_timestamp_seconds": when.timestamp(),
        }
        leading[0] = False
        (tmp_path / "tls.crt").write_text("rotated to garbage")
        assert samples() == {"vllm_preflight_leader": 0.0}
    finally:
        metrics.track(leader=None, cert_file=None)


def _pod(started: str, finished: str) -> dict[str, object]:
    return {
        "metadata": {"namespace": "llm", "name": "p"},
        "status": {
            "initContainerStatuses": [
                {"name": constants.INSTALL_CONTAINER, "state": {"terminated": {}}},
                {
                    "name": constants.CHECK_CONTAINER,
                    "state": {"terminated": {"startedAt": started, "finishedAt": finished}},
                },
            ]
        },
    }


def test_check_seconds_from_the_kubelets_timestamps() -> None:
    assert metrics.check_seconds(_pod("2026-12-01T08:00:00Z", "2026-12-01T08:00:07Z")) == 7.0
    assert metrics.check_seconds(_pod("", "2026-12-01T08:00:07Z")) is None
    assert metrics.check_seconds(_pod("2026-12-01T08:00:09Z", "2026-12-01T08:00:07Z")) is None
    assert metrics.check_seconds({"status": {}}) is None


def test_record_check_counts_by_namespace_and_observes_duration() -> None:
    result = PodResult(
        pod="p", uid="u", node="n", verdict="fail", exit_code=1, restarts=0,
        checked_at="2026-12-01T08:00:07Z", reason="gpu-count",
    )  # fmt: skip
    counter = metrics.CHECKS.labels(namespace="llm", result="fail", reason="gpu-count")
    before = counter._value.get()
    durations = metrics.CHECK_DURATION.labels(result="fail")
    count_before = durations._sum.get()
    metrics.record_check(_pod("2026-12-01T08:00:00Z", "2026-12-01T08:00:07Z"), result)
    assert counter._value.get() == before + 1
    assert durations._sum.get() == count_before + 7.0


def test_known_label_sets_start_at_zero() -> None:
    """The alerts' and the dashboard's error and remediation series exist before any error."""
    text = generate_latest(metrics.REGISTRY).decode()
    for remedy in remediation.ACTIVE:
        assert f'vllm_preflight_remediations_total{{action="applied",type="{remedy}"}}' in text
    assert 'vllm_preflight_reconcile_errors_total{stage="api"}' in text
    assert 'vllm_preflight_admission_reviews_total{outcome="error",webhook="validate"}' in text

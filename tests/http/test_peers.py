"""The forwarding signature: only a worker holding the deployment's secret makes one."""

from __future__ import annotations

from pathlib import Path

from goaicore.config import Settings
from goaicore_store.http.peers import MAX_SKEW_SECONDS, ForwardSigner

NOW = 1_900_000_000.0


def _signer(tmp_path: Path, **given: object) -> ForwardSigner:
    return ForwardSigner(Settings(env={}, data_dir=tmp_path, **given))  # type: ignore[arg-type]


def test_a_signature_holds_for_its_method_and_path_and_for_a_while(tmp_path: Path) -> None:
    signer = _signer(tmp_path, worker_secret="shared-secret-0123456789")
    value = signer.sign("GET", "/v1/conversations/a", now=NOW)
    assert signer.verifies(value, "GET", "/v1/conversations/a", now=NOW + MAX_SKEW_SECONDS)
    assert not signer.verifies(value, "POST", "/v1/conversations/a", now=NOW)
    assert not signer.verifies(value, "GET", "/v1/conversations/b", now=NOW)
    assert not signer.verifies(value, "GET", "/v1/conversations/a", now=NOW + 2 * MAX_SKEW_SECONDS)
    for forged in (None, "", "1", f"{int(NOW)}.", f"{int(NOW)}.{'0' * 64}", "x.y", "\udcff.1"):
        assert not signer.verifies(forged, "GET", "/v1/conversations/a", now=NOW)


def test_only_the_same_secret_verifies_and_it_is_never_shown(tmp_path: Path) -> None:
    value = _signer(tmp_path, worker_secret="shared-secret-0123456789").sign("GET", "/", now=NOW)
    other = _signer(tmp_path, worker_secret="another-secret-0123456789")
    assert not other.verifies(value, "GET", "/", now=NOW)
    assert "secret" not in repr(other)
    tokens = ("token-one-0123456789abcdef", "token-two-0123456789abcdef")
    by_tokens = _signer(tmp_path, http_tokens=tokens).sign("GET", "/", now=NOW)
    assert _signer(tmp_path, http_tokens=tokens[::-1]).verifies(by_tokens, "GET", "/", now=NOW)
    assert not _signer(tmp_path, http_tokens=tokens[:1]).verifies(by_tokens, "GET", "/", now=NOW)

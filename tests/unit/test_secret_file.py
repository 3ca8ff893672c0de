"""Every secret's file (a password, the site's private key, the console's accounts) is
read one way: issue 35's "refuse group- or world-readable password files"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pitwatch.secret_file import SecretFileError, read_secret
from pitwatch.site_key import SiteKeyError, load_private


def test_a_file_its_owner_alone_may_open_is_read(tmp_path: Path) -> None:
    f = tmp_path / "secret"
    f.write_bytes(b"s3cret\n")
    f.chmod(0o600)
    assert read_secret(f) == b"s3cret\n"
    f.chmod(0o400)
    assert read_secret(f) == b"s3cret\n"


@pytest.mark.parametrize(("mode", "who"), [(0o640, "its group"), (0o620, "its group"),
                                           (0o604, "others"), (0o602, "others")])
def test_a_file_others_may_read_or_write_is_refused_with_the_fix(
        tmp_path: Path, mode: int, who: str) -> None:
    f = tmp_path / "secret"
    f.write_bytes(b"s3cret")
    f.chmod(mode)
    with pytest.raises(SecretFileError, match=rf"is open to {who} .*chmod 600") as e:
        read_secret(f)
    assert "s3cret" not in str(e.value)


def test_the_site_key_is_read_the_same_way(tmp_path: Path) -> None:
    key = tmp_path / "site-key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(key)],
                   check=True, capture_output=True)
    key.chmod(0o600)
    assert load_private(key) is not None
    key.chmod(0o644)
    with pytest.raises(SiteKeyError, match=r"site key: .* is open to others"):
        load_private(key)

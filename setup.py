"""Build-time metadata pyproject.toml cannot hold statically: where this copy lives.

The repository's address is not fixed (every fork builds its own wheel), so it is taken from
``PULSARLAB_REPOSITORY_URL``, else the checkout's ``git remote get-url origin`` (an sdist
passes on what it was built with in ``PKG-INFO``). Known, it
gives the project URLs (Source, Issues, Tutorials, Binder) and the PyPI page's README with
its relative links made absolute and a Binder badge of that repository. Unknown (an sdist, a
checkout without a remote), the URLs are left out and a relative link keeps only its text,
so PyPI never shows a dead link or a made-up owner.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")
_BINDER_BADGE = re.compile(r"^<!-- binder-badge -->.*$", re.MULTILINE)


def repository_url() -> str | None:
    """``https://host/owner/name`` of this copy, or ``None`` when it cannot be known."""
    url = os.environ.get("PULSARLAB_REPOSITORY_URL", "").strip()
    pkg_info = HERE / "PKG-INFO"  # building the wheel from an sdist: what the sdist knew
    if not url and pkg_info.is_file():
        found = re.search(r"^Project-URL: Source, (\S+)$", pkg_info.read_text("utf-8"),
                          re.MULTILINE)
        url = found.group(1) if found else ""
    if not url and not pkg_info.is_file():
        try:
            url = subprocess.run(
                ["git", "remote", "get-url", "origin"], cwd=HERE, capture_output=True,
                text=True, timeout=10, check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):(.+)", url)  # git@github.com:owner/name.git
    if scp:
        url = f"https://{scp.group(1)}/{scp.group(2)}"
    url = url.removesuffix("/").removesuffix(".git")
    return url if re.fullmatch(r"https://[\w.-]+/[\w.-]+/[\w.-]+", url) else None


def binder_url(repo: str) -> str | None:
    """The mybinder.org launch URL of a GitHub repository (``None`` for other hosts)."""
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+)", repo)
    if not match:
        return None
    return (f"https://mybinder.org/v2/gh/{match.group(1)}/{match.group(2)}/HEAD"
            "?urlpath=lab/tree/notebooks")


def pypi_readme(text: str, repo: str | None) -> str:
    """README.md as PyPI should show it: no relative link survives."""

    def absolute(match: re.Match[str]) -> str:
        bang, label, target = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:|#", target):
            return match.group(0)
        if repo is None:
            return label if not bang else ""
        kind = "raw" if bang else "blob"
        return f"{bang}[{label}]({repo}/{kind}/HEAD/{target.lstrip('./')})"

    text = _LINK.sub(absolute, text)
    binder = binder_url(repo) if repo else None
    badge = (f"[![Binder](https://mybinder.org/badge_logo.svg)]({binder})" if binder else "")
    return _BINDER_BADGE.sub(badge, text)


def project_urls(repo: str | None) -> dict[str, str]:
    if repo is None:
        return {}
    urls = {"Source": repo, "Issues": f"{repo}/issues",
            "Tutorials": f"{repo}/tree/HEAD/notebooks"}
    binder = binder_url(repo)
    if binder:
        urls["Binder"] = binder
    return urls


if __name__ == "__main__":
    REPO = repository_url()
    setup(
        project_urls=project_urls(REPO),
        long_description=pypi_readme((HERE / "README.md").read_text(encoding="utf-8"), REPO),
        long_description_content_type="text/markdown",
    )

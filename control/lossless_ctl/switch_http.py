"""Requests to p4-switch's statistics and port configuration endpoint (`--stats-addr`)."""

from __future__ import annotations

import urllib.error
import urllib.request


class StatsError(Exception):
    pass


def request(
    address: str, path: str, method: str = "GET", body: bytes | None = None, timeout: float = 10.0
) -> bytes:
    """The answer's body; a StatsError naming the URL (with the switch's reason) otherwise."""
    url = f"http://{address}{path}"
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as err:
        reason = err.read().decode(errors="replace").strip()
        raise StatsError(f"{url}: {err.code}: {reason}") from err
    except (urllib.error.URLError, OSError) as err:
        raise StatsError(f"{url}: {err}") from err

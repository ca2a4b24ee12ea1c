"""A sweep's blocks on a Dask `distributed` cluster: the scheduler reached (or refused in one
line within `SCHEDULER_TIMEOUT_S`), then every block submitted to its workers."""

from __future__ import annotations

import re
import socket
import threading
from typing import Any

# Seconds a scheduler has to accept a connection and answer Dask's handshake; a refusal
# (nothing listening, garbage, no answer) comes within about this time.
SCHEDULER_TIMEOUT_S = 6.0
# Address schemes of Dask's comms that reach a scheduler over the network; the default is tcp.
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
_ADDRESS = re.compile(
    r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[^\]]+\]|[^:/\s]+):(?P<port>\d+)/?$"
)


def parse_scheduler(address: str, name: str = "scheduler") -> tuple[str, str, int]:
    """`(scheme, host, port)` of a scheduler address `[scheme://]host:port`, or a one-line
    `ValueError` naming `name` (the parameter, or the command line's option).

    ```python
    parse_scheduler("tcp://127.0.0.1:8786")  # ("tcp", "127.0.0.1", 8786)
    ```
    """
    text = address.strip() if isinstance(address, str) else None
    found = _ADDRESS.match(text) if text else None
    if found is None:
        raise ValueError(
            f"{name} must be a Dask scheduler address [scheme://]host:port (e.g. "
            f"tcp://127.0.0.1:8786), got {address!r}"
        )
    scheme = found["scheme"] or "tcp"
    if scheme not in SCHEMES:
        raise ValueError(
            f"{name} must use one of the schemes {', '.join(SCHEMES)}, got {address!r}"
        )
    port = int(found["port"])
    if not 1 <= port <= 65535:
        raise ValueError(f"{name} port must be in 1..65535, got {address!r}")
    return scheme, found["host"].strip("[]"), port


def connect_scheduler(
    address: str, *, timeout: float = SCHEDULER_TIMEOUT_S, name: str = "scheduler"
):
    """A `distributed.Client` of the scheduler at `address`, or a one-line `ValueError` naming
    `name` within about `timeout` seconds (twice at most): an address that is not one, a port
    where nothing listens or that does not accept within `timeout`, a listener that answers
    with something other than Dask's handshake (garbage, an HTTP server) or does not answer.

    The handshake runs in a daemon thread watched for `timeout` seconds, so that a listener
    which announces a huge message and then stalls cannot hold the caller.

    ```python
    client = connect_scheduler("tcp://127.0.0.1:8786")
    ```
    """
    try:
        from distributed import Client
    except ImportError:
        raise ValueError(
            f"{name} needs dask.distributed: pip install 'inductheory[distributed]'"
        ) from None
    scheme, host, port = parse_scheduler(address, name)
    if scheme in ("tcp", "tls", "ws", "wss"):
        try:  # a closed port fails here at once (Dask would retry until its timeout)
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as err:
            reason = (
                f"no answer within {timeout:g} s"
                if isinstance(err, TimeoutError)
                else err.strerror or err
            )
            raise ValueError(f"{name} {address!r}: cannot connect ({reason})") from None
    outcome: dict[str, Any] = {}

    def attempt() -> None:
        try:
            # not the process's default client: a handshake that fails or stalls in this
            # thread must not leave dask's scheduler set to a client that never came
            outcome["client"] = Client(address, timeout=timeout, set_as_default=False)
        except BaseException as err:  # noqa: BLE001 (reported by the caller, in one line)
            outcome["error"] = err

    thread = threading.Thread(target=attempt, daemon=True, name="scheduler handshake")
    thread.start()
    thread.join(timeout + 1.0)
    if "client" in outcome:
        return outcome["client"]
    if thread.is_alive():
        raise ValueError(
            f"{name} {address!r}: connected, but no Dask scheduler answered within "
            f"{timeout:g} s"
        )
    err = outcome.get("error")
    raise ValueError(
        f"{name} {address!r} does not answer as a Dask scheduler ({type(err).__name__}: "
        f"{str(err).splitlines()[0] if str(err) else 'no message'})"
    )


def run_on_cluster(compute_block, spec, blocks, todo, scheduler, finish) -> None:
    """Submit every block of `todo` to the cluster of `scheduler` (an address, reached with
    `connect_scheduler`, or a `distributed.Client`) and `finish(b, arrays)` each as it ends."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ValueError(
            "a scheduler address needs dask.distributed: pip install 'inductheory[distributed]'"
        ) from None
    client = (
        scheduler if isinstance(scheduler, Client) else connect_scheduler(scheduler)
    )
    try:
        futures = {
            client.submit(compute_block, spec, blocks[b], pure=False): b for b in todo
        }
        for future in as_completed(futures):
            finish(futures[future], future.result())
    finally:
        if client is not scheduler:
            client.close()


__all__ = [
    "SCHEDULER_TIMEOUT_S",
    "connect_scheduler",
    "parse_scheduler",
    "run_on_cluster",
]

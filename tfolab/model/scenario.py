"""What a scenario is: the application script and the knobs, as plain data.

This is the one contract the model, the runner, the lab files and the UI share.
It is pure data: no I/O, no clock. Every field can be set from a lab file
(`labs/*.toml`) and from the command line with `--set KEY=VALUE`.

Rules:
- Field names are the `--set` keys, so they are stable and self-explaining.
- The same ScenarioConfig drives the simulation and the real run; a knob that
  only one side can honour says so in its comment.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

Pattern = Literal["rr", "wwr"]
ClientFastOpen = Literal["off", "sendto", "connect"]
CookieCache = Literal["flush", "warm", "keep"]


@dataclass(frozen=True)
class ScenarioConfig:
    # --- the application script -------------------------------------------
    # "rr": request/response. The client sends one request line of
    #       request_bytes (ending in '\n'); the server (line mode) answers with
    #       the same line. Headline: connect()/sendto() start -> first response byte.
    # "wwr": write-write-read. The client writes first_write_bytes, then
    #       second_write_bytes ending in '\n', then reads the echoed line.
    #       Headline: one round, first write -> last byte of the echo.
    pattern: Pattern = "rr"
    # True: every iteration is a fresh connection (handshake, fastopen).
    # False: every iteration is one round on a single connection (delack).
    fresh_connection_each_iteration: bool = True
    request_bytes: int = 16
    first_write_bytes: int = 10
    second_write_bytes: int = 6

    # --- TCP Fast Open -------------------------------------------------------
    # Client: "off" (connect + write), "sendto" (sendto(MSG_FASTOPEN)),
    # "connect" (TCP_FASTOPEN_CONNECT, then connect + write).
    client_fastopen: ClientFastOpen = "off"
    # Server listener TCP_FASTOPEN queue length; 0 = the sockopt is not set.
    server_fastopen_qlen: int = 0
    # net.ipv4.tcp_fastopen inside the lab namespace (bits: 0x1 client,
    # 0x2 server, 0x4 client without cookie, 0x200 server without cookie).
    fastopen_sysctl: int = 0x1
    # Client cookie cache before iteration 1: "flush" (empty: the first TFO
    # connection requests a cookie), "warm" (flush, then one unmeasured
    # connection learns a cookie), "keep" (whatever an earlier scenario left).
    cookie_cache: CookieCache = "flush"
    # Change the server's TFO key just before this iteration (1-based; 0 = never).
    # The client's cached cookie then no longer validates.
    rotate_key_before_iteration: int = 0
    # Model only: the server's TFO queue is full, so SYN data is not accepted.
    fastopen_queue_full: bool = False

    # --- Nagle and friends (client side) --------------------------------------
    nodelay: bool = False  # TCP_NODELAY
    cork: bool = False  # TCP_CORK around the two writes, uncork after the second
    msg_more: bool = False  # first write with MSG_MORE
    single_write: bool = False  # one write of first+second bytes instead of two

    # --- delayed ACK (server side) ---------------------------------------------
    server_quickack: bool = False  # TCP_QUICKACK before every read
    pingpong_thresh: int = 1  # net.ipv4.tcp_pingpong_thresh (namespace)

    # --- the lab network -------------------------------------------------------
    mtu: int = 65536  # the namespace's lo MTU (1500 for realistic segments)
    autocorking: bool = True  # net.ipv4.tcp_autocorking (namespace)

    def with_settings(self, settings: dict[str, str]) -> ScenarioConfig:
        """Apply KEY=VALUE strings (from --set or a lab file), type-checked."""
        return dataclasses.replace(self, **parse_settings(settings))


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(ScenarioConfig)]


class SettingError(ValueError):
    """A --set KEY=VALUE the scenario cannot take; the message says why and what fits."""


def parse_settings(settings: dict[str, str]) -> dict[str, object]:
    """Turn string settings into typed values, with one clear error per bad key."""
    fields = {f.name: f for f in dataclasses.fields(ScenarioConfig)}
    defaults = ScenarioConfig()
    typed: dict[str, object] = {}
    for key, raw in settings.items():
        if key not in fields:
            raise SettingError(
                f"unknown setting {key!r}; known settings: {', '.join(sorted(fields))}"
            )
        default = getattr(defaults, key)
        typed[key] = _parse_value(key, raw, default)
    return typed


_CHOICES: dict[str, tuple[str, ...]] = {
    "pattern": ("rr", "wwr"),
    "client_fastopen": ("off", "sendto", "connect"),
    "cookie_cache": ("flush", "warm", "keep"),
}


def _parse_value(key: str, raw: object, default: object) -> object:
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise SettingError(f"setting {key} wants true or false, got {raw!r}")
    if isinstance(default, int):
        if isinstance(raw, int) and not isinstance(raw, bool):
            value = raw
        else:
            try:
                value = int(str(raw).strip(), 0)
            except ValueError:
                raise SettingError(f"setting {key} wants a whole number, got {raw!r}") from None
        if value < 0:
            raise SettingError(f"setting {key} cannot be negative, got {raw!r}")
        return value
    text = str(raw).strip()
    choices = _CHOICES.get(key)
    if choices and text not in choices:
        raise SettingError(f"setting {key} wants one of {', '.join(choices)}, got {raw!r}")
    return text

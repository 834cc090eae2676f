"""What a scenario is: the application script and the knobs, as plain data.

This is the one contract the model, the runner, the lab files and the UI share.
It is pure data: no I/O, no clock. Every field can be set from a lab file
(`tfolab/lab/labs/*.toml`) and from the command line with `--set KEY=VALUE`.

Rules:
- The one schema: each setting's name, type, default and limits are declared
  once, on its field below (choices come from its Literal type, ranges from
  `limits(...)` metadata). The lab loader, `--set`, the runner's job and the
  UI's knobs all read them from here; LIMITS and CHOICES are derived.
- Field names are the `--set` keys, so they are stable and self-explaining.
- The same ScenarioConfig drives the simulation and the real run; a knob that
  only one side can honour says so in its comment.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_type_hints

from tfolab.model.drops import Drop, parse_drops
from tfolab.model.fastopen import syn_data_space

Pattern = Literal["rr", "wwr"]
ClientFastOpen = Literal["off", "sendto", "connect"]
# A middlebox on the lab's path (model/path.py): none, or one that drops a SYN with
# data, one that removes the Fast Open option from SYNs and SYN-ACKs, or one that
# drops a SYN with that option.
Middlebox = Literal["none", "drop-syn-data", "strip-tfo-option", "drop-tfo-syn"]
CookieCache = Literal["flush", "warm", "keep"]

# The limits of a run, shared by the CLI, the lab files, the UI and the model.
MAX_DELAY_MS = 1000.0  # one-way delay D
MAX_ITERATIONS = 200  # per scenario
# The largest request or write pair: the model's limit (the native client's is 1 MiB).
MAX_PAYLOAD_BYTES = 1_000_000
# The lab's sockets start with this send buffer (net.ipv4.tcp_wmem[1] in its namespace,
# Linux's default tcp_wmem[2]), so tcp_sendmsg copies a write of MAX_PAYLOAD_BYTES whole
# (its skbs' truesize stays below sk_sndbuf) and never sleeps in sk_stream_wait_memory
# while ACKs come back: where and when the rest of a write is copied would race the ACKs.
SEND_BUFFER_BYTES = 4_194_304
# replay_syn: the replay leaves this long after the connection before it is over
# on the server (its client's close + 3D), so it reaches the listener.
REPLAY_GAP_MS = 20.0
# A run captures until this long after 3D past the last segment it expects (after a
# replay: 4D after the replayed SYN leaves, plus this), so a late answer is seen.
CAPTURE_TAIL_MS = 60.0


def limits(low: int, high: int, unit: str = "", *, hexadecimal: bool = False) -> dict[str, object]:
    """A whole-number setting's inclusive range, as dataclass field metadata."""
    return {"limits": (low, high), "unit": unit, "hexadecimal": hexadecimal}


@dataclass(frozen=True)
class ScenarioConfig:
    # --- the application script -------------------------------------------
    # "rr": request/response. The client sends one request line of
    #       request_bytes (ending in '\n'); the server (line mode) answers with
    #       the same line, or with response_bytes. Headline: connect()/sendto()
    #       start -> first response byte (with response_bytes: its last byte).
    # "wwr": write-write-read. The client writes first_write_bytes, then
    #       second_write_bytes ending in '\n', then reads the echoed line (or
    #       response_bytes). Headline: one round, first write -> last byte.
    pattern: Pattern = "rr"
    # True: every iteration is a fresh connection (handshake, fastopen).
    # False: every iteration is one round on a single connection (delack).
    fresh_connection_each_iteration: bool = True
    request_bytes: int = field(default=16, metadata=limits(1, MAX_PAYLOAD_BYTES, "bytes"))
    first_write_bytes: int = field(default=10, metadata=limits(1, MAX_PAYLOAD_BYTES, "bytes"))
    second_write_bytes: int = field(default=6, metadata=limits(1, MAX_PAYLOAD_BYTES, "bytes"))
    # 0: the server echoes each line. N: it answers each line with a line of N
    # bytes instead (tfo-echo-server --response-bytes N), in one send().
    response_bytes: int = field(default=0, metadata=limits(0, MAX_PAYLOAD_BYTES, "bytes"))
    # The client reads each answer whole (tfo-echo-client --read-whole): SO_RCVLOWAT =
    # the answer's size (before connect(), where it fits in half the receive buffer, as
    # every answer inside the model's domain does), then poll() until the rest is in
    # before each read, so the kernel wakes it once, not at every segment that arrives.
    read_whole: bool = False

    # --- TCP Fast Open -------------------------------------------------------
    # Client: "off" (connect + write), "sendto" (sendto(MSG_FASTOPEN)),
    # "connect" (TCP_FASTOPEN_CONNECT, then connect + write).
    client_fastopen: ClientFastOpen = "off"
    # Server listener TCP_FASTOPEN queue length; 0 = the sockopt is not set.
    server_fastopen_qlen: int = field(default=0, metadata=limits(0, 1_000_000))
    # net.ipv4.tcp_fastopen inside the lab namespace (bits: 0x1 client,
    # 0x2 server, 0x4 client without cookie, 0x200 server without cookie).
    fastopen_sysctl: int = field(default=0x1, metadata=limits(0, 0xFFF, hexadecimal=True))
    # Client cookie cache before iteration 1: "flush" (empty: the first TFO
    # connection requests a cookie), "warm" (flush, then one unmeasured
    # connection learns a cookie), "keep" (whatever an earlier scenario left).
    cookie_cache: CookieCache = "flush"
    # Change the server's TFO key just before this iteration (1-based; 0 = never).
    # The client's cached cookie then no longer validates.
    rotate_key_before_iteration: int = field(default=0, metadata=limits(0, MAX_ITERATIONS))
    # Model only (`tfolab run` refuses it): the server's TFO queue is full, so
    # SYN data is not accepted.
    fastopen_queue_full: bool = False
    # The last iteration is no client call: an attacker resends the SYN of
    # iteration 1 (its data and valid cookie, byte for byte) from a raw socket,
    # REPLAY_GAP after the previous iteration's close, once that connection is
    # over on the server. Needs Fast Open, fresh connections and 2+ iterations.
    replay_syn: bool = False

    # --- Nagle and friends (client side) --------------------------------------
    nodelay: bool = False  # TCP_NODELAY
    cork: bool = False  # TCP_CORK around the two writes, uncork after the second
    msg_more: bool = False  # first write with MSG_MORE
    single_write: bool = False  # one write of first+second bytes instead of two

    # --- delayed ACK (server side) ---------------------------------------------
    server_quickack: bool = False  # TCP_QUICKACK before every read
    # net.ipv4.tcp_pingpong_thresh (namespace)
    pingpong_thresh: int = field(default=1, metadata=limits(1, 255))

    # --- the lab network -------------------------------------------------------
    # the namespace's lo MTU (1500 for realistic segments)
    mtu: int = field(default=65536, metadata=limits(128, 65536, "bytes"))
    # Packets the path loses, by their order in an iteration (tfolab.model.drops):
    # "client:1,client:2" loses the client's SYN and its first retransmission.
    drop: tuple[Drop, ...] = field(default=(), metadata={"parse": parse_drops})
    # A middlebox on the path, for every connection of the scenario (the warm-up's too)
    middlebox: Middlebox = "none"
    # net.ipv4.tcp_autocorking is no setting: the model is netem's link, which
    # orphans a queued skb so autocorking never holds a write; the NFQUEUE
    # stand-in holds packets at the receiving end, orphaned too (TCP-NOTES).

    @property
    def headline_to_last_byte(self) -> bool:
        """Does the headline end at the answer's last byte (wwr, or a set response size)?"""
        return self.pattern == "wwr" or self.response_bytes > 0

    def answer_bytes(self, message_bytes: int) -> int:
        """The server's answer to a line of message_bytes: the echo, or response_bytes."""
        return self.response_bytes or message_bytes

    def with_settings(self, settings: dict[str, object]) -> ScenarioConfig:
        """Apply KEY=VALUE strings (from --set or a lab file), each one type- and range-checked.

        The combination rules are `check()`'s: a lab file may set them over
        several tables, so they apply to the finished config only.
        """
        return self.with_typed(parse_settings(settings))

    def with_typed(self, values: dict[str, object]) -> ScenarioConfig:
        """This config with values parse_settings already typed and range-checked."""
        # Any: each value already has its own field's type (parse_settings checked it).
        typed: dict[str, Any] = values
        return dataclasses.replace(self, **typed)

    def check(self) -> ScenarioConfig:
        """Every rule a setting or a combination must follow, or SettingError naming the key.

        The one place for what the model, the native client and the runner
        would each reject later: callers check here before anything starts.
        """
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise SettingError(f"setting {name} wants a whole number, got {value!r}", name)
            if not low <= value <= high:
                raise SettingError(_range_message(name, value), name)
        for name, choices in CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                raise SettingError(
                    f"setting {name} wants one of {', '.join(choices)}, got {value!r}", name
                )
        if self.pattern == "wwr":
            total = self.first_write_bytes + self.second_write_bytes
            if total > MAX_PAYLOAD_BYTES:
                raise SettingError(
                    f"first_write_bytes + second_write_bytes must be at most "
                    f"{MAX_PAYLOAD_BYTES}, got {self.first_write_bytes} + "
                    f"{self.second_write_bytes}",
                    "second_write_bytes",
                    "first_write_bytes",
                    "pattern",
                )
            if self.client_fastopen != "off":
                raise SettingError(
                    f"client_fastopen={self.client_fastopen} does not combine with pattern=wwr "
                    "(write-write-read is modelled without Fast Open)",
                    "client_fastopen",
                    "pattern",
                )
        if self.replay_syn:
            self._check_replay()
        if self.single_write and self.msg_more:
            raise SettingError(
                "single_write and msg_more do not combine: MSG_MORE needs a second write",
                "msg_more",
                "single_write",
            )
        if self.client_fastopen != "off" and not self.fastopen_sysctl & 0x1:
            raise SettingError(
                f"client_fastopen={self.client_fastopen} needs bit 0x1 in fastopen_sysctl "
                f"(got {self.fastopen_sysctl:#x}): without it the kernel answers EOPNOTSUPP",
                "fastopen_sysctl",
                "client_fastopen",
            )
        return self

    def _check_replay(self) -> None:
        """replay_syn replays a SYN whose data the server accepted: everything must allow it."""
        # a kernel from 6.5's room: domain.py refuses more on older ones
        syn_room = syn_data_space(self.mtu, linear=False)
        needs = {
            "client_fastopen": self.client_fastopen != "off",
            "pattern": self.pattern == "rr",
            "fresh_connection_each_iteration": self.fresh_connection_each_iteration,
            "cookie_cache": self.cookie_cache == "warm",
            "server_fastopen_qlen": self.server_fastopen_qlen > 0,
            # 0x4 without 0x200: the client sends its data with no cookie and the server,
            # needing one, never accepts it (tcp_fastopen_cookie_check, tcp_try_fastopen)
            "fastopen_sysctl": self.fastopen_sysctl & 0x3 == 0x3
            and (not self.fastopen_sysctl & 0x4 or bool(self.fastopen_sysctl & 0x200)),
            "rotate_key_before_iteration": self.rotate_key_before_iteration == 0,
            "fastopen_queue_full": not self.fastopen_queue_full,
            "request_bytes": self.request_bytes <= syn_room,
        }
        for key, ok in needs.items():
            if not ok:
                raise SettingError(
                    "replay_syn replays a Fast Open SYN whose request the server accepted: it "
                    "needs client_fastopen sendto or connect, pattern rr on fresh connections, "
                    "cookie_cache warm, server_fastopen_qlen > 0, fastopen_sysctl with 0x3 "
                    "(and 0x200 where it has 0x4: a client that sends data without a cookie "
                    "is heard only by a server that needs none), no key rotation, no full queue "
                    f"and a request that fits in the SYN ({syn_room} bytes here); {key} does "
                    "not fit",
                    key,
                    "replay_syn",
                )


class SettingError(ValueError):
    """A setting the scenario cannot take; the message says why and what fits.

    `keys` are the settings involved, the one best changed first.
    """

    def __init__(self, message: str, *keys: str) -> None:
        super().__init__(message)
        self.keys = keys

    @property
    def key(self) -> str | None:
        return self.keys[0] if self.keys else None


def _schema() -> tuple[
    dict[str, tuple[int, int]], dict[str, str], set[str], dict[str, tuple[str, ...]]
]:
    """LIMITS, units, hexadecimal keys and CHOICES, read off ScenarioConfig's declarations."""
    hints = get_type_hints(ScenarioConfig)
    ranges: dict[str, tuple[int, int]] = {}
    units: dict[str, str] = {}
    hexadecimal: set[str] = set()
    choices: dict[str, tuple[str, ...]] = {}
    for item in dataclasses.fields(ScenarioConfig):
        if "parse" in item.metadata:
            continue  # its own parser checks it (a list, not one of a few words)
        if "limits" in item.metadata:
            ranges[item.name] = item.metadata["limits"]
            if item.metadata["unit"]:
                units[item.name] = item.metadata["unit"]
            if item.metadata["hexadecimal"]:
                hexadecimal.add(item.name)
        elif args := get_args(hints[item.name]):
            choices[item.name] = tuple(args)
    return ranges, units, hexadecimal, choices


# Derived from the declarations above, never written out again.
LIMITS, _UNITS, _HEXADECIMAL, CHOICES = _schema()


def _range_message(key: str, value: int) -> str:
    low, high = LIMITS[key]
    shown = f"{low:#x} to {high:#x}" if key in _HEXADECIMAL else f"{low} to {high}"
    unit = f" {_UNITS[key]}" if key in _UNITS else ""
    return f"setting {key} must be {shown}{unit}, got {value}"


def parse_settings(settings: dict[str, object]) -> dict[str, object]:
    """Turn string settings into typed values, with one clear error per bad key."""
    fields = {f.name: f for f in dataclasses.fields(ScenarioConfig)}
    defaults = ScenarioConfig()
    typed: dict[str, object] = {}
    for key, raw in settings.items():
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1)
            known = ", ".join(sorted(fields))
            hint = f": did you mean {close[0]!r}? Known" if close else "; known"
            raise SettingError(f"unknown setting {key!r}{hint} settings: {known}", key)
        default = getattr(defaults, key)
        parse = fields[key].metadata.get("parse")
        typed[key] = _parsed(key, raw, parse) if parse else _parse_value(key, raw, default)
    return typed


def _parsed(key: str, raw: object, parse: Any) -> object:
    """A setting with its own parser (a list of drops): already typed, or its text parsed."""
    if isinstance(raw, tuple):
        return raw
    if not isinstance(raw, str):
        raise SettingError(f"setting {key} wants text such as client:1, got {raw!r}", key)
    try:
        return parse(raw)
    except ValueError as err:
        raise SettingError(f"setting {key}: {err}", key) from None


def _parse_value(key: str, raw: object, default: object) -> object:
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise SettingError(f"setting {key} wants true or false, got {raw!r}", key)
    if isinstance(default, int):
        value = _whole_number(key, raw)
        if key in LIMITS and not LIMITS[key][0] <= value <= LIMITS[key][1]:
            raise SettingError(_range_message(key, value), key)
        if value < 0:
            raise SettingError(f"setting {key} cannot be negative, got {raw!r}", key)
        return value
    if isinstance(raw, bool | int | float):
        raise SettingError(
            f"setting {key} wants one of {', '.join(CHOICES.get(key, ()))}, got {raw!r}", key
        )
    text = str(raw).strip()
    choices = CHOICES.get(key)
    if choices and text not in choices:
        raise SettingError(f"setting {key} wants one of {', '.join(choices)}, got {raw!r}", key)
    return text


def _whole_number(key: str, raw: object) -> int:
    """An int from 16, "16", "0x207" or "1e6"; never from a bool or a fraction."""
    if isinstance(raw, bool):
        raise SettingError(f"setting {key} wants a whole number, got {raw!r}", key)
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if math.isfinite(number) and number == int(number):
        return int(number)
    raise SettingError(f"setting {key} wants a whole number, got {raw!r}", key)

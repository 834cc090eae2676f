"""TCP options as typed values: the one vocabulary of the model's segments and the capture's.

Rules:
- One frozen Struct per option kind, tagged by `kind`, so a list of them
  crosses the runner's frames typed (runner/protocol.py) and compares by value.
- `label()` is the one spelling every screen, sentence and the JSON contract
  use ("mss 1460", "sackOK", "TS", "wscale 7", "TFO cookie request",
  "TFO cookie 8B", "TFO cookie 0a1b2c3d4e5f6071", "... (exp. kind 254)").
  Nothing parses a label back.
- `comparable()` is what both sides can state: a cookie's bytes are the
  server's secret (the model names a cookie, the capture shows its bytes), so
  a cookie compares by its option kind and length only; a request stays a
  request, of its own kind. Every other option compares whole.
- Options keep the order the kernel writes them in (tcp_options_write):
  MSS, SACK permitted, timestamps, window scale, then Fast Open.
"""

from __future__ import annotations

import msgspec

FASTOPEN_KIND = 34  # RFC 7413
EXPERIMENTAL_KIND = 254  # with the magic 0xF989: the pre-RFC Fast Open option


class Mss(msgspec.Struct, frozen=True, tag="mss", tag_field="kind"):
    value: int

    def label(self) -> str:
        return f"mss {self.value}"


class SackPermitted(msgspec.Struct, frozen=True, tag="sack-permitted", tag_field="kind"):
    def label(self) -> str:
        return "sackOK"


class Timestamps(msgspec.Struct, frozen=True, tag="timestamps", tag_field="kind"):
    """Present or not: their values are clocks, which the model does not state."""

    def label(self) -> str:
        return "TS"


class WindowScale(msgspec.Struct, frozen=True, tag="window-scale", tag_field="kind"):
    shift: int

    def label(self) -> str:
        return f"wscale {self.shift}"


class SackBlocks(msgspec.Struct, frozen=True, tag="sack", tag_field="kind"):
    count: int  # how many (left, right) blocks

    def label(self) -> str:
        return f"sack {self.count}"


class FastOpen(msgspec.Struct, frozen=True, tag="fastopen", tag_field="kind"):
    """A cookie request (cookie_length 0) or a cookie, in option 34 or experimental 254."""

    option_kind: int = FASTOPEN_KIND
    cookie_length: int = 0
    cookie_hex: str = ""  # its bytes where they are known (a capture); "" otherwise

    @property
    def is_request(self) -> bool:
        return self.cookie_length == 0

    def label(self) -> str:
        if self.is_request:
            what = "TFO cookie request"
        else:
            what = f"TFO cookie {self.cookie_hex or f'{self.cookie_length}B'}"
        if self.option_kind == FASTOPEN_KIND:
            return what
        return f"{what} (exp. kind {self.option_kind})"

    def comparable(self) -> FastOpen:
        return FastOpen(self.option_kind, self.cookie_length)


class OtherOption(msgspec.Struct, frozen=True, tag="other", tag_field="kind"):
    """An option kind neither side models (only a capture has one)."""

    option_kind: int

    def label(self) -> str:
        return f"opt {self.option_kind}"


class Malformed(msgspec.Struct, frozen=True, tag="malformed", tag_field="kind"):
    """A length byte that runs past the header: the rest of the options is unreadable."""

    def label(self) -> str:
        return "bad option"


TcpOption = (
    Mss | SackPermitted | Timestamps | WindowScale | SackBlocks | FastOpen | OtherOption | Malformed
)


def comparable(option: TcpOption) -> TcpOption:
    """The option as both sides can state it (a cookie without its bytes)."""
    return option.comparable() if isinstance(option, FastOpen) else option


def labels(options: tuple[TcpOption, ...] | list[TcpOption]) -> list[str]:
    return [option.label() for option in options]


def fastopen_of(options: tuple[TcpOption, ...] | list[TcpOption]) -> FastOpen | None:
    """The Fast Open option among `options`, if there is one."""
    return next((o for o in options if isinstance(o, FastOpen)), None)


def syn_options(mss: int, wscale: int) -> tuple[TcpOption, ...]:
    """A SYN's or SYN-ACK's options in the kernel's order (tcp_options_write)."""
    return (Mss(mss), SackPermitted(), Timestamps(), WindowScale(wscale))

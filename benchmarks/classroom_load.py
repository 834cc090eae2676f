"""A classroom at once: N browser sessions of `tfolab serve`, each running its lab for real.

Starts `tfolab serve --results DIR` on 127.0.0.1 (its token; as many places as
sessions), then N real websocket clients speaking textual-serve's protocol
(what the page's script sends: ["stdin", keys],
["resize", {...}]) connect at the same moment. Each types a session name, opens
the first lab, types its predictions and presses r; its run is over when the
session saves it in DIR.
Prints: measurements in band (%), slot wait p50/p99, time to result p50/p99
(from the key press to the saved result), memory per session (PSS of each
session's processes, read from /proc, while all are open), and what one more
tab and a script opening 300 tabs see while the class is full.

    python benchmarks/classroom_load.py --sessions 30 [--python PY] [--classes 10]

With --classes N it runs N classes one after the other, each in a process of
its own (a class's browsers give way to the CPU, which the next serve must not
inherit), and ends with one line per class: in band, packets, memory.

Started as root, serve drops to nobody: --python must then be an interpreter
nobody can run (serve says so if not). Measures for real: run it under the
machine's timing lock. Figures only; nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from tfolab.core import autogroup
from tfolab.core.slots import SlotTable

ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]")


def start_serve(python: str, results: Path, sessions: int) -> tuple[subprocess.Popen[bytes], str]:
    """serve, and its printed address (port and token). Every session comes from 127.0.0.1,
    so the cap per client is lifted to the class's size."""
    cap = str(max(sessions, 1))
    bounds = ["--max-sessions", cap, "--max-per-client", cap]
    process = subprocess.Popen(
        [python, "-m", "tfolab", "serve", "--port", "0", "--results", str(results), *bounds],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    seen = b""
    while b"Ctrl+C stops serving" not in seen:
        byte = process.stdout.read(1)
        if not byte:
            sys.exit(f"serve did not start: {seen.decode(errors='replace')}")
        seen += byte
    found = re.search(rb"127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]+)", seen)
    assert found is not None, seen
    return process, f"127.0.0.1:{found.group(1).decode()}/ws?token={found.group(2).decode()}"


class Student:
    def __init__(self, number: int, address: str, results: Path) -> None:
        self.name = f"student-{number:02d}"
        self.url = f"ws://{address}&width=140&height=45"
        self.results = results
        self.screen = ""
        self.pressed = 0.0
        self.result_s: float | None = None
        self.saved: dict[str, Any] | None = None
        self.ready = False  # its lab is open, r not pressed yet
        self.save_timeout_s = 600.0

    async def attend(self, http: aiohttp.ClientSession, all_open: asyncio.Event) -> None:
        async with http.ws_connect(self.url, max_msg_size=0) as websocket:
            reader = asyncio.create_task(self._read(websocket))
            try:
                await self._until("Your name", 180)
                await websocket.send_json(["stdin", self.name + "\r"])
                await self._until("Labs", 60)
                await asyncio.sleep(1)
                await websocket.send_json(["stdin", "\r"])  # the first lab, first scenario
                await self._until("Headline, iteration", 60)
                await asyncio.sleep(1)
                # Predict first, as a student must: one key at a time, since a key
                # reaches the field that has the focus when it is handled.
                for key in ("4", "D", "\t", "4", "D", "\r"):
                    await websocket.send_json(["stdin", key])
                    await asyncio.sleep(0.3)
                await self._until("Run for real", 60)
                await asyncio.sleep(1)
                self.ready = True
                await all_open.wait()
                self.pressed = time.monotonic()
                await websocket.send_json(["stdin", "r"])
                self.saved = await self._saved(self.save_timeout_s)
                self.result_s = time.monotonic() - self.pressed
            finally:
                reader.cancel()

    async def _read(self, websocket: aiohttp.ClientWebSocketResponse) -> None:
        async for message in websocket:
            if message.type == aiohttp.WSMsgType.BINARY:
                text = ESCAPES.sub("", message.data.decode(errors="replace"))
                self.screen = (self.screen + text)[-200_000:]

    async def _until(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.screen:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: no {text!r} in {timeout_s} s")
            await asyncio.sleep(0.2)
        self.screen = ""

    async def _saved(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for path in self.results.glob(f"run-*-{self.name}-*.json"):
                saved: dict[str, Any] = json.loads(path.read_text())
                return saved
            await asyncio.sleep(0.1)
        last = " ".join(self.screen[-3000:].split())[-600:]
        raise TimeoutError(f"{self.name}: no saved result in {timeout_s} s; its screen: {last}")


def session_pss_kib(serve_pid: int) -> list[int]:
    """PSS of each session: its UI process and everything under it (kB)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))

    def tree(pid: int) -> list[int]:
        return [pid] + [p for child in children.get(pid, []) for p in tree(child)]

    def pss(pid: int) -> int:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            return 0
        match = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
        return int(match.group(1)) if match else 0

    return [sum(pss(p) for p in tree(shell)) for shell in children.get(serve_pid, [])]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def classroom(
    sessions: int, address: str, results: Path, serve_pid: int, save_timeout_s: float = 600.0
) -> dict[str, Any]:
    students = [Student(i, address, results) for i in range(1, sessions + 1)]
    for student in students:
        student.save_timeout_s = save_timeout_s
    all_open = asyncio.Event()
    memory: list[int] = []
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        tasks = [asyncio.create_task(s.attend(http, all_open)) for s in students]
        while sum(1 for s in students if s.ready) < sessions:
            if any(t.done() for t in tasks):
                break
            await asyncio.sleep(0.5)
        memory = session_pss_kib(serve_pid)
        beyond = await beyond_the_class(address)  # the class is full: serve's --max-sessions
        all_open.set()
        done = await asyncio.gather(*tasks, return_exceptions=True)
    errors = [d for d in done if isinstance(d, BaseException)]
    figures = report(students, memory, errors)
    for line in beyond:
        print(line)
    return figures


async def _tab(http: aiohttp.ClientSession, url: str) -> int:
    try:
        async with http.ws_connect(url):
            return 101
    except aiohttp.WSServerHandshakeError as err:
        return err.status


async def beyond_the_class(address: str) -> list[str]:
    """What one more tab, and a script opening 300 tabs at once (from another address), see
    while every place is taken."""
    url = f"ws://{address}&width=80&height=24"
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.get("http://" + address.replace("/ws?", "/?")) as page:
            full = page.status, "The class is full" in await page.text()
        one_more = await _tab(http, url)
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0), limit=0)
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=connector) as http:
        tabs = await asyncio.gather(*(_tab(http, url) for _ in range(300)))
    took = time.monotonic() - started
    counts = ", ".join(f"{n} x {status}" for status, n in sorted(Counter(tabs).items()))
    return [
        f"one more session          page {full[0]} (class-is-full page: {full[1]}), "
        f"websocket {one_more}",
        f"a 300-tab script          {counts} in {took:.1f} s",
    ]


def report(
    students: list[Student], memory: list[int], errors: list[BaseException]
) -> dict[str, Any]:
    runs = [s.saved["payload"]["run"] for s in students if s.saved]
    iterations = [i for r in runs for sc in r["scenarios"] for i in sc["iterations"]]
    in_band = sum(1 for i in iterations if i.get("ok"))
    packets_ok = sum(1 for r in runs if all(not sc.get("packet_diff") for sc in r["scenarios"]))
    waits = [r["slot_wait_ms"] / 1000 for r in runs if r.get("slot_wait_ms") is not None]
    times = [s.result_s for s in students if s.result_s is not None]
    print(f"sessions                  {len(students)} ({len(runs)} saved a result)")
    if iterations:
        print(
            f"measurements in band      {100 * in_band / len(iterations):.1f} % "
            f"({in_band}/{len(iterations)}); runs with every packet as predicted "
            f"{packets_ok}/{len(runs)}"
        )
    misses = [
        (abs(i["measured_ms"] - i["predicted_ms"]) - i["tolerance_ms"], sc["name"], i["i"])
        for r in runs
        for sc in r["scenarios"]
        for i in sc["iterations"]
        if i.get("ok") is False
    ]
    if misses:
        off, name, number = max(misses)
        print(f"worst miss                {off:.1f} ms outside its band ({name} #{number})")
    disagreements = [
        d for r in runs for sc in r["scenarios"] for d in sc.get("packet_disagreements", [])
    ]
    for d in disagreements:
        print(f"packet disagreement       {d['kind']}: {d['sentence']}")
    repeats = [repeat for r in runs for repeat in r.get("repeats", [])]
    for repeat in repeats:
        print(
            f"repeated                  {repeat['scenario']}: iteration {repeat['iteration']} "
            f"{repeat['missed_by_ms']:.1f} ms late, the lab waited {repeat['cpu_wait_ms']:.1f} "
            "ms for a CPU"
        )
    cpu_waits = [
        i["cpu_wait_ms"]
        for r in runs
        for sc in r["scenarios"]
        for i in sc["iterations"]
        if "cpu_wait_ms" in i
    ]
    if cpu_waits:
        values = sorted(cpu_waits)
        print(
            f"waits for a CPU            per iteration p50 {percentile(values, 50):.2f} ms, "
            f"p99 {percentile(values, 99):.2f} ms, max {values[-1]:.2f} ms"
        )
    for r in runs:
        for sc in r["scenarios"]:
            for i in sc["iterations"]:
                late = sum(
                    1
                    for d in sc.get("packet_disagreements", [])
                    if d["kind"] == "arrival" and d.get("iteration") == i["i"]
                )
                if i.get("ok") is False or late:
                    print(
                        f"  missed: {sc['name']} #{i['i']} measured {i['measured_ms']} ms "
                        f"(band {i['predicted_ms']} ± {i['tolerance_ms']}), {late} late "
                        f"segments, the lab waited {i.get('cpu_wait_ms', '?')} ms for a CPU"
                    )
    if waits:
        print(f"slot wait                 p50 {percentile(waits, 50):.1f} s, "
              f"p99 {percentile(waits, 99):.1f} s (slots: {runs[0].get('slots')})")  # fmt: skip
    if times:
        print(f"time to result            p50 {percentile(times, 50):.1f} s, "
              f"p99 {percentile(times, 99):.1f} s")  # fmt: skip
    if memory:
        print(f"memory per session (PSS)  median {statistics.median(memory) / 1024:.0f} MiB, "
              f"max {max(memory) / 1024:.0f} MiB over {len(memory)} sessions")  # fmt: skip
    for error in errors[:5]:
        print(f"error: {error}")
    return {
        "sessions": len(students),
        "saved": len(runs),
        "in_band": in_band,
        "iterations": len(iterations),
        "packets_ok": packets_ok,
        "late_segments": sum(1 for d in disagreements if d["kind"] == "arrival"),
        "repeats": len(repeats),
        "tcp_disagreements": sum(1 for d in disagreements if d["kind"] != "arrival"),
        "worst_miss_ms": max(misses)[0] if misses else 0.0,
        "memory_mib": statistics.median(memory) / 1024 if memory else 0.0,
        "errors": len(errors),
    }


def stand_aside() -> None:
    """The simulated browsers would be on the students' laptops: here they give way to the
    measurements and to the sessions. They lead the low autogroup that serve joins
    (tfolab.core.autogroup) and, once serve runs, turn SCHED_IDLE inside it."""
    if not autogroup.lead_low_group():
        print("note: the simulated browsers share the CPU as usual (no autogroup of their own)")


def behind_the_sessions() -> None:
    """SCHED_IDLE for this thread (and the threads it starts), off the CPU that measuring
    runs keep free of UIs (tfolab.runner.served_class): only after serve started, since a child
    would inherit both and could not leave SCHED_IDLE."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    every = sorted(os.sched_getaffinity(0))
    spare = SlotTable.open().size
    if len(every) > spare:
        os.sched_setaffinity(0, set(every[: len(every) - spare]))


def classes(args: argparse.Namespace) -> None:
    """N classes, each a child process of its own; then one line per class."""
    rows = []
    for number in range(1, args.classes + 1):
        print(f"== class {number} of {args.classes}", flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            command = [sys.executable, __file__, "--sessions", str(args.sessions)]
            command += ["--python", args.python, "--save-timeout", str(args.save_timeout)]
            subprocess.run([*command, "--figures", out.name], check=False)
            text = Path(out.name).read_text()
        rows.append(json.loads(text) if text else {})
    print(
        f"\n{'class':>5}  {'in band':>13}  {'packets':>9}  {'late':>4}  {'TCP':>3}  "
        f"{'repeated':>8}  {'worst miss':>10}  {'PSS':>7}"
    )
    for number, row in enumerate(rows, 1):
        if not row:
            print(f"{number:>5}  (no figures: the class did not finish)")
            continue
        print(
            f"{number:>5}  {row['in_band']:>6}/{row['iterations']:<6}  "
            f"{row['packets_ok']:>4}/{row['saved']:<4}  {row['late_segments']:>4}  "
            f"{row['tcp_disagreements']:>3}  {row['repeats']:>8}  {row['worst_miss_ms']:>7.1f} ms  "
            f"{row['memory_mib']:>3.0f} MiB"
        )
    done = [r for r in rows if r]
    all_in = sum(1 for r in done if r["in_band"] == r["iterations"] > 0)
    print(
        f"classes all in band: {all_in} of {len(rows)}; measurements in band "
        f"{sum(r['in_band'] for r in done)}/{sum(r['iterations'] for r in done)}; runs with "
        f"every packet as predicted {sum(r['packets_ok'] for r in done)}/"
        f"{sum(r['saved'] for r in done)} (segments late: {sum(r['late_segments'] for r in done)}"
        f", TCP disagreements: {sum(r['tcp_disagreements'] for r in done)}); scenarios measured "
        f"again on evidence: {sum(r['repeats'] for r in done)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--python", default=sys.executable, help="the interpreter serve runs")
    parser.add_argument("--keep", type=Path, help="copy the saved runs here, to study them")
    parser.add_argument(
        "--save-timeout", type=float, default=600.0,
        help="seconds a session may take from its key press to its saved result",
    )  # fmt: skip
    parser.add_argument("--classes", type=int, default=1, help="classes, one after the other")
    parser.add_argument("--figures", type=Path, help=argparse.SUPPRESS)  # a class's, as JSON
    args = parser.parse_args()
    if args.classes > 1:
        classes(args)
        return
    stand_aside()
    base = Path(tempfile.mkdtemp(prefix="tfolab-classroom-"))
    os.chmod(base, 0o755)
    results = base / "results"
    process, address = start_serve(args.python, results, args.sessions)
    behind_the_sessions()
    try:
        figures = asyncio.run(
            classroom(args.sessions, address, results, process.pid, args.save_timeout)
        )
        if args.figures is not None:
            args.figures.write_text(json.dumps(figures))
        if args.keep is not None:
            shutil.copytree(results, args.keep, dirs_exist_ok=True)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

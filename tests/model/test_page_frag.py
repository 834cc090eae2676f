"""page_frag.py and the receiver's fragment limit (rcv_space.RcvSpace.queue).

Measured on 6.18 (SO_MEMINFO, a 100 kB answer read whole at MTU 1500, GSO cut in
software): 70 segments charged 5 skb heads, one per 17 fragments, a segment that
crosses one of the sender's 32 KiB pages holding two. The page frag is the process's
(current->task_frag), shared by its sockets; whether a write finds it free is a race
(skb_attempt_defer_free), measured in CI's VM (tests/labs/test_page_race.py).
"""

from __future__ import annotations

import dataclasses

from tfolab.model.page_frag import (
    MAX_SKB_FRAGS,
    MIN_COPY_ROOM,
    PAGE_FRAG_BYTES,
    PageFrag,
    TaskFrag,
    after_warm_up,
)
from tfolab.model.rcv_space import LINUX_DEFAULT, RcvSpace

MSS = 1448
HEAD = 832  # the host's measured skb head (runner/truesize.py)


def _answer(size: int) -> PageFrag:
    pages = PageFrag()
    pages.start_write(1, idle=True)
    goal = 22 * MSS  # sendmsg's skbs at MTU 1500 (half a 64 KB window)
    for start in range(1, size + 1, goal):
        pages.copy(start, min(start + goal, size + 1))
    return pages


def test_a_segment_holds_one_fragment_per_page_it_spans() -> None:
    pages = _answer(100_000)
    assert pages.page_starts == [1, 32769, 65537, 98305]
    crossing = [k for k in range(70) if pages.frags(1 + k * MSS, 1 + (k + 1) * MSS) == 2]
    assert crossing == [22, 45, 67]  # 32768, 65536 and 98304 fall inside them


def test_a_page_with_less_than_32_bytes_left_is_replaced() -> None:
    pages = PageFrag()
    pages.start_write(1, idle=True)
    pages.copy(1, 1 + PAGE_FRAG_BYTES - MIN_COPY_ROOM + 1)  # 31 bytes left
    pages.copy(PAGE_FRAG_BYTES - MIN_COPY_ROOM + 2, PAGE_FRAG_BYTES + 100)
    assert pages.page_starts == [1, PAGE_FRAG_BYTES - MIN_COPY_ROOM + 2]


def test_an_idle_page_is_reused_from_its_start() -> None:
    pages = _answer(5000)
    pages.start_write(5001, idle=True)
    pages.copy(5001, 6001)
    assert pages.page_starts[-1] == 5001
    assert pages.offset == 1000


def test_the_unread_answer_charges_a_head_per_seventeen_fragments() -> None:
    pages = _answer(100_000)
    space = RcvSpace(dataclasses.replace(LINUX_DEFAULT, skb_head_truesize=HEAD), 10, 1460)
    space.initial_window(peer_timestamps_seen=False)
    for k in range(70):
        seq = 1 + k * MSS
        length = min(MSS, 100_001 - seq)
        space.queue(length, MSS, fresh=True, end=seq + length, frags=pages.frags(seq, seq + length))
    assert space.rmem == 100_000 + 5 * HEAD  # measured: 104160 (5 heads of 832)
    assert space.tail_frags <= MAX_SKB_FRAGS


def test_the_warm_up_answer_leaves_the_server_where_it_ended() -> None:
    assert after_warm_up(269_765).offset == 269_765 - 8 * PAGE_FRAG_BYTES == 7621
    assert after_warm_up(16).offset == 16


def test_a_process_shares_its_page_and_a_new_socket_reuses_it_from_0() -> None:
    task = after_warm_up(7621)
    first, second = PageFrag(task), PageFrag(task)
    first.start_write(1, idle=False)  # a socket's first write: the model's outcome, from 0
    first.copy(1, 10_001)
    assert (first.page_starts, task.offset) == ([1], 10_000)
    second.start_write(1, idle=True)
    second.copy(1, 501)
    assert (second.page_starts, task.offset, first.offset) == ([1], 500, 500)


def test_a_held_page_goes_on_where_the_process_stopped() -> None:
    pages = PageFrag(after_warm_up(7621))
    assert pages.start_write(1, idle=True, held=True)
    pages.copy(1, 40_001)
    room = PAGE_FRAG_BYTES - 7621
    assert pages.page_starts == [1 + room]
    assert pages.other is not None and pages.other.page_starts == [1, 1 + PAGE_FRAG_BYTES]
    assert pages.frags(room - 999, room + 1001) == 2
    assert pages.differs(room - 999, room + 1001)  # one fragment from 0
    assert not pages.differs(1, 1001)


def test_the_race_is_followed_only_where_the_page_has_room() -> None:
    for offset in (PAGE_FRAG_BYTES - MIN_COPY_ROOM + 1, PAGE_FRAG_BYTES):
        pages = PageFrag(TaskFrag(offset))
        assert not pages.start_write(1, idle=True, held=True)  # a fresh page either way
        assert pages.other is None and pages.page_starts == [1]
    busy = PageFrag(TaskFrag(100), written=True)
    busy.start_write(501, idle=False, held=True)  # its own bytes hold it: no race
    assert busy.other is None and busy.offset == 100

"""Which `drop` settings the model follows, decided before it runs (with domain.py).

Rules:
- The model follows the loss of the client's SYN (syn_timer.py), of the
  server's SYN-ACK (synack_timer.py) and of a lone data segment (its tail-loss
  probe, loss_probe.py, and the RTO where the probe is lost too, loss_rto.py);
  a drop that lands on another segment is refused while the model runs, with
  its reason (output._check_loss). The refusals here need no run:
- a middlebox stands between the replayed SYN and the server too, so it does
  not combine with replay_syn;
- the runner gives the delayer one plan per iteration's connection, so a drop
  needs fresh connections (a kept connection's iterations are rounds of one
  connection) and no replay (the replayed SYN is no client's connection);
- a drop limited to iteration K needs K iterations;
- two or more retransmitted SYNs cut the first congestion window to 1
  (tcp_init_transfer: total_retrans > 1 and an undo marker), so where two or
  more of the client's packets may be lost in one iteration, the client's
  message must fit in one segment for the model's sender to stay right.
"""

from __future__ import annotations

from tfolab.model.scenario import ScenarioConfig


def drop_refusal(
    config: ScenarioConfig, iterations: int, client_message: int, mss: int
) -> str | None:
    """Why the model cannot follow this scenario's drops or middlebox; None if it can (or
    neither is set)."""
    if config.middlebox != "none" and config.replay_syn:
        return (
            f"middlebox={config.middlebox} does not combine with replay_syn: the replayed "
            "Fast Open SYN crosses the same middlebox, which the replay does not follow"
        )
    if not config.drop:
        return None
    named = ",".join(drop.label() for drop in config.drop)
    if not config.fresh_connection_each_iteration:
        return (
            f"drop={named} counts each iteration's packets on its own connection, but this "
            "scenario's iterations are rounds of one kept connection "
            "(fresh_connection_each_iteration=false): not built yet"
        )
    if config.replay_syn:
        return f"drop={named} does not combine with replay_syn (the replayed SYN has no plan)"
    late = [drop for drop in config.drop if drop.iteration > iterations]
    if late:
        return (
            f"drop={named} names iteration {late[0].iteration}, but the scenario runs "
            f"{iterations}: use --iterations {late[0].iteration} or more"
        )
    most = max(
        sum(1 for d in config.drop if d.sender == "client" and d.applies_to(i))
        for i in range(1, iterations + 1)
    )
    if client_message > mss and most >= 2:
        return (
            f"drop={named} with a client message of {client_message} bytes (more than one "
            f"segment of {mss}): two or more retransmitted SYNs cut the first congestion "
            "window to 1 (tcp_init_transfer), which the model's sender does not follow yet"
        )
    return None

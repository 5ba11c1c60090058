"""ndm.SimulatedPair: streams between two connections in virtual time, their cancellation
(reset_stream, stop_sending and the StreamReset / StreamStopped events, RFC 9000 §3), priorities
and a key update."""

import pytest

import ndm


def established_pair(**kw):
    pair = ndm.SimulatedPair(delay=0.01, **kw)
    assert pair.run_until_established(5.0)
    return pair


def events_of(conn, kind):
    return [e for e in conn.poll_events() if isinstance(e, kind)]


def test_reset_stream_reaches_the_peer_with_its_code_and_final_size():
    pair = established_pair()
    c = pair.client
    sid = c.open_stream()
    assert c.write(sid, b"x" * 3000) == 3000
    pair.run(0.1)
    s = pair.server
    opened = events_of(s, ndm.StreamOpened)
    assert [e.id for e in opened] == [sid]
    assert s.read(sid, 1000) == b"x" * 1000
    c.reset_stream(sid, 42)
    with pytest.raises(RuntimeError):
        c.write(sid, b"more")  # a stream this side reset takes nothing more
    pair.run(0.1)
    resets = events_of(s, ndm.StreamReset)
    assert len(resets) == 1
    assert (resets[0].id, resets[0].error_code, resets[0].final_size) == (sid, 42, 3000)
    assert "error_code=42" in repr(resets[0])
    assert s.read(sid) == b""  # the bytes not read are gone
    assert not s.stream_finished(sid)
    assert c.established and s.established


def test_stop_sending_makes_the_peer_reset_and_raises_stream_stopped():
    pair = established_pair()
    c = pair.client
    sid = c.open_stream()
    c.write(sid, b"y" * 100_000)
    pair.run(0.05)
    s = pair.server
    s.stop_sending(sid, 7)
    pair.run(0.2)
    stopped = events_of(c, ndm.StreamStopped)
    assert [(e.id, e.error_code) for e in stopped] == [(sid, 7)]
    assert c.established and s.established
    assert c.stats()["packets_sent"] > 0


def test_cancellation_arguments_are_checked():
    pair = established_pair()
    c = pair.client
    with pytest.raises(ValueError):
        c.reset_stream(1000, 1)  # not open
    sid = c.open_stream()
    with pytest.raises(ValueError):
        c.reset_stream(sid, 1 << 62)  # beyond a varint


def test_stream_priority_orders_the_streams():
    pair = established_pair(rate=10e6)
    c = pair.client
    first, second = c.open_stream(), c.open_stream()
    assert c.stream_priority(first) == (3, True)  # RFC 9218's default urgency; ndm's incremental default
    c.set_stream_priority(second, 0, False)
    assert c.stream_priority(second) == (0, False)
    with pytest.raises(ValueError):
        c.set_stream_priority(first, 8)
    c.write(first, b"a" * 400_000)
    c.write(second, b"b" * 400_000)
    pair.run(0.25)  # 10 Mbit/s: about 300 kB in 0.25 s, not enough for both
    s = pair.server
    got_first = len(s.read(first, 1 << 20))
    got_second = len(s.read(second, 1 << 20))
    assert got_second > got_first


def test_key_update_is_counted_on_both_sides():
    pair = established_pair()
    c = pair.client
    sid = c.open_stream()
    c.write(sid, b"k" * 50_000)
    pair.run(0.2)
    assert c.request_key_update()
    assert not c.request_key_update()  # the previous one is unanswered
    c.write(sid, b"k" * 50_000)
    pair.run(0.2)
    assert c.stats()["key_updates"] == 1
    assert pair.server.stats()["key_updates"] == 1
    assert len(pair.server.read(sid, 1 << 20)) == 100_000
    assert isinstance(c.stats()["spin_bit"], bool)


def test_the_server_side_does_not_exist_before_the_first_datagram():
    pair = ndm.SimulatedPair()
    assert pair.server is None
    with pytest.raises(ValueError):
        ndm.SimulatedPair(loss=2)
    with pytest.raises(ValueError):
        ndm.SimulatedPair(cc="no-such-controller")

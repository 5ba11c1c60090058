#include "transport/stream_set.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ndm::transport {

namespace {
constexpr std::size_t kMinRecvRangeCap = 1024;  // out-of-order ranges a stream may hold, at least
}  // namespace

StreamSet::StreamSet(const Config& config, std::deque<Event>& events)
    : cfg_(config), events_(events), conn_credit_(0), conn_window_(config.max_data),
      stream_window_(config.max_stream_data), local_max_streams_{config.max_streams, config.max_streams_uni} {
    conn_window_.resize(config.max_data, config.autotune);
}

void StreamSet::set_receive_windows(std::uint64_t max_data, std::uint64_t max_stream_data, bool autotune) {
    cfg_.autotune = autotune;
    stream_window_ = max_stream_data;
    conn_window_.resize(max_data, autotune);
    if (conn_window_.should_update()) max_data_pending_ = true;
    for (auto& [id, s] : streams_) {
        s.window.resize(max_stream_data, autotune);
        if (!send_only(id) && s.window.should_update() && !s.recv.finished() && !s.recv.discarding())
            s.max_stream_data_pending = true;
    }
}

void StreamSet::cap_receive_window(std::uint64_t bytes) {
    conn_window_.set_cap(bytes);
    if (conn_window_.should_update()) max_data_pending_ = true;
}

void StreamSet::on_peer_params(const PeerLimits& limits) {
    conn_credit_.raise(limits.max_data);
    peer_limits_ = limits;
    peer_max_streams_[dir(true)] = limits.max_streams_bidi;
    peer_max_streams_[dir(false)] = limits.max_streams_uni;
}

// Creates a stream with our buffer and window and the peer's initial credit:
// RFC 9000 §18.2, the peer's bidi_local limit covers the streams it opened,
// its bidi_remote limit those we opened, its uni limit our unidirectional
// ones; a receive-only stream has no credit and sends nothing.
void StreamSet::add(StreamId id) {
    std::uint64_t credit = 0;
    if (send_only(id)) credit = peer_limits_.max_stream_data_uni;
    else if (is_bidi(id)) credit = peer_initiated(id) ? peer_limits_.max_stream_data_bidi_local
                                                      : peer_limits_.max_stream_data_bidi_remote;
    // The window starts at what the transport parameters advertised; the
    // current window (set_receive_windows) applies from there on.
    StreamState& s = streams_.try_emplace(id, receive_only(id) ? 0 : cfg_.send_buffer, credit, cfg_.max_stream_data)
                         .first->second;
    s.window.resize(stream_window_, cfg_.autotune);
    if (!send_only(id) && s.window.should_update()) s.max_stream_data_pending = true;
}

// ============================================================================
// The application's side

std::optional<StreamId> StreamSet::open(bool bidi) {
    std::uint64_t& next = next_local_index_[dir(bidi)];
    if (next >= peer_max_streams_[dir(bidi)]) return std::nullopt;
    const StreamId id = make_id(next++, bidi, true);
    add(id);
    return id;
}

StreamState* StreamSet::find(StreamId id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : &it->second;
}

const StreamState* StreamSet::find(StreamId id) const {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : &it->second;
}

StreamState& StreamSet::require(StreamId id) {
    StreamState* s = find(id);
    if (!s) throw std::invalid_argument(fmt::format("stream {} is not open", id));
    return *s;
}

StreamState& StreamSet::writable(StreamId id) {
    StreamState& s = require(id);
    if (receive_only(id)) throw std::logic_error(fmt::format("stream {} is the peer's unidirectional stream: receive-only", id));
    if (s.reset_code && !s.stopped_by_peer) throw std::logic_error(fmt::format("stream {}: write after reset", id));
    if (s.send.finished()) throw std::logic_error(fmt::format("stream {}: write after finish", id));
    return s;
}

void StreamSet::reset_send(StreamState& s, std::uint64_t code) {
    s.reset_code = code;
    s.reset_final_size = s.send.reset();
    s.reset_pending = true;
    s.writable_wanted = false;
    s.blocked_sent_at = UINT64_MAX;
}

void StreamSet::reset(StreamId id, std::uint64_t code) {
    StreamState& s = require(id);
    if (receive_only(id)) throw std::logic_error(fmt::format("stream {} is the peer's unidirectional stream: receive-only", id));
    // RFC 9000 §3.1: "Data Recvd" is terminal; a reset stream stays reset.
    if (s.reset_code || s.send.all_acked()) return;
    reset_send(s, code);
}

void StreamSet::stop(StreamId id, std::uint64_t code) {
    StreamState& s = require(id);
    if (send_only(id)) throw std::logic_error(fmt::format("stream {} is a unidirectional stream of ours: send-only", id));
    if (s.recv.discarding()) return;  // stopped already, or reset by the peer
    // RFC 9000 §3.5: no STOP_SENDING once every byte is here ("Data Recvd").
    const bool wanted = !s.recv.all_received();
    credit_discarded(s.recv.discard());
    s.max_stream_data_pending = false;
    s.readable_notified = false;
    if (wanted) {
        s.stop_code = code;
        s.stop_pending = true;
    }
    maybe_reap(id);
}

void StreamSet::credit_discarded(std::uint64_t n) {
    // Bytes that will never be read count as consumed for the connection's
    // window, so that a stopped or reset stream cannot hold its credit for
    // good (RFC 9000 §4.5). Not for the stream's own window: a stopped
    // stream gets no more credit, and a reset one needs none.
    if (n == 0) return;
    conn_window_.on_consumed(n);
    if (conn_window_.should_update()) max_data_pending_ = true;
}

void StreamSet::set_priority(StreamId id, StreamPriority p) {
    if (p.urgency > StreamPriority::kMaxUrgency)
        throw std::invalid_argument(fmt::format("stream urgency {} is not 0..{}", p.urgency, StreamPriority::kMaxUrgency));
    StreamState& s = require(id);
    s.urgency = p.urgency;
    s.incremental = p.incremental;
}

void StreamSet::on_event_delivered(const Event& e) {
    if (const auto* r = std::get_if<event::StreamReset>(&e)) {
        if (StreamState* s = find(r->id)) {
            s->reset_event_unread = false;
            maybe_reap(r->id);
        }
    } else if (const auto* st = std::get_if<event::StreamStopped>(&e)) {
        if (StreamState* s = find(st->id)) {
            s->stopped_event_unread = false;
            maybe_reap(st->id);
        }
    }
}

void StreamSet::on_consumed(StreamId id, std::size_t n) {
    StreamState* s = find(id);
    if (!s) return;
    if (n > 0) {
        counters_.delivered += n;
        s->window.on_consumed(n);
        conn_window_.on_consumed(n);
        if (s->window.should_update() && !s->recv.finished() && !s->recv.discarding()) s->max_stream_data_pending = true;
        if (conn_window_.should_update()) max_data_pending_ = true;
    }
    if (s->recv.finished()) {
        s->recv.mark_fin_reported();
        maybe_reap(id);
    }
}

bool StreamSet::set_sink(StreamId id, RecvStream::Sink sink) {
    StreamState* s = find(id);
    if (!s || send_only(id) || !sink) return false;
    s->readable_notified = false;
    if (const std::size_t n = s->recv.set_sink(std::move(sink))) on_consumed(id, n);
    return true;
}

bool StreamSet::opened(StreamId id) const {
    const std::uint64_t index = id >> 2;
    return index < (peer_initiated(id) ? peer_next_index_ : next_local_index_)[dir(is_bidi(id))];
}

bool StreamSet::finished(StreamId id) const {
    if (const StreamState* s = find(id)) return s->recv.finished() && !s->recv.discarding();
    return opened(id) && !recv_aborted_.contains(id);  // reaped
}

bool StreamSet::reading_abandoned(StreamId id) const {
    if (const StreamState* s = find(id)) return s->recv.discarding();
    return recv_aborted_.contains(id);
}

bool StreamSet::send_acked(StreamId id) const {
    if (receive_only(id)) return false;
    if (const StreamState* s = find(id)) return s->send.all_acked();
    // Reaped once its send half was acknowledged to the FIN (maybe_reap), or reset.
    return opened(id) && !send_aborted_.contains(id);
}

void StreamSet::maybe_reap(StreamId id) {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    const auto& s = it->second;
    // A unidirectional stream is done when its one half is. A reset half is
    // done once its reset is acknowledged ("Reset Recvd", RFC 9000 §3.1) or
    // received ("Reset Read", §3.2), and the application has been told.
    const bool send_done = receive_only(id) || s.send.all_acked() || (s.reset_acked && !s.stopped_event_unread);
    const bool recv_done = send_only(id) || s.recv.finished() || (s.recv.is_reset() && !s.reset_event_unread);
    if (!send_done || !recv_done) return;
    if (s.recv.discarding()) recv_aborted_.add(id);
    if (s.reset_code) send_aborted_.add(id);
    streams_.erase(it);
    if (peer_initiated(id)) {
        // Let the peer open one more in its place (RFC 9000 §4.6).
        ++local_max_streams_[dir(is_bidi(id))];
        max_streams_pending_[dir(is_bidi(id))] = true;
    }
}

// ============================================================================
// The peer's frames

StreamState* StreamSet::stream_for_peer_frame(StreamId id, Half half, const char* frame, StreamResult& error) {
    // RFC 9000 §19.4, §19.5, §19.8, §19.10, §19.13: a frame about the
    // peer's sending (STREAM, RESET_STREAM, STREAM_DATA_BLOCKED) for our
    // send-only stream, or about ours (MAX_STREAM_DATA, STOP_SENDING) for our
    // receive-only one, is a STREAM_STATE_ERROR.
    if (half == Half::receive ? send_only(id) : receive_only(id)) {
        error = StreamError{CloseCode::stream_state_error,
                            fmt::format("{} for unidirectional stream {}, which {} only", frame, id,
                                        half == Half::receive ? "we send on" : "the peer sends on")};
        return nullptr;
    }
    if (auto it = streams_.find(id); it != streams_.end()) return &it->second;
    const std::size_t d = dir(is_bidi(id));
    const std::uint64_t index = id >> 2;
    if (!peer_initiated(id)) {
        // Below next_local_index_: a stream of ours that already finished.
        if (index >= next_local_index_[d]) {
            error = StreamError{CloseCode::stream_state_error, fmt::format("stream {} was never opened", id)};
        }
        return nullptr;
    }
    if (index < peer_next_index_[d]) return nullptr;  // already finished and forgotten: a late duplicate
    if (index >= local_max_streams_[d]) {
        error = StreamError{CloseCode::stream_limit_error,
                            fmt::format("stream {} exceeds the limit of {} {} streams", id, local_max_streams_[d],
                                        d == 0 ? "bidirectional" : "unidirectional")};
        return nullptr;
    }
    // Opening stream N implicitly opens the lower ones of its type (RFC 9000 §3.2).
    for (std::uint64_t i = peer_next_index_[d]; i <= index; ++i) {
        const StreamId sid = make_id(i, d == 0, false);
        add(sid);
        events_.push_back(event::StreamOpened{sid});
    }
    peer_next_index_[d] = index + 1;
    return &streams_.at(id);
}

StreamResult StreamSet::on_stream_frame(const wire::StreamFrame& f) {
    StreamResult error;
    StreamState* s = stream_for_peer_frame(f.stream_id, Half::receive, "STREAM", error);
    if (!s) return error;
    std::uint64_t end = f.offset + f.data.size();
    std::uint64_t prev_high = s->recv.highest_received();
    if (!s->window.on_received(end)) {
        return StreamError{CloseCode::flow_control_error,
                           fmt::format("stream {} data to offset {} exceeds its limit {}", f.stream_id, end,
                                       s->window.limit())};
    }
    if (end > prev_high) {
        std::uint64_t total = counters_.received + (end - prev_high);
        if (!conn_window_.on_received(total)) {
            return StreamError{CloseCode::flow_control_error,
                               fmt::format("connection data {} exceeds its limit {}", total, conn_window_.limit())};
        }
    }
    auto before = s->recv.readable();
    const std::size_t ranges_before = s->recv.range_count();
    auto res = s->recv.on_frame(f.offset, f.data, f.fin);
    if (res == RecvStream::Result::final_size_error) {
        return StreamError{CloseCode::final_size_error,
                           fmt::format("stream {} final size changed or exceeded", f.stream_id)};
    }
    if (end > prev_high) counters_.received += end - prev_high;
    if (s->recv.discarding()) {
        // Stopped or reset: the bytes were counted and go (RecvStream::discard).
        credit_discarded(s->recv.take_skipped());
        maybe_reap(f.stream_id);
        return std::nullopt;
    }
    // Holes cost memory and time per insertion: a peer sending 1-byte frames
    // at every other offset made millions. Real losses leave at most one hole
    // per lost packet in the window, far fewer than one per KiB.
    if (const std::size_t cap = cfg_.max_ranges ? cfg_.max_ranges
                                                : std::max<std::uint64_t>(kMinRecvRangeCap, cfg_.max_stream_data / 1024);
        s->recv.range_count() > cap) {
        return StreamError{CloseCode::protocol_violation,
                           fmt::format("stream {} too fragmented: more than {} out-of-order ranges", f.stream_id, cap)};
    }
    // Summed only when this frame made a new range: after a loss, not per frame.
    if (s->recv.range_count() > ranges_before && s->recv.range_count() > 1) {
        std::size_t total = 0;
        for (const auto& [id, st] : streams_) total += st.recv.range_count();
        if (total > cfg_.max_ranges_total)
            return StreamError{CloseCode::protocol_violation,
                               fmt::format("streams too fragmented: more than {} out-of-order ranges in all",
                                           cfg_.max_ranges_total)};
    }
    if (res == RecvStream::Result::ok && (s->recv.readable() > before || s->recv.fin_pending()) &&
        !s->readable_notified) {
        s->readable_notified = true;
        events_.push_back(event::StreamReadable{f.stream_id});
    }
    // What a sink took counts as read (last: the stream may be reaped).
    if (const std::size_t sunk = s->recv.take_sunk()) on_consumed(f.stream_id, sunk);
    return std::nullopt;
}

StreamResult StreamSet::on_max_stream_data(const wire::MaxStreamDataFrame& f) {
    StreamResult error;
    StreamState* s = stream_for_peer_frame(f.stream_id, Half::send, "MAX_STREAM_DATA", error);
    if (!s) return error;
    if (s->credit.raise(f.maximum) && s->writable_wanted) {
        s->writable_wanted = false;
        events_.push_back(event::StreamWritable{f.stream_id});
    }
    return std::nullopt;
}

StreamResult StreamSet::on_stream_data_blocked(const wire::StreamDataBlockedFrame& f) {
    StreamResult error;
    (void)stream_for_peer_frame(f.stream_id, Half::receive, "STREAM_DATA_BLOCKED", error);
    return error;  // the limit it states is a hint: our window slides as the application reads
}

StreamResult StreamSet::on_reset_stream(const wire::ResetStreamFrame& f) {
    StreamResult error;
    StreamState* s = stream_for_peer_frame(f.stream_id, Half::receive, "RESET_STREAM", error);
    if (!s) return error;
    // RFC 9000 §4.5: the final size never changes and is never below the
    // data received; §4.1: it counts against flow control like data.
    const auto known = s->recv.final_size();
    if (f.final_size < s->recv.highest_received() || (known && *known != f.final_size))
        return StreamError{CloseCode::final_size_error,
                           fmt::format("RESET_STREAM final size {} of stream {} contradicts its data (received to {}{})",
                                       f.final_size, f.stream_id, s->recv.highest_received(),
                                       known ? fmt::format(", final size {}", *known) : "")};
    if (f.final_size > s->window.limit() ||
        counters_.received + (f.final_size - s->recv.highest_received()) > conn_window_.limit())
        return StreamError{CloseCode::flow_control_error,
                           fmt::format("RESET_STREAM final size {} of stream {} exceeds the flow-control limit",
                                       f.final_size, f.stream_id)};
    // A repeat, or every byte already here (RFC 9000 §3.2 lets the data be
    // delivered then, "Data Recvd"): nothing changes.
    if (s->recv.all_received()) return std::nullopt;
    const bool stopped = s->recv.discarding();  // our STOP_SENDING asked for it
    // RFC 9000 §4.5: the connection's flow control counts the stream at its
    // final size; what the application will not read now comes back.
    if (const std::uint64_t prev = s->recv.highest_received(); f.final_size > prev) {
        counters_.received += f.final_size - prev;
        (void)s->window.on_received(f.final_size);
        (void)conn_window_.on_received(counters_.received);
    }
    credit_discarded(s->recv.on_reset(f.final_size));
    s->stop_pending = false;
    s->max_stream_data_pending = false;
    s->readable_notified = false;
    if (!stopped) {
        s->reset_event_unread = true;
        events_.push_back(event::StreamReset{f.stream_id, f.error_code, f.final_size});
    }
    maybe_reap(f.stream_id);
    return std::nullopt;
}

StreamResult StreamSet::on_stop_sending(const wire::StopSendingFrame& f) {
    StreamResult error;
    StreamState* s = stream_for_peer_frame(f.stream_id, Half::send, "STOP_SENDING", error);
    if (!s) return error;
    // RFC 9000 §3.5: answered with RESET_STREAM, the peer's code copied,
    // unless the stream is reset already or delivered ("Data Recvd").
    if (s->reset_code || s->send.all_acked()) return std::nullopt;
    reset_send(*s, f.error_code);
    s->stopped_by_peer = true;
    s->stopped_event_unread = true;
    events_.push_back(event::StreamStopped{f.stream_id, f.error_code});
    return std::nullopt;
}

void StreamSet::on_max_data(std::uint64_t maximum) {
    if (!conn_credit_.raise(maximum)) return;
    for (auto& [id, s] : streams_) {
        if (s.writable_wanted) events_.push_back(event::StreamWritable{id});
        s.writable_wanted = false;
    }
}

// ============================================================================
// Recovery

void StreamSet::on_acked(const sent::Stream& f) {
    StreamState* s = find(f.id);
    if (!s) return;
    counters_.acked += s->send.on_acked(f.offset, f.length, f.fin);
    if (s->writable_wanted && s->send.capacity() > 0) {
        s->writable_wanted = false;
        events_.push_back(event::StreamWritable{f.id});
    }
    maybe_reap(f.id);
}

void StreamSet::on_acked(const sent::ResetStream& f) {
    StreamState* s = find(f.id);
    if (!s) return;
    s->reset_acked = true;
    s->reset_pending = false;
    maybe_reap(f.id);
}

bool StreamSet::on_lost(const SentFrame& frame) {
    return std::visit(
        [&](const auto& f) {
            using T = std::decay_t<decltype(f)>;
            if constexpr (std::is_same_v<T, sent::Stream>) {
                if (StreamState* s = find(f.id)) s->send.on_lost(f.offset, f.length, f.fin);
            } else if constexpr (std::is_same_v<T, sent::MaxData>) {
                if (conn_window_.limit() == f.maximum) max_data_pending_ = true;
            } else if constexpr (std::is_same_v<T, sent::MaxStreamData>) {
                if (StreamState* s = find(f.id); s && s->window.limit() == f.maximum) s->max_stream_data_pending = true;
            } else if constexpr (std::is_same_v<T, sent::MaxStreams>) {
                if (local_max_streams_[dir(f.bidi)] == f.maximum) max_streams_pending_[dir(f.bidi)] = true;
            } else if constexpr (std::is_same_v<T, sent::DataBlocked>) {
                if (data_blocked_sent_at_ == f.limit) data_blocked_sent_at_ = UINT64_MAX;
            } else if constexpr (std::is_same_v<T, sent::StreamDataBlocked>) {
                if (StreamState* s = find(f.id); s && s->blocked_sent_at == f.limit) s->blocked_sent_at = UINT64_MAX;
            } else if constexpr (std::is_same_v<T, sent::ResetStream>) {
                if (StreamState* s = find(f.id); s && !s->reset_acked) s->reset_pending = true;
            } else if constexpr (std::is_same_v<T, sent::StopSending>) {
                // Not once the peer's reset or every byte arrived (RFC 9000 §3.5).
                if (StreamState* s = find(f.id); s && s->stop_code && !s->recv.all_received()) s->stop_pending = true;
            } else {
                return false;
            }
            return true;
        },
        frame);
}

// ============================================================================
// Sending

std::uint64_t StreamSet::new_data_limit(const StreamState& s) const {
    return std::min(s.credit.limit(), s.send.sent_end() + conn_credit_.available());
}

bool StreamSet::has_control_frames() const {
    if (max_data_pending_ || max_streams_pending_[0] || max_streams_pending_[1]) return true;
    return std::any_of(streams_.begin(), streams_.end(), [](const auto& e) {
        return e.second.max_stream_data_pending || e.second.reset_pending || e.second.stop_pending;
    });
}

bool StreamSet::has_pending_data() const {
    return std::any_of(streams_.begin(), streams_.end(),
                       [&](const auto& e) { return e.second.send.has_pending(new_data_limit(e.second)); });
}

bool StreamSet::has_unsent_data() const {
    return std::any_of(streams_.begin(), streams_.end(),
                       [](const auto& e) { return e.second.send.has_pending(UINT64_MAX); });
}

bool StreamSet::only_new_data_waits() const {
    return std::none_of(streams_.begin(), streams_.end(), [&](const auto& e) {
        const SendStream& s = e.second.send;
        const std::uint64_t limit = new_data_limit(e.second);
        // A limit at sent_end() leaves only retransmissions and a bare FIN.
        return s.has_pending(s.sent_end()) || (s.finished() && s.has_pending(limit)) || s.written() > limit;
    });
}

std::uint64_t StreamSet::sendable_new_data(std::uint64_t enough) const {
    const std::uint64_t conn = conn_credit_.available();
    std::uint64_t total = 0;
    for (const auto& [id, s] : streams_) {
        const std::uint64_t end = std::min(s.send.written(), s.credit.limit());
        if (end > s.send.sent_end()) total += end - s.send.sent_end();
        if (total >= enough || total >= conn) break;
    }
    return std::min(total, conn);
}

void StreamSet::write_control_frames(FrameSink& sink, Instant now, Duration rtt) {
    if (max_data_pending_ || conn_window_.should_update()) {
        std::uint64_t m = conn_window_.update(now, rtt);
        if (sink.put(wire::MaxDataFrame{m}, sent::MaxData{m})) max_data_pending_ = false;
    }
    for (const bool bidi : {true, false}) {
        const std::size_t d = dir(bidi);
        if (max_streams_pending_[d] && sink.put(wire::MaxStreamsFrame{local_max_streams_[d], bidi},
                                                sent::MaxStreams{local_max_streams_[d], bidi}))
            max_streams_pending_[d] = false;
    }
    for (auto& [id, s] : streams_) {
        if (!write_cancel_frames(sink, id, s)) break;
        if (!s.max_stream_data_pending) continue;
        std::uint64_t m = s.window.update(now, rtt);
        if (!sink.put(wire::MaxStreamDataFrame{id, m}, sent::MaxStreamData{id, m})) break;
        s.max_stream_data_pending = false;
    }
}

bool StreamSet::write_cancel_frames(FrameSink& sink, StreamId id, StreamState& s) {
    if (s.reset_pending) {
        if (!sink.put(wire::ResetStreamFrame{id, *s.reset_code, s.reset_final_size},
                      sent::ResetStream{id, *s.reset_code, s.reset_final_size}))
            return false;
        s.reset_pending = false;
    }
    if (s.stop_pending) {
        if (!s.recv.all_received() &&
            !sink.put(wire::StopSendingFrame{id, *s.stop_code}, sent::StopSending{id, *s.stop_code}))
            return false;
        s.stop_pending = false;
    }
    return true;
}

// The order of RFC 9218 §10 (ndm::StreamPriority): the lowest urgency with
// data to send; within it the non-incremental streams one at a time, lowest
// ID first, then the incremental ones round robin from the urgency's cursor.
std::optional<StreamId> StreamSet::next_to_send() const {
    unsigned best = StreamPriority::kMaxUrgency + 1;
    std::optional<StreamId> sequential, at_cursor, first;
    for (const auto& [id, s] : streams_) {
        if (s.urgency > best || !s.send.has_pending(new_data_limit(s))) continue;
        if (s.urgency < best) {
            best = s.urgency;
            sequential = at_cursor = first = std::nullopt;
        }
        if (!s.incremental) {
            if (!sequential) sequential = id;
        } else {
            if (!first) first = id;
            if (!at_cursor && id >= rr_cursor_[best]) at_cursor = id;
        }
    }
    if (sequential) return sequential;
    return at_cursor ? at_cursor : first;
}

// A stream keeps the packet while it has data; an incremental one then
// passes the turn, so the next packet starts at the next stream of its
// urgency: a small stream beside a bulk one waits a packet, not the bulk
// stream's whole backlog. Then the *_BLOCKED frames of streams held back by
// flow control that sent nothing in this packet.
bool StreamSet::write_stream_frames(FrameSink& sink) {
    bool retransmission = false;
    if (streams_.empty()) return false;
    const std::uint64_t serial = ++packet_serial_;
    StreamState* holding = nullptr;  // an incremental stream that still has data, and its ID
    StreamId holding_id = 0;
    bool full = false;
    while (!full && sink.remaining() > 16) {
        const auto id = next_to_send();
        if (!id) break;
        StreamState& s = streams_.find(*id)->second;
        const std::size_t before = sink.remaining();
        const Step step = write_stream_step(sink, *id, s, retransmission);
        const bool wrote = sink.remaining() < before;
        if (wrote) s.served_in = serial;
        holding = s.incremental && step == Step::sent ? &s : nullptr;
        holding_id = *id;
        // A stream that wrote passes the turn; one that found no room keeps it.
        if (s.incremental && step != Step::sent) rr_cursor_[s.urgency] = wrote ? *id + 1 : *id;
        full = step == Step::full;
    }
    // It filled the packet: the next one starts at the stream after it.
    if (holding) rr_cursor_[holding->urgency] = holding_id + 1;
    if (full) return retransmission;
    for (auto& [id, s] : streams_) {
        if (s.served_in == serial) continue;
        if (!write_blocked(sink, id, s)) break;
    }
    return retransmission;
}

bool StreamSet::write_blocked(FrameSink& sink, StreamId id, StreamState& s) {
    const std::uint64_t lim = new_data_limit(s);
    if (!s.send.blocked_at(lim)) return true;
    const std::size_t overhead =
        1 + wire::varint_size(id) + wire::varint_size(s.send.written()) + wire::varint_size(sink.remaining());
    if (sink.remaining() <= 16 || sink.remaining() <= overhead) return false;
    // Tell the peer when flow control, not the application, holds data back.
    if (lim == s.credit.limit() && s.blocked_sent_at != lim &&
        sink.put(wire::StreamDataBlockedFrame{id, lim}, sent::StreamDataBlocked{id, lim})) {
        s.blocked_sent_at = lim;
    } else if (conn_credit_.available() == 0 && data_blocked_sent_at_ != conn_credit_.limit() &&
               sink.put(wire::DataBlockedFrame{conn_credit_.limit()}, sent::DataBlocked{conn_credit_.limit()})) {
        data_blocked_sent_at_ = conn_credit_.limit();
    }
    return true;
}

StreamSet::Step StreamSet::write_stream_step(FrameSink& sink, StreamId id, StreamState& s, bool& retransmission) {
    std::uint64_t lim = new_data_limit(s);
    std::size_t overhead =
        1 + wire::varint_size(id) + wire::varint_size(s.send.written()) + wire::varint_size(sink.remaining());
    if (sink.remaining() <= overhead) return Step::full;
    auto chunk = s.send.next_chunk(sink.remaining() - overhead, lim);
    if (!chunk) return Step::drained;
    std::uint64_t prev_end = s.send.sent_end();
    if (!sink.put(wire::StreamFrame{id, chunk->offset, chunk->data, chunk->fin},
                  sent::Stream{id, chunk->offset, static_cast<std::uint32_t>(chunk->data.size()), chunk->fin}))
        return Step::full;
    s.send.on_sent(*chunk);
    // The next packets' bytes were written a turn or more ago (a writer may
    // be up to a MiB ahead, and with many connections the others' bytes were
    // written since): start loading them while this one is finished.
    if (!chunk->retransmission && !s.send.generated()) s.send.prefetch(s.send.sent_end() + 2 * chunk->data.size(), chunk->data.size());
    std::uint64_t fresh = s.send.sent_end() - prev_end;
    conn_credit_.consume(fresh);
    counters_.sent += fresh;
    if (chunk->retransmission) {
        counters_.retransmitted += chunk->data.size();
        retransmission = true;
    }
    // Stay on this stream while it fills the packet; move on once it has nothing.
    return s.send.has_pending(new_data_limit(s)) ? Step::sent : Step::drained;
}

}  // namespace ndm::transport

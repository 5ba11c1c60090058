// The connection's streams (RFC 9000 §2-§4): their send and receive state,
// the stream limits both ways (MAX_STREAMS), flow-control credit at stream
// and connection level (MAX_DATA, MAX_STREAM_DATA, *_BLOCKED), reaping of
// streams finished both ways, and the scheduling of STREAM frames: the
// connection hands it the rest of a packet and it fills it round-robin (as
// quinn-proto's streams object writes its own frames). Sans-I/O, no clock.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "ndm/connection.hpp"
#include "transport/flow_control.hpp"
#include "wire/frame.hpp"
#include "transport/frame_sink.hpp"
#include "transport/sent_frame.hpp"
#include "transport/range_set.hpp"
#include "transport/stream.hpp"

namespace ndm::test {
struct InvariantAudit;  // tests/support/invariant_audit.hpp: reads the private state to check invariants
}  // namespace ndm::test

namespace ndm::transport {

struct StreamState {
    StreamState(std::size_t send_buffer, std::uint64_t send_limit, std::uint64_t recv_window)
        : send(send_buffer), credit(send_limit), window(recv_window) {}
    SendStream send;
    RecvStream recv;
    SendCredit credit;     // the peer's MAX_STREAM_DATA
    ReceiveWindow window;  // ours
    bool max_stream_data_pending = false;
    std::uint64_t blocked_sent_at = UINT64_MAX;  // STREAM_DATA_BLOCKED already sent at this limit
    bool readable_notified = false;
    bool writable_wanted = false;
    // Scheduling (RFC 9218's shape, ndm::StreamPriority): lower urgency
    // first; incremental streams of one urgency share packets round robin,
    // non-incremental ones go one at a time in stream ID order.
    std::uint8_t urgency = StreamPriority::kDefaultUrgency;
    bool incremental = true;
    // Cancellation (RFC 9000 §3.1-§3.5). Our sending reset with this code
    // (by the application or in answer to the peer's STOP_SENDING): a
    // RESET_STREAM carries it, with the final size, until acknowledged.
    std::optional<std::uint64_t> reset_code;
    std::uint64_t reset_final_size = 0;
    bool reset_pending = false;
    bool reset_acked = false;
    // Our reading stopped with this code: a STOP_SENDING carries it until
    // acknowledged or no longer needed (the peer's data all arrived).
    std::optional<std::uint64_t> stop_code;
    bool stop_pending = false;
    // A StreamReset or StreamStopped event the application has not taken
    // yet: the stream stays (as RFC 9000 §3.2's "Reset Read" waits for
    // the application) so that it is never reaped unannounced.
    bool reset_event_unread = false;
    bool stopped_event_unread = false;
    // The reset answered the peer's STOP_SENDING: writes take nothing
    // rather than throw (the application could not have known).
    bool stopped_by_peer = false;
    std::uint64_t served_in = 0;  // the last write_stream_frames() call that sent its data
};

// Stream IDs as one set of indices per type (RFC 9000 §2.1: the low two
// bits), so that consecutive streams of a type merge into one range. At most
// kMaxRanges ranges per type: beyond, the lowest (the oldest streams) go.
class StreamIdSet {
public:
    static constexpr std::size_t kMaxRanges = 1024;
    void add(std::uint64_t id) {
        RangeSet& r = sets_[id & 3];
        r.add(id >> 2, (id >> 2) + 1);
        if (r.interval_count() > kMaxRanges) r.pop_first();
    }
    [[nodiscard]] bool contains(std::uint64_t id) const { return sets_[id & 3].contains(id >> 2); }

private:
    std::array<RangeSet, 4> sets_;
};

// A peer frame the stream set rejects: the connection closes with it.
struct StreamError {
    CloseCode code;
    std::string reason;
};
using StreamResult = std::optional<StreamError>;

// Stream byte counters, copied into ConnectionStats.
struct StreamCounters {
    std::uint64_t sent = 0;           // new bytes, once each
    std::uint64_t retransmitted = 0;  // bytes sent again
    std::uint64_t acked = 0;
    std::uint64_t delivered = 0;      // read by the application
    std::uint64_t received = 0;       // sum of highest offsets over streams
};

class StreamSet {
    friend struct ::ndm::test::InvariantAudit;

public:
    struct Config {
        bool client = true;
        std::size_t send_buffer = 16u << 20;   // per stream
        std::uint64_t max_data = 32u << 20;    // our connection window
        std::uint64_t max_stream_data = 16u << 20;  // our window per stream
        bool autotune = true;                  // receive windows grow (transport/flow_control.hpp)
        std::uint64_t max_streams = 100;       // how many bidirectional streams the peer may open
        std::uint64_t max_streams_uni = 0;     // how many unidirectional ones
        // Out-of-order ranges a receive stream may hold (ConnectionLimits::
        // stream_ranges); 0: max(1024, max_stream_data / 1024).
        std::size_t max_ranges = 0;
        // The same summed over all streams (ConnectionLimits::stream_ranges_total).
        std::size_t max_ranges_total = 65536;
    };
    // Stream events (opened, readable, writable) go to events.
    StreamSet(const Config& config, std::deque<Event>& events);

    // The peer's initial limits from its transport parameters (RFC 9000 §18.2).
    struct PeerLimits {
        std::uint64_t max_data = 0;
        std::uint64_t max_stream_data_bidi_local = 0;   // streams the peer opens
        std::uint64_t max_stream_data_bidi_remote = 0;  // streams we open
        std::uint64_t max_stream_data_uni = 0;          // unidirectional streams we open
        std::uint64_t max_streams_bidi = 0;
        std::uint64_t max_streams_uni = 0;
    };
    void on_peer_params(const PeerLimits& limits);

    // ---- the application's side
    // nullopt when the peer's stream limit is reached. A unidirectional
    // stream is send-only for us (RFC 9000 §2.1).
    std::optional<StreamId> open(bool bidi = true);
    [[nodiscard]] StreamState* find(StreamId id);
    [[nodiscard]] const StreamState* find(StreamId id) const;
    // Throws std::invalid_argument when the stream is not open.
    StreamState& require(StreamId id);
    // As require(), and std::logic_error after finish or on a stream the
    // peer opened as unidirectional (receive-only for us).
    StreamState& writable(StreamId id);
    // Bytes the application took: flow-control credit back to the peer, and
    // the stream's end once its FIN has been read. May reap the stream.
    void on_consumed(StreamId id, std::size_t n);
    // The stream's in-order bytes go to `sink` from now on (RecvStream::
    // set_sink), credited as consumed; false for a stream this side does not
    // receive on, or one not open. May reap the stream.
    bool set_sink(StreamId id, RecvStream::Sink sink);
    // Abandons our sending (RFC 9000 §3.1): unsent and unacknowledged
    // bytes go, a RESET_STREAM with `code` and the final size is sent until
    // acknowledged. Nothing for a stream already reset or whose every byte
    // and FIN were acknowledged. Throws as require(), and std::logic_error
    // for a stream we do not send on.
    void reset(StreamId id, std::uint64_t code);
    // Stops our reading (RFC 9000 §3.5): what is held is dropped, a
    // STOP_SENDING with `code` asks the peer to reset. Nothing once the
    // receive half has ended or every byte has arrived (the buffer is still
    // dropped). Throws as require(), and std::logic_error for a stream we
    // do not receive on.
    void stop(StreamId id, std::uint64_t code);
    // The application took a StreamReset or StreamStopped event: the
    // stream may go now (StreamState::reset_event_unread).
    void on_event_delivered(const Event& e);
    void set_priority(StreamId id, StreamPriority p);
    // Reaped streams were finished both ways.
    [[nodiscard]] bool finished(StreamId id) const;
    // The stream's reading ended without its end: stopped by this side or
    // reset by the peer (reaped or not).
    [[nodiscard]] bool reading_abandoned(StreamId id) const;
    // Our half delivered: every byte written and the FIN acknowledged.
    [[nodiscard]] bool send_acked(StreamId id) const;

    // ---- the peer's frames
    StreamResult on_stream_frame(const wire::StreamFrame& f);
    StreamResult on_max_stream_data(const wire::MaxStreamDataFrame& f);
    // RFC 9000 §19.13: informational, but only for a stream the peer may
    // send on; like STREAM it opens a peer's stream (§3.2).
    StreamResult on_stream_data_blocked(const wire::StreamDataBlockedFrame& f);
    // RFC 9000 §19.4, §3.2, §4.5: the peer abandons its sending. The final
    // size is checked against the data seen and flow control, what was
    // received and not read is dropped, and the connection's window counts
    // the stream at its final size and gives the unread bytes back.
    // StreamReset tells the application.
    StreamResult on_reset_stream(const wire::ResetStreamFrame& f);
    // RFC 9000 §19.5, §3.5: the peer wants no more of our stream: it is
    // reset with the peer's code (RESET_STREAM) and StreamStopped tells the
    // application.
    StreamResult on_stop_sending(const wire::StopSendingFrame& f);
    void on_max_data(std::uint64_t maximum);
    // Our receive windows from now on, for the connection and each stream
    // (existing and future); credit already advertised stays.
    void set_receive_windows(std::uint64_t max_data, std::uint64_t max_stream_data, bool autotune);
    // Caps the connection's receive window (MAX_DATA's lead over what the
    // application consumed) at `bytes`, whatever set_receive_windows and
    // auto-tuning allow; the streams' windows stay (the connection's binds).
    void cap_receive_window(std::uint64_t bytes);
    void on_max_streams(std::uint64_t maximum, bool bidi) {
        auto& m = peer_max_streams_[dir(bidi)];
        m = std::max(m, maximum);
    }

    // ---- recovery: what became of frames the stream set wrote
    void on_acked(const sent::Stream& f);
    void on_acked(const sent::ResetStream& f);
    // Queues again what a lost frame carried; false for frames not its own.
    bool on_lost(const SentFrame& f);

    // ---- sending
    // MAX_DATA, MAX_STREAMS or MAX_STREAM_DATA waits to be sent.
    [[nodiscard]] bool has_control_frames() const;
    // Some stream has data that flow control lets go.
    [[nodiscard]] bool has_pending_data() const;
    // Any stream data (or FIN) not yet sent or to be sent again, whatever
    // flow control allows: false means the application has given nothing
    // more to send (the draft's app-limited test, delivery_rate.hpp).
    [[nodiscard]] bool has_unsent_data() const;
    // Whether all the stream data that waits is new data that more writes
    // could add to: no lost data to send again, no stream finished with its
    // FIN unsent, no bytes that flow control holds back (send_coalescing.hpp).
    [[nodiscard]] bool only_new_data_waits() const;
    // New stream data flow control lets go now, counted up to `enough`.
    [[nodiscard]] std::uint64_t sendable_new_data(std::uint64_t enough) const;
    // Writes the pending MAX_DATA, MAX_STREAMS and MAX_STREAM_DATA frames.
    // MAX_DATA, MAX_STREAMS, MAX_STREAM_DATA as due; `rtt` (smoothed) lets
    // the receive windows auto-tune (transport/flow_control.hpp).
    void write_control_frames(FrameSink& sink, Instant now, Duration rtt);
    // Fills the rest of the packet with STREAM frames (and *_BLOCKED where
    // flow control holds data back); returns whether any was a retransmission.
    bool write_stream_frames(FrameSink& sink);

    [[nodiscard]] const StreamCounters& counters() const { return counters_; }
    [[nodiscard]] std::size_t size() const { return streams_.size(); }
    [[nodiscard]] std::uint64_t local_max_streams(bool bidi = true) const { return local_max_streams_[dir(bidi)]; }

    // The stream offset new data may reach now: the peer's MAX_STREAM_DATA,
    // and no further than its MAX_DATA leaves room for (RFC 9000 §4.1).
    [[nodiscard]] std::uint64_t new_data_limit(const StreamState& s) const;

private:
    // What a peer frame does to a stream: brings it data (STREAM), or
    // concerns our sending (MAX_STREAM_DATA). Each needs that half to exist.
    enum class Half { receive, send };
    StreamState* stream_for_peer_frame(StreamId id, Half half, const char* frame, StreamResult& error);
    void add(StreamId id);
    void maybe_reap(StreamId id);
    // Opened at some time (by either side); a stream opened and not found was reaped.
    [[nodiscard]] bool opened(StreamId id) const;
    [[nodiscard]] bool peer_initiated(StreamId id) const { return ((id & 0x1) == 0) != cfg_.client; }
    // RFC 9000 §2.1: bit 0x2 marks a unidirectional stream.
    static bool is_bidi(StreamId id) { return (id & 0x2) == 0; }
    static std::size_t dir(bool bidi) { return bidi ? 0 : 1; }
    // The half a unidirectional stream lacks on this side.
    [[nodiscard]] bool receive_only(StreamId id) const { return !is_bidi(id) && peer_initiated(id); }
    [[nodiscard]] bool send_only(StreamId id) const { return !is_bidi(id) && !peer_initiated(id); }
    [[nodiscard]] StreamId make_id(std::uint64_t index, bool bidi, bool ours) const {
        return (index << 2) | (bidi ? 0u : 2u) | ((ours == cfg_.client) ? 0u : 1u);
    }
    // Writes the STREAM frame for s's next chunk. sent: s has more to send;
    // drained: move on to the next stream; full: nothing more fits in this
    // packet.
    enum class Step { sent, drained, full };
    Step write_stream_step(FrameSink& sink, StreamId id, StreamState& s, bool& retransmission);
    // The stream whose data goes next (RFC 9218 §10's order), or none.
    [[nodiscard]] std::optional<StreamId> next_to_send() const;
    // A STREAM_DATA_BLOCKED or DATA_BLOCKED frame where flow control, not
    // the application, holds s's data back; false when nothing fits.
    bool write_blocked(FrameSink& sink, StreamId id, StreamState& s);
    // RESET_STREAM and STOP_SENDING frames due for s; false when one did not fit.
    bool write_cancel_frames(FrameSink& sink, StreamId id, StreamState& s);
    // Gives the connection's window back the bytes a stream will never deliver.
    void credit_discarded(std::uint64_t n);
    // Resets s's sending with `code` (RESET_STREAM due).
    static void reset_send(StreamState& s, std::uint64_t code);

    Config cfg_;
    std::deque<Event>& events_;
    std::map<StreamId, StreamState> streams_;
    SendCredit conn_credit_;
    ReceiveWindow conn_window_;
    std::uint64_t stream_window_;  // for new streams (set_receive_windows), cfg_.max_stream_data at first
    bool max_data_pending_ = false;
    std::uint64_t data_blocked_sent_at_ = UINT64_MAX;
    PeerLimits peer_limits_;  // the peer's initial MAX_STREAM_DATA per kind of stream
    // Per direction, [0] bidirectional and [1] unidirectional (dir()):
    std::uint64_t next_local_index_[2] = {0, 0};   // streams we opened
    std::uint64_t peer_next_index_[2] = {0, 0};    // streams the peer opened (implicitly or not)
    std::uint64_t peer_max_streams_[2] = {0, 0};   // how many we may open
    std::uint64_t local_max_streams_[2];           // how many the peer may open
    bool max_streams_pending_[2] = {false, false};
    // Round-robin position among the incremental streams of each urgency:
    // the next packet starts at the first such stream at or after it.
    std::array<StreamId, StreamPriority::kMaxUrgency + 1> rr_cursor_{};
    std::uint64_t packet_serial_ = 0;  // write_stream_frames() calls
    // Streams released after their reading or sending ended by a reset or a
    // stop, not a FIN: finished() and send_acked() must not report them
    // delivered (the application was told by an event, a blocking reader
    // was not).
    StreamIdSet recv_aborted_, send_aborted_;
    StreamCounters counters_;
};

}  // namespace ndm::transport

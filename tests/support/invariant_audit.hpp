// Reads the private bookkeeping of the loss detector and the stream set (a
// friend of both) to check what must always hold, whatever the peer sends:
// the fuzzers (fuzz/connection_fuzz.cpp) after every step, and tests.
#pragma once

#include <cstdint>
#include <cstddef>

#include "transport/loss_detector.hpp"
#include "transport/stream_set.hpp"

namespace ndm::test {

struct InvariantAudit {
    // bytes_in_flight recomputed from the packets (RFC 9002 §A.2: the sum of
    // the sizes of in-flight packets that are neither acknowledged nor lost),
    // and the ack-eliciting ones per space.
    struct Flight {
        std::uint64_t bytes = 0;
        std::size_t eliciting[transport::kPacketSpaces] = {0, 0, 0};
    };
    static Flight flight(const transport::LossDetector& l) {
        Flight f;
        for (std::size_t s = 0; s < transport::kPacketSpaces; ++s) {
            const auto& sp = l.spaces_[s];
            for (std::size_t i = 0; i < sp.sent.size(); ++i) {
                const auto& slot = sp.sent[i];
                if (slot.state != transport::LossDetector::State::outstanding || !slot.p.in_flight) continue;
                f.bytes += slot.p.bytes;
                if (slot.p.ack_eliciting) ++f.eliciting[s];
            }
        }
        return f;
    }

    // Flow control, both ways (RFC 9000 §4.1): the peer's data stays within
    // what we advertised, ours within what it advertised; and each stream's
    // offsets are ordered (read <= highest received; acked <= sent <= written).
    template <typename PerStream>
    static bool flow_control_holds(const transport::StreamSet& s, PerStream&& per_stream) {
        if (s.conn_window_.received() > s.conn_window_.limit()) return false;
        if (s.conn_credit_.used() > s.conn_credit_.limit()) return false;
        std::uint64_t received = 0;
        for (const auto& [id, st] : s.streams_) {
            if (st.recv.highest_received() > st.window.limit()) return false;
            if (st.recv.read_offset() > st.recv.highest_received()) return false;
            if (st.send.acked_end() > st.send.sent_end() || st.send.sent_end() > st.send.written()) return false;
            if (st.send.sent_end() > st.credit.limit()) return false;
            received += st.recv.highest_received();
            per_stream(id, st);
        }
        // Every stream's data counts against the connection's window (reaped
        // streams' too, so the sum over live ones is a lower bound).
        return received <= s.conn_window_.limit();
    }
    static std::uint64_t conn_window_limit(const transport::StreamSet& s) { return s.conn_window_.limit(); }
    static std::uint64_t conn_credit_limit(const transport::StreamSet& s) { return s.conn_credit_.limit(); }
};

}  // namespace ndm::test

// Pieces shared by the timed bulk transfers of the tools (run_live, ndm-send,
// ndm-recv): the test parameters the client puts in the handshake's
// application params (so no control connection is needed), the receiver's
// closing report sent back on the test stream, waiting for a handshake, a
// pump that keeps a stream topped up with the deterministic payload, and
// draining what arrived. Both move data in place (Connection::prepare/commit,
// peek/consume): no copy through a buffer of the tool's own.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "ndm/endpoint.hpp"
#include "sim/payload.hpp"
#include "sim/stream_hash.hpp"

namespace ndm::tools {

struct TestParams {
    std::string cc;
    std::size_t packet_size = 1452;
    double seconds = 10;     // send time; 0 when bytes is set
    std::uint64_t bytes = 0; // byte budget (-n); 0 = timed
    double interval = 1;
    std::uint64_t seed = 1;  // payload seed of this connection
    // -P and -R: the connections of one test share test_id; index is this
    // connection's place among `streams`. In reverse the server sends.
    unsigned streams = 1;
    unsigned index = 0;
    std::uint64_t test_id = 0;
    bool reverse = false;
};
inline constexpr unsigned kMaxParallel = 128;
std::vector<std::uint8_t> encode(const TestParams& p);
// Throws std::invalid_argument when the blob is not a test request.
TestParams decode_test_params(std::span<const std::uint8_t> blob);

// What the receiver read, sent back to the sender after the sender's FIN.
struct ReceiverReport {
    std::uint64_t bytes = 0;
    double seconds = 0;      // test start to last byte
    std::uint64_t hash = 0;  // sim::StreamHash digest of the bytes read
};
std::vector<std::uint8_t> encode(const ReceiverReport& r);
ReceiverReport decode_receiver_report(std::span<const std::uint8_t> blob);

// Reverse mode: what the sending server wrote, sent to the client on a second
// stream once the peer acknowledged all the data.
struct SenderReport {
    std::uint64_t bytes = 0;
    double seconds = 0;            // the send phase
    std::uint64_t retransmits = 0; // packets carrying retransmitted data
    std::uint64_t hash = 0;        // digest of the bytes written
};
std::vector<std::uint8_t> encode(const SenderReport& r);
SenderReport decode_sender_report(std::span<const std::uint8_t> blob);

// Runs the endpoint until the handshake of h completes; throws
// std::runtime_error("connection failed: <reason>") when it does not.
Connection& await_established(Endpoint& ep, ConnectionHandle h, Duration timeout);

// Keeps a little more than the congestion window queued on a stream: enough
// to never starve the sender, not so much that the send buffer balloons.
// Takes every in-order byte of the stream that has arrived, in place: f sees
// each contiguous run (a std::span<const std::uint8_t>). Returns the count.
template <typename F>
std::size_t drain(Connection& c, StreamId id, F&& f) {
    std::size_t total = 0;
    for (auto view = c.peek(id); !view.empty(); view = c.peek(id)) {
        f(view);
        total += view.size();
        c.consume(id, view.size());
    }
    return total;
}

class PayloadPump {
public:
    explicit PayloadPump(std::uint64_t seed, std::uint64_t limit = std::numeric_limits<std::uint64_t>::max())
        : payload_(seed), limit_(limit) {}
    // Writes more payload; sends FIN with the last byte when a limit is set.
    void pump(Connection& c, StreamId id, Instant now);
    [[nodiscard]] std::uint64_t written() const { return written_; }
    [[nodiscard]] bool done() const { return written_ >= limit_; }
    [[nodiscard]] std::uint64_t digest() const { return hash_.digest(); }

    static constexpr std::size_t kChunk = 64 * 1024;

private:
    sim::Payload payload_;
    sim::StreamHash hash_;
    std::uint64_t limit_;
    std::uint64_t written_ = 0;
};

}  // namespace ndm::tools

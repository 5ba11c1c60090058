#include "common/perf_session.hpp"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ndm::tools {

namespace {
// Tags the blobs so a stray client (or a future format) is rejected clearly.
constexpr const char* kParamsMagic = "ndm-perf/1";

std::vector<std::uint8_t> to_bytes(const nlohmann::json& j) {
    std::string s = j.dump();
    return {s.begin(), s.end()};
}
nlohmann::json from_bytes(std::span<const std::uint8_t> blob, const char* what) {
    auto j = nlohmann::json::parse(blob.begin(), blob.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::invalid_argument(std::string("malformed ") + what);
    return j;
}
}  // namespace

std::vector<std::uint8_t> encode(const TestParams& p) {
    return to_bytes({{"magic", kParamsMagic}, {"cc", p.cc}, {"packet_size", p.packet_size}, {"seconds", p.seconds},
                     {"bytes", p.bytes}, {"interval", p.interval}, {"seed", p.seed},
                     {"streams", p.streams}, {"index", p.index}, {"test_id", p.test_id}, {"reverse", p.reverse}});
}

TestParams decode_test_params(std::span<const std::uint8_t> blob) {
    auto j = from_bytes(blob, "test parameters");
    if (j.value("magic", "") != kParamsMagic) throw std::invalid_argument("not an ndm-send test request");
    try {
        TestParams p;
        p.cc = j.at("cc").get<std::string>();
        p.packet_size = j.at("packet_size").get<std::size_t>();
        p.seconds = j.at("seconds").get<double>();
        p.bytes = j.at("bytes").get<std::uint64_t>();
        p.interval = j.at("interval").get<double>();
        p.seed = j.at("seed").get<std::uint64_t>();
        p.streams = j.value("streams", 1u);
        p.index = j.value("index", 0u);
        p.test_id = j.value("test_id", std::uint64_t{0});
        p.reverse = j.value("reverse", false);
        if (!(p.interval > 0)) throw std::invalid_argument("interval must be positive");
        if (p.streams < 1 || p.streams > kMaxParallel || p.index >= p.streams)
            throw std::invalid_argument("bad parallel stream count or index");
        return p;
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("bad test parameters: ") + e.what());
    }
}

std::vector<std::uint8_t> encode(const ReceiverReport& r) {
    return to_bytes({{"bytes", r.bytes}, {"seconds", r.seconds}, {"hash", r.hash}});
}

ReceiverReport decode_receiver_report(std::span<const std::uint8_t> blob) {
    auto j = from_bytes(blob, "receiver report");
    try {
        return {j.at("bytes").get<std::uint64_t>(), j.at("seconds").get<double>(), j.at("hash").get<std::uint64_t>()};
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("bad receiver report: ") + e.what());
    }
}

std::vector<std::uint8_t> encode(const SenderReport& r) {
    return to_bytes({{"bytes", r.bytes}, {"seconds", r.seconds}, {"retransmits", r.retransmits}, {"hash", r.hash}});
}

SenderReport decode_sender_report(std::span<const std::uint8_t> blob) {
    auto j = from_bytes(blob, "sender report");
    try {
        return {j.at("bytes").get<std::uint64_t>(), j.at("seconds").get<double>(),
                j.at("retransmits").get<std::uint64_t>(), j.at("hash").get<std::uint64_t>()};
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("bad sender report: ") + e.what());
    }
}

Connection& await_established(Endpoint& ep, ConnectionHandle h, Duration timeout) {
    ep.run_until(
        [&] {
            const Connection* c = ep.find(h);
            return !c || c->is_established() || c->is_closed() || ep.close_info(h);
        },
        timeout);
    Connection* c = ep.connection(h);
    if (!c || !c->is_established()) {
        const CloseInfo* ci = ep.close_info(h);
        throw std::runtime_error(ci ? "connection failed: " + ci->reason : "connection failed: handshake did not complete");
    }
    return *c;
}

void PayloadPump::pump(Connection& c, StreamId id, Instant now) {
    const ConnectionStats st = c.stats(now);
    const std::uint64_t target = std::max<std::uint64_t>(2 * st.cwnd, 4 * kChunk);
    while (written_ < limit_ && written_ - st.stream_bytes_acked < target) {
        const std::size_t n = static_cast<std::size_t>(
            std::min<std::uint64_t>({kChunk, c.stream_send_capacity(id), limit_ - written_}));
        if (n == 0) break;
        // The payload goes straight into the stream's send buffer; room may
        // be short of n where that buffer wraps (the loop comes back for more).
        const std::span<std::uint8_t> room = c.prepare(id, n);
        if (room.empty()) break;
        payload_.fill(written_, room);
        hash_.update(room);
        written_ += room.size();
        c.commit(id, room.size(), written_ == limit_);
    }
}

}  // namespace ndm::tools

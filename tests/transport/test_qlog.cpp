// The connection's trace hook and the qlog writer on top of it: a lossy
// client→server transfer between two Connections (virtual time), recorded by
// an observer; the event sequence must agree with itself and with stats().
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "connection_pair.hpp"
#include "ndm/qlog.hpp"
#include "ndm/version.hpp"

using namespace ndm;

namespace {

struct Recorded {
    std::vector<std::uint64_t> sent, received, lost;
    std::vector<trace::MetricsUpdated> metrics;
    std::vector<std::pair<std::string, std::string>> states;
    std::uint64_t stream_frames_sent = 0;
    bool client = false;
    std::string odcid;
};

// Records every event and also feeds a qlog writer.
class Recorder final : public trace::ConnectionObserver {
public:
    Recorder(Recorded& r, std::ostream& qlog_out, const trace::ConnectionInfo& info)
        : r_(r), qlog_(qlog::make_writer(qlog_out, info)) {
        r_.client = info.client;
        r_.odcid = qlog::file_name(info);
    }
    void on_packet_sent(const trace::PacketSent& e) override {
        r_.sent.push_back(e.packet_number);
        for (const auto& f : e.frames) r_.stream_frames_sent += f.type == trace::Frame::Type::stream;
        qlog_->on_packet_sent(e);
    }
    void on_packet_received(const trace::PacketReceived& e) override {
        r_.received.push_back(e.packet_number);
        qlog_->on_packet_received(e);
    }
    void on_packet_lost(const trace::PacketLost& e) override {
        r_.lost.push_back(e.packet_number);
        qlog_->on_packet_lost(e);
    }
    void on_metrics_updated(const trace::MetricsUpdated& e) override {
        r_.metrics.push_back(e);
        qlog_->on_metrics_updated(e);
    }
    void on_congestion_state_updated(const trace::CongestionStateUpdated& e) override {
        r_.states.emplace_back(std::string(e.old_state), std::string(e.new_state));
        qlog_->on_congestion_state_updated(e);
    }

private:
    Recorded& r_;
    std::unique_ptr<trace::ConnectionObserver> qlog_;
};

// The latest value of a field across partial metrics updates.
template <class F>
auto latest(const std::vector<trace::MetricsUpdated>& ms, F field) {
    std::decay_t<decltype(*field(ms.front()))> v{};
    for (const auto& m : ms)
        if (field(m)) v = *field(m);
    return v;
}

std::vector<nlohmann::json> parse_json_seq(const std::string& text) {
    std::vector<nlohmann::json> records;
    REQUIRE(!text.empty());
    REQUIRE(text.front() == '\x1e');
    std::size_t pos = 0;
    while (pos < text.size()) {
        REQUIRE(text[pos] == '\x1e');
        const std::size_t end = text.find('\x1e', pos + 1);
        const std::string rec = text.substr(pos + 1, (end == std::string::npos ? text.size() : end) - pos - 1);
        REQUIRE(rec.back() == '\n');
        records.push_back(nlohmann::json::parse(rec));  // throws on a bad record
        pos = end == std::string::npos ? text.size() : end;
    }
    return records;
}

}  // namespace

TEST_CASE("qlog: the trace hook reports a lossy transfer consistently with stats, and the qlog parses") {
    Recorded client_rec, server_rec;
    std::ostringstream client_qlog, server_qlog;
    test::ConnectionPair cp;
    cp.client_cfg.cc = "cubic";
    cp.client_cfg.observer = [&](const trace::ConnectionInfo& info) {
        return std::make_unique<Recorder>(client_rec, client_qlog, info);
    };
    cp.server_cfg.observer = [&](const trace::ConnectionInfo& info) {
        return std::make_unique<Recorder>(server_rec, server_qlog, info);
    };
    // Drop every 17th datagram the client sends once data flows (deterministic).
    int n = 0;
    cp.to_server = [&](std::vector<std::uint8_t>&) { return ++n < 10 || n % 17 != 0; };
    REQUIRE(cp.handshake());
    const StreamId id = *cp.client->open_stream();
    std::vector<std::uint8_t> data(600'000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7);
    REQUIRE(cp.client->write(id, data, true) == data.size());
    std::vector<std::uint8_t> buf(65536);
    std::size_t got = 0;
    REQUIRE(cp.run_until([&] {
        while (std::size_t k = cp.server->read(id, buf)) got += k;
        return cp.server->stream_finished(id) && cp.client->stats(cp.now).bytes_in_flight == 0;
    }));
    CHECK(got == data.size());
    const ConnectionStats st = cp.client->stats(cp.now);

    CHECK(client_rec.client);
    CHECK_FALSE(server_rec.client);
    CHECK(client_rec.odcid == server_rec.odcid.substr(0, server_rec.odcid.find('_')) + "_client.sqlog");
    // Every packet counted is traced once, in packet-number order within its
    // space: two Initial packets (the ClientHello, the ACK of the
    // ServerHello), a Handshake one (the Finished), then 1-RTT ones from 0.
    CHECK(client_rec.sent.size() == st.packets_sent);
    REQUIRE(client_rec.sent.size() > 3);
    CHECK(client_rec.sent[0] == 0);
    CHECK(client_rec.sent[1] == 1);
    CHECK(client_rec.sent[2] == 0);
    CHECK(std::is_sorted(client_rec.sent.begin() + 3, client_rec.sent.end()));
    CHECK(std::adjacent_find(client_rec.sent.begin() + 3, client_rec.sent.end()) == client_rec.sent.end());
    CHECK(client_rec.stream_frames_sent > 0);
    // Losses happened, each lost packet was sent, none is lost twice.
    REQUIRE(st.packets_lost > 0);
    CHECK(client_rec.lost.size() == st.packets_lost);
    const std::set<std::uint64_t> sent(client_rec.sent.begin(), client_rec.sent.end());
    const std::set<std::uint64_t> lost(client_rec.lost.begin(), client_rec.lost.end());
    CHECK(lost.size() == client_rec.lost.size());
    for (auto pn : lost) CHECK(sent.count(pn) == 1);
    // What the server received is what the client sent, minus drops.
    CHECK(server_rec.received.size() == cp.server->stats(cp.now).packets_received);
    for (auto pn : server_rec.received) CHECK(sent.count(pn) == 1);
    // The last metrics agree with stats().
    REQUIRE(!client_rec.metrics.empty());
    CHECK(latest(client_rec.metrics, [](const auto& m) { return m.cwnd; }) == st.cwnd);
    CHECK(latest(client_rec.metrics, [](const auto& m) { return m.bytes_in_flight; }) == st.bytes_in_flight);
    CHECK(latest(client_rec.metrics, [](const auto& m) { return m.smoothed_rtt; }) == st.smoothed_rtt);
    CHECK(latest(client_rec.metrics, [](const auto& m) { return m.min_rtt; }) == st.min_rtt);
    // Each update carries at least one changed value.
    for (const auto& m : client_rec.metrics)
        CHECK((m.cwnd || m.bytes_in_flight || m.ssthresh || m.smoothed_rtt || m.min_rtt || m.latest_rtt ||
               m.rtt_variance || m.pacing_rate));
    // Congestion states form a chain ending in the current one; loss caused recovery.
    REQUIRE(!client_rec.states.empty());
    for (std::size_t i = 0; i < client_rec.states.size(); ++i) {
        CHECK(client_rec.states[i].first != client_rec.states[i].second);
        if (i > 0) CHECK(client_rec.states[i].first == client_rec.states[i - 1].second);
    }
    CHECK(client_rec.states.back().second == st.cc_state);
    CHECK(std::any_of(client_rec.states.begin(), client_rec.states.end(),
                      [](const auto& s) { return s.second == "recovery"; }));

    // The qlog: JSON-SEQ records, header first, then events with known names and growing times.
    cp.client.reset();  // flushes
    const auto records = parse_json_seq(client_qlog.str());
    REQUIRE(records.size() > 10);
    const auto& h = records.front();
    CHECK(h["qlog_format"] == "JSON-SEQ");
    CHECK(h["qlog_version"] == "0.3");
    CHECK(h["trace"]["vantage_point"]["type"] == "client");
    CHECK(h["trace"]["common_fields"]["time_format"] == "relative");
    // What produced the trace.
    CHECK(h["provenance"]["ndm_version"] == std::string(ndm::version()));
    CHECK(h["provenance"]["git_commit"] == std::string(ndm::git_commit()));
    CHECK(h["provenance"]["command_line"].get<std::string>().find("ndm_tests") != std::string::npos);
    CHECK(h["provenance"]["start_time"].get<std::string>().ends_with("Z"));
    CHECK_FALSE(h["provenance"]["host"].get<std::string>().empty());
    CHECK(h["provenance"]["kernel"].get<std::string>().starts_with("Linux "));
    std::size_t sent_events = 0, lost_events = 0, cwnd_updates = 0, pacing_updates = 0;
    std::uint64_t last_cwnd = 0;
    // recovery:metrics_updated carries quic-events' field names only (congestion_window, not cwnd),
    // pacing_rate as an integer in bits per second.
    const std::set<std::string> metric_fields{"congestion_window", "bytes_in_flight", "ssthresh", "smoothed_rtt",
                                              "min_rtt",           "latest_rtt",      "rtt_variance", "pacing_rate"};
    double t = 0;
    const std::set<std::string> names{"transport:packet_sent", "transport:packet_received", "recovery:packet_lost",
                                      "recovery:metrics_updated", "recovery:congestion_state_updated"};
    for (std::size_t i = 1; i < records.size(); ++i) {
        const auto& r = records[i];
        CHECK(names.count(r["name"].get<std::string>()) == 1);
        CHECK(r["time"].get<double>() >= t);
        t = r["time"].get<double>();
        sent_events += r["name"] == "transport:packet_sent";
        lost_events += r["name"] == "recovery:packet_lost";
        if (r["name"] != "recovery:metrics_updated") continue;
        CHECK_FALSE(r["data"].empty());
        for (const auto& [k, v] : r["data"].items()) {
            CAPTURE(k);
            CHECK(metric_fields.count(k) == 1);
            CHECK(v.is_number());
        }
        if (r["data"].contains("congestion_window")) {
            ++cwnd_updates;
            last_cwnd = r["data"]["congestion_window"].get<std::uint64_t>();
        }
        if (r["data"].contains("pacing_rate")) {
            ++pacing_updates;
            CHECK(r["data"]["pacing_rate"].is_number_integer());
        }
    }
    CHECK(cwnd_updates > 0);
    CHECK(pacing_updates > 0);
    CHECK(last_cwnd == st.cwnd);
    CHECK(sent_events == st.packets_sent);
    CHECK(lost_events == st.packets_lost);
    cp.server.reset();
    CHECK(parse_json_seq(server_qlog.str()).front()["trace"]["vantage_point"]["type"] == "server");
}

TEST_CASE("qlog: file_observer writes <odcid>_<vantage>.sqlog files and rejects an unusable directory") {
    const auto dir = std::filesystem::temp_directory_path() / ("ndm_qlog_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    {
        test::ConnectionPair cp;
        cp.client_cfg.observer = qlog::file_observer((dir / "sub").string());  // creates parents
        cp.server_cfg.observer = cp.client_cfg.observer;
        REQUIRE(cp.handshake());
    }
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir / "sub")) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    REQUIRE(names.size() == 2);
    CHECK(names[0].ends_with("_client.sqlog"));
    CHECK(names[1].ends_with("_server.sqlog"));
    CHECK(names[0].substr(0, names[0].find('_')) == names[1].substr(0, names[1].find('_')));
    CHECK(names[0].find('_') == 16);  // 8-byte ODCID in hex
    std::filesystem::remove_all(dir);
    CHECK_THROWS_WITH_AS(qlog::file_observer("/proc/ndm-no-such-dir"), doctest::Contains("qlog directory"),
                         std::runtime_error);
}

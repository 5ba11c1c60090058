// qlog JSON-SEQ writer (draft-ietf-quic-qlog-main-schema-03 and
// quic-events-03, i.e. qlog_version "0.3", which qvis reads).
#include "ndm/qlog.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "ndm/version.hpp"

namespace ndm::qlog {

namespace {

using nlohmann::json;

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

const char* packet_type_name(trace::PacketType t) {
    switch (t) {
        case trace::PacketType::initial: return "initial";
        case trace::PacketType::handshake: return "handshake";
        case trace::PacketType::version_negotiation: return "version_negotiation";
        case trace::PacketType::one_rtt: break;
    }
    return "1RTT";
}

std::string hex(std::span<const std::uint8_t> bytes) {
    std::string s;
    for (auto b : bytes) s += fmt::format("{:02x}", b);
    return s;
}

const char* stream_type(const trace::Frame& f) { return f.unidirectional ? "unidirectional" : "bidirectional"; }

json frame_json(const trace::Frame& f) {
    using T = trace::Frame::Type;
    switch (f.type) {
        case T::padding: return {{"frame_type", "padding"}, {"payload_length", f.length}};
        case T::ping: return {{"frame_type", "ping"}};
        case T::ack: {
            json ranges = json::array();
            // qlog lists ranges ascending; the wire has them largest first.
            for (auto it = f.acked_ranges.rbegin(); it != f.acked_ranges.rend(); ++it)
                ranges.push_back(json::array({it->first, it->second}));
            json ack = {{"frame_type", "ack"}, {"ack_delay", ms(f.ack_delay)}, {"acked_ranges", ranges}};
            if (f.ecn_counts) {
                ack["ect0"] = (*f.ecn_counts)[0];
                ack["ect1"] = (*f.ecn_counts)[1];
                ack["ce"] = (*f.ecn_counts)[2];
            }
            return ack;
        }
        case T::crypto: return {{"frame_type", "crypto"}, {"offset", f.offset}, {"length", f.length}};
        case T::stream:
            return {{"frame_type", "stream"}, {"stream_id", f.stream_id}, {"offset", f.offset},
                    {"length", f.length},     {"fin", f.fin}};
        case T::max_data: return {{"frame_type", "max_data"}, {"maximum", f.value}};
        case T::max_stream_data:
            return {{"frame_type", "max_stream_data"}, {"stream_id", f.stream_id}, {"maximum", f.value}};
        case T::max_streams:
            return {{"frame_type", "max_streams"}, {"stream_type", stream_type(f)}, {"maximum", f.value}};
        case T::streams_blocked:
            return {{"frame_type", "streams_blocked"}, {"stream_type", stream_type(f)}, {"limit", f.value}};
        case T::reset_stream:
            return {{"frame_type", "reset_stream"}, {"stream_id", f.stream_id}, {"error_code", f.value},
                    {"final_size", f.offset}};
        case T::stop_sending:
            return {{"frame_type", "stop_sending"}, {"stream_id", f.stream_id}, {"error_code", f.value}};
        case T::new_token: return {{"frame_type", "new_token"}, {"length", f.length}};
        case T::new_connection_id: return {{"frame_type", "new_connection_id"}, {"sequence_number", f.value}};
        case T::retire_connection_id: return {{"frame_type", "retire_connection_id"}, {"sequence_number", f.value}};
        case T::path_challenge: return {{"frame_type", "path_challenge"}};
        case T::path_response: return {{"frame_type", "path_response"}};
        case T::data_blocked: return {{"frame_type", "data_blocked"}, {"limit", f.value}};
        case T::stream_data_blocked:
            return {{"frame_type", "stream_data_blocked"}, {"stream_id", f.stream_id}, {"limit", f.value}};
        case T::connection_close:
            return {{"frame_type", "connection_close"},
                    {"error_space", f.application ? "application" : "transport"},
                    {"error_code", f.value}};
        case T::handshake_done: return {{"frame_type", "handshake_done"}};
        // The names and fields of qlog's ack-frequency extension (draft-ietf-quic-ack-frequency's qlog events).
        case T::ack_frequency:
            return {{"frame_type", "ack_frequency"},
                    {"sequence_number", f.value},
                    {"ack_eliciting_threshold", f.ack_eliciting_threshold},
                    {"request_max_ack_delay", std::chrono::duration<double, std::milli>(f.requested_max_ack_delay).count()},
                    {"reordering_threshold", f.reordering_threshold}};
        case T::immediate_ack: return {{"frame_type", "immediate_ack"}};
        // qlog's QUIC schema (draft-ietf-quic-qlog-quic-events, DatagramFrame): the payload's length.
        case T::datagram: return {{"frame_type", "datagram"}, {"length", f.length}};
    }
    return {{"frame_type", "unknown"}};
}

class Writer final : public trace::ConnectionObserver {
public:
    Writer(std::ostream& out, const trace::ConnectionInfo& info, std::unique_ptr<std::ostream> owned = nullptr)
        : owned_(std::move(owned)), out_(out), ref_(info.reference_time) {
        const std::string odcid = hex(info.original_dcid);
        const auto wall = std::chrono::system_clock::now();
        const double wall_ms = std::chrono::duration<double, std::milli>(wall.time_since_epoch()).count();
        // What wrote the trace (include/ndm/version.hpp), an extension field
        // beside the schema's own, as the tools' JSON outputs carry it.
        json prov = json::object();
        for_each_field(provenance(wall), [&](const char* key, const std::string& value) { prov[key] = value; });
        record({{"qlog_version", "0.3"},
                {"qlog_format", "JSON-SEQ"},
                {"title", "ndm"},
                {"provenance", std::move(prov)},
                {"trace",
                 {{"title", fmt::format("ndm {} {}", info.client ? "client" : "server", odcid)},
                  {"vantage_point", {{"name", "ndm"}, {"type", info.client ? "client" : "server"}}},
                  {"common_fields",
                   {{"ODCID", odcid},
                    {"group_id", odcid},
                    {"protocol_type", json::array({"QUIC"})},
                    {"time_format", "relative"},
                    {"reference_time", wall_ms}}}}}});
    }
    ~Writer() override { out_.flush(); }

    void on_packet_sent(const trace::PacketSent& e) override {
        event(e.time, "transport:packet_sent", packet(e.type, e.packet_number, e.size, e.frames));
    }
    void on_packet_received(const trace::PacketReceived& e) override {
        event(e.time, "transport:packet_received", packet(e.type, e.packet_number, e.size, e.frames));
    }
    void on_packet_lost(const trace::PacketLost& e) override {
        event(e.time, "recovery:packet_lost",
              {{"header", {{"packet_type", packet_type_name(e.type)}, {"packet_number", e.packet_number}}},
               {"raw", {{"length", e.size}}}});
    }
    void on_metrics_updated(const trace::MetricsUpdated& e) override {
        // Field names and units of quic-events §7.3 (recovery:metrics_updated):
        // bytes, RTTs in ms, pacing_rate an integer in bits per second.
        json d = json::object();
        if (e.cwnd) d["congestion_window"] = *e.cwnd;
        if (e.bytes_in_flight) d["bytes_in_flight"] = *e.bytes_in_flight;
        if (e.ssthresh) d["ssthresh"] = *e.ssthresh;
        if (e.smoothed_rtt) d["smoothed_rtt"] = ms(*e.smoothed_rtt);
        if (e.min_rtt) d["min_rtt"] = ms(*e.min_rtt);
        if (e.latest_rtt) d["latest_rtt"] = ms(*e.latest_rtt);
        if (e.rtt_variance) d["rtt_variance"] = ms(*e.rtt_variance);
        if (e.pacing_rate) d["pacing_rate"] = static_cast<std::uint64_t>(std::llround(std::max(0.0, *e.pacing_rate)));
        event(e.time, "recovery:metrics_updated", std::move(d));
    }
    void on_congestion_state_updated(const trace::CongestionStateUpdated& e) override {
        event(e.time, "recovery:congestion_state_updated", {{"old", e.old_state}, {"new", e.new_state}});
    }
    void on_ecn_state_updated(const trace::EcnStateUpdated& e) override {
        // quic-events' recovery:ecn_state_updated; ndm's "disabled" never changes, so it is never logged.
        event(e.time, "recovery:ecn_state_updated", {{"old", to_string(e.old_state)}, {"new", to_string(e.new_state)}});
    }

private:
    static json packet(trace::PacketType type, std::uint64_t pn, std::size_t size, std::span<const trace::Frame> frames) {
        json fs = json::array();
        for (const auto& f : frames) fs.push_back(frame_json(f));
        return {{"header", {{"packet_type", packet_type_name(type)}, {"packet_number", pn}}},
                {"raw", {{"length", size}}},
                {"frames", std::move(fs)}};
    }
    void event(Instant t, const char* name, json data) {
        record({{"time", ms(t - ref_)}, {"name", name}, {"data", std::move(data)}});
    }
    void record(const json& j) { out_ << '\x1e' << j.dump() << '\n'; }

    std::unique_ptr<std::ostream> owned_;
    std::ostream& out_;
    Instant ref_;
};

}  // namespace

std::unique_ptr<trace::ConnectionObserver> make_writer(std::ostream& out, const trace::ConnectionInfo& info) {
    return std::make_unique<Writer>(out, info);
}

std::string file_name(const trace::ConnectionInfo& info) {
    return fmt::format("{}_{}.sqlog", hex(info.original_dcid), info.client ? "client" : "server");
}

trace::ObserverFactory file_observer(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw std::runtime_error(fmt::format("cannot create qlog directory {}: {}", dir,
                                             ec ? ec.message() : "not a directory"));
    return [dir](const trace::ConnectionInfo& info) -> std::unique_ptr<trace::ConnectionObserver> {
        const auto path = std::filesystem::path(dir) / file_name(info);
        auto file = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
        if (!*file) {
            spdlog::warn("ndm: cannot write qlog file {}; this connection is not traced", path.string());
            return nullptr;
        }
        std::ostream& out = *file;
        return std::make_unique<Writer>(out, info, std::move(file));
    };
}

}  // namespace ndm::qlog

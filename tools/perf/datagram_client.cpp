#include "tools/perf/datagram_client.hpp"

#include <algorithm>
#include <iostream>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "tools/cli/interrupt.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/provenance.hpp"
#include "tools/cli/units.hpp"
#include "tools/perf/datagram_test.hpp"
#include "tools/perf/iperf_output.hpp"
#include "tools/perf/send_client.hpp"

namespace ndm::tools::send {

using nlohmann::json;

namespace {

// After the send phase, how long the transport may take to learn the fate
// of the last datagrams (acknowledged or declared lost) and the receiver to
// answer.
constexpr Duration kSettle = std::chrono::seconds(30);

class DatagramClient {
public:
    DatagramClient(const Options& o, const TestParams& params, const std::optional<emu::Profile>& profile,
                   json& intervals)
        : o_(o), params_(params), intervals_(intervals), cfg_(client_endpoint_config(o, profile, path_)), ep_(cfg_) {}

    int run() {
        try {
            connect();
            send_phase();
            settle();
            const ReceiverReport rr = collect_report();
            close("test complete");
            return report(rr);
        } catch (const tools::Interrupted&) {
            close("the client was interrupted");
            throw;
        }
    }

private:
    void connect() {
        const std::string address =
            resolve_host(o_.host, o_.ipv4 ? AddressFamily::ipv4 : o_.ipv6 ? AddressFamily::ipv6 : AddressFamily::any);
        if (!o_.json) std::cout << fmt::format("Connecting to host {}, port {}\n", o_.host, o_.port) << std::flush;
        TestParams p = params_;
        p.test_id = std::random_device{}() * 0x100000000ULL + std::random_device{}();
        ConnectionConfig cc = cfg_.connection;
        cc.application_params = tools::encode(p);
        if (cc.tls.server_name.empty())
            cc.tls.server_name = address == o_.host || o_.host.front() == '[' ? address : o_.host;
        h_ = ep_.connect(address, o_.port, cc);
        Connection& c =
            tools::await_established(ep_, h_, cfg_.connection.handshake_timeout + std::chrono::seconds(1));
        length_ = c.max_datagram_payload();
        if (length_ < kDatagramHeader)
            throw std::runtime_error("the server takes no DATAGRAM frames (RFC 9221): an ndm-recv without -u?");
        const auto id = c.open_stream();
        if (!id) throw std::runtime_error("the receiver allows no stream");
        stream_ = *id;
        buf_.resize(length_);
        if (!o_.json)
            std::cout << fmt::format("[ ID] Interval           Transfer     Bitrate         Total Datagrams"
                                     "   ({} bytes of payload each)\n",
                                     length_);
    }

    Connection& conn(const char* when) {
        Connection* c = ep_.connection(h_);
        if (!c || c->state() != ConnectionState::established) {
            const CloseInfo* ci = ep_.close_info(h_);
            throw std::runtime_error(fmt::format("connection lost {}: {}", when,
                                                 ci ? tools::printable(ci->reason) : "the connection closed"));
        }
        return *c;
    }

    // iperf3 -u's pacing: datagram n is due at n * length * 8 / rate
    // seconds; one the send buffer refuses (the congestion window is full)
    // waits, and keeps its sequence number.
    void send_phase() {
        start_ = sample_begin_ = steady_now();
        next_sample_ = start_ + from_seconds(params_.interval);
        const Instant end = start_ + from_seconds(params_.seconds);
        const double per_datagram_s = static_cast<double>(length_) * 8 / static_cast<double>(params_.bitrate);
        for (Instant now = steady_now(); now < end; now = steady_now()) {
            tools::throw_if_interrupted();
            Connection& c = conn("during the test");
            const auto due = static_cast<std::uint64_t>(secs(start_, now) / per_datagram_s) + 1;
            while (sent_ < due) {
                fill_datagram(buf_, sent_, static_cast<std::uint64_t>(
                                              std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  now.time_since_epoch())
                                                  .count()));
                const DatagramSendResult r = c.send_datagram(buf_);
                if (r.status == DatagramStatus::queue_full) break;
                if (!r.queued())
                    throw std::runtime_error(fmt::format("a datagram was refused: {}", datagram_status_name(r.status)));
                ++sent_;
            }
            const Instant next_due = start_ + from_seconds(static_cast<double>(sent_) * per_datagram_s);
            ep_.run_once(std::min({next_sample_, end, std::max(next_due, now), now + std::chrono::milliseconds(2)}));
            if (steady_now() >= next_sample_) {
                sample(steady_now());
                next_sample_ += from_seconds(params_.interval);
            }
        }
        if (secs(sample_begin_, steady_now()) > params_.interval / 10) sample(steady_now());
        sent_seconds_ = secs(start_, steady_now());
    }

    void sample(Instant now) {
        const double b = secs(start_, sample_begin_), e = secs(start_, now);
        const std::uint64_t n = sent_ - sample_sent_;
        const std::uint64_t bytes = n * length_;
        if (o_.json) {
            json s = sum_json(b, e, bytes, std::nullopt, true);
            s["packets"] = n;
            s["socket"] = 1;
            intervals_.push_back({{"streams", json::array({s})}, {"sum", s}});
        } else {
            std::cout << fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}  {:>8}\n", id_label(0), b, e,
                                     format_bytes(bytes), format_bitrate(rate(bytes, e - b)), n);
            if (o_.output.force_flush) std::cout << std::flush;
        }
        sample_sent_ = sent_;
        sample_begin_ = now;
    }

    // Until every datagram given has been sent and its fate is known, so the
    // receiver has all it will get before our FIN asks for its count.
    void settle() {
        const bool settled = tools::run_until(ep_,
            [&] {
                const Connection* c = ep_.find(h_);
                if (!c || c->state() != ConnectionState::established) return true;
                st_ = c->stats(steady_now());
                return st_.datagrams_sent == sent_ && st_.datagrams_acked + st_.datagrams_lost == st_.datagrams_sent;
            },
            kSettle);
        Connection& c = conn("after the send phase");
        if (!settled) throw std::runtime_error("the datagrams' fate was not known within 30 s after the send phase");
        c.finish(stream_);
    }

    ReceiverReport collect_report() {
        std::vector<std::uint8_t> got;
        bool finished = false;
        tools::run_until(ep_,
            [&] {
                Connection* c = ep_.connection(h_);
                if (!c || c->is_closed()) return true;
                tools::drain(*c, stream_, [&](std::span<const std::uint8_t> d) { got.insert(got.end(), d.begin(), d.end()); });
                finished = c->stream_finished(stream_);
                return finished || got.size() > 65536;
            },
            kSettle);
        if (!finished) {
            (void)conn("before the receiver's report");
            throw std::runtime_error("no report from the receiver within 30 s after the send phase");
        }
        st_ = conn("after the report").stats(steady_now());
        ReceiverReport rr = tools::decode_receiver_report(got);
        if (!rr.datagrams) throw std::runtime_error("the receiver's report has no datagram counts");
        return rr;
    }

    void close(const std::string& reason) {
        if (Connection* c = ep_.connection(h_)) c->close(0, reason, steady_now());
        ep_.run_until([&] { return !ep_.find(h_) || ep_.find(h_)->is_closed(); }, std::chrono::milliseconds(300));
    }

    // iperf3 -u's closing lines: the sender's count, the receiver's jitter
    // and lost/total, where lost counts what we sent and it did not receive.
    int report(const ReceiverReport& rr) {
        const ReceiverReport::Datagrams& d = *rr.datagrams;
        const std::uint64_t lost = sent_ > d.received ? sent_ - d.received : 0;
        const double lost_pct = sent_ ? 100.0 * static_cast<double>(lost) / static_cast<double>(sent_) : 0.0;
        const std::uint64_t sent_bytes = sent_ * length_;
        std::string problem;
        if (d.received > sent_ || d.expected > sent_) problem = "the receiver counted datagrams that were never sent";
        else if (d.duplicates > 0) problem = fmt::format("{} datagrams arrived twice", d.duplicates);
        else if (d.malformed > 0) problem = fmt::format("{} datagrams arrived damaged", d.malformed);
        if (o_.json) {
            json sender = sum_json(0, sent_seconds_, sent_bytes, std::nullopt, true);
            sender["packets"] = sent_;
            json receiver = sum_json(0, rr.seconds, rr.bytes, std::nullopt, false);
            json sum = sum_json(0, sent_seconds_, sent_bytes, std::nullopt, true);
            sum.update({{"jitter_ms", d.jitter_ms}, {"lost_packets", lost}, {"packets", sent_},
                        {"lost_percent", lost_pct}, {"out_of_order", d.out_of_order}});
            json doc = {{"provenance", provenance_json(o_.started)},
                        {"start",
                         {{"test_start",
                           {{"protocol", "NDM"}, {"datagram", true}, {"num_streams", 1}, {"blksize", length_},
                            {"duration", params_.seconds}, {"bitrate", params_.bitrate}}},
                          {"sender_congestion", params_.cc}}},
                        {"intervals", intervals_},
                        {"end",
                         {{"sum", sum},
                          {"sum_sent", sender},
                          {"sum_received", receiver},
                          {"datagrams",
                           {{"sent", sent_},
                            {"acked", st_.datagrams_acked},
                            {"lost_by_transport", st_.datagrams_lost},
                            {"refused_at_send_buffer", st_.datagrams_refused},
                            {"received", d.received},
                            {"out_of_order", d.out_of_order},
                            {"duplicates", d.duplicates},
                            {"malformed", d.malformed},
                            {"retransmits", st_.packets_retransmitted}}}}}};
            if (!problem.empty()) doc["error"] = problem;
            if (!o_.output.title.empty()) doc["title"] = o_.output.title;
            std::cout << doc.dump(2) << '\n';
        } else {
            std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
                      << "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
                      << fmt::format("{}   0.00-{:<6.2f} sec  {:>12}  {:>15}  {:7.3f} ms  {}  sender\n", id_label(0),
                                     sent_seconds_, format_bytes(sent_bytes),
                                     format_bitrate(rate(sent_bytes, sent_seconds_)), 0.0, loss_text(0, sent_))
                      << fmt::format("{}   0.00-{:<6.2f} sec  {:>12}  {:>15}  {:7.3f} ms  {}  receiver\n",
                                     id_label(0), rr.seconds, format_bytes(rr.bytes),
                                     format_bitrate(rate(rr.bytes, rr.seconds)), d.jitter_ms, loss_text(lost, sent_))
                      << fmt::format("datagrams: {} out of order, {} duplicates, {} malformed at the receiver; the "
                                     "transport declared {} lost (none resent: {} packets retransmitted) and the "
                                     "send buffer refused {} while the congestion window was full\n",
                                     d.out_of_order, d.duplicates, d.malformed, st_.datagrams_lost,
                                     st_.packets_retransmitted, st_.datagrams_refused)
                      << "\nndm-send done.\n";
        }
        if (!problem.empty()) {
            std::cerr << "ndm-send: " << problem << '\n';
            return 1;
        }
        return 0;
    }

    const Options& o_;
    const TestParams& params_;
    json& intervals_;
    std::optional<tools::SharedEmuPath> path_;  // before cfg_: client_endpoint_config fills it
    const EndpointConfig cfg_;
    Endpoint ep_;
    ConnectionHandle h_ = 0;
    StreamId stream_ = 0;
    std::size_t length_ = 0;  // payload bytes of each datagram
    std::vector<std::uint8_t> buf_;
    std::uint64_t sent_ = 0, sample_sent_ = 0;
    ConnectionStats st_;
    Instant start_{}, sample_begin_{}, next_sample_{};
    double sent_seconds_ = 0;
};

}  // namespace

int run_datagram_client(const Options& o, const TestParams& params, const std::optional<emu::Profile>& profile,
                        json& intervals) {
    return DatagramClient(o, params, profile, intervals).run();
}

}  // namespace ndm::tools::send

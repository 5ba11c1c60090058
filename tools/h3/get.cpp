#include "tools/h3/get.hpp"

#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndm/endpoint.hpp"
#include "ndm/h3.hpp"
#include "ndm/version.hpp"
#include "tools/cli/interrupt.hpp"
#include "tools/cli/output_dir.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/provenance.hpp"

namespace ndm::tools::h3 {

using json = nlohmann::json;

Url parse_url(const std::string& text) {
    const auto bad = [&](const char* why) { return std::invalid_argument(fmt::format("URL {}: {}", text, why)); };
    constexpr std::string_view scheme = "https://";
    if (text.compare(0, scheme.size(), scheme) != 0)
        throw bad("expected https://HOST[:PORT]/PATH (HTTP/3 is https only, RFC 9114 §3.1)");
    Url u;
    u.text = text;
    const std::string rest = text.substr(scheme.size());
    const std::size_t slash = rest.find('/');
    u.authority = rest.substr(0, slash);
    u.path = slash == std::string::npos ? "/" : rest.substr(slash);
    if (u.authority.empty()) throw bad("no host");
    if (u.authority.find('@') != std::string::npos) throw bad("user information in a URL is not supported");
    std::string port;
    if (u.authority.front() == '[') {
        const std::size_t close = u.authority.find(']');
        if (close == std::string::npos) throw bad("an IPv6 address without its ']'");
        u.host = u.authority.substr(1, close - 1);
        if (close + 1 < u.authority.size()) {
            if (u.authority[close + 1] != ':') throw bad("expected ':PORT' after the IPv6 address");
            port = u.authority.substr(close + 2);
        }
    } else {
        const std::size_t colon = u.authority.find(':');
        u.host = u.authority.substr(0, colon);
        if (colon != std::string::npos) port = u.authority.substr(colon + 1);
    }
    if (u.host.empty()) throw bad("no host");
    if (!port.empty() || u.authority.back() == ':') {
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
            std::stoul(port) == 0 || std::stoul(port) > 65535)
            throw bad("expected a port from 1 to 65535");
        u.port = static_cast<std::uint16_t>(std::stoul(port));
    }
    if (u.path.find_first_of(" \r\n\t") != std::string::npos) throw bad("white space in the path");
    check_host(u.host, "URL " + text);
    return u;
}

std::string file_name(const Url& url) {
    std::string p = url.path.substr(0, url.path.find_first_of("?#"));
    std::string name = p.substr(p.rfind('/') + 1);
    if (name.empty()) name = "index.html";
    if (name == "." || name == "..") throw std::invalid_argument(fmt::format("URL {}: no file name", url.text));
    return name;
}

namespace {

// One URL's download.
struct Download {
    Url url;
    std::string file;  // in -o DIR, else empty
    bool submitted = false, done = false;
    unsigned status = 0;
    std::uint64_t bytes = 0;
    std::string error;
    double headers_ms = -1, total_ms = -1;
    Instant started{};
    std::ofstream out;                 // -o
    std::vector<std::uint8_t> held;    // standard output: written in URL order once done
    [[nodiscard]] bool ok() const { return done && error.empty(); }
};

class Client {
public:
    explicit Client(GetOptions& o) : o_(o) {}
    int run();

private:
    void prepare();
    void on_event(ConnectionHandle h, const Event& ev);
    void submit_pending(Connection& c);
    void maybe_update_keys(Connection& c);
    ::ndm::h3::ResponseHandler handler(Download& d);
    void finish(Download& d, const std::string& error);
    void close_connection();
    void write_stdout_in_order();
    int report();
    [[nodiscard]] bool all_done() const { return completed_ == downloads_.size(); }

    GetOptions& o_;
    std::deque<Download> downloads_;
    std::size_t next_ = 0, completed_ = 0, written_ = 0;
    std::unique_ptr<Endpoint> ep_;
    std::optional<SharedEmuPath> path_;
    ConnectionHandle h_ = 0;
    std::unique_ptr<::ndm::h3::Session> session_;
    Instant start_{}, end_{};
    std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
    std::optional<double> handshake_ms_;
    bool session_started_ = false;  // before the handshake completes with 0-RTT
    HandshakeSummary summary_;
    SessionFile kept_;  // --session-file: read at the start, written at the end
    std::optional<CloseInfo> closed_;
    std::optional<double> key_update_ms_;  // --key-update: when it started, from the first packet
    std::uint64_t key_updates_ = 0;        // ConnectionStats::key_updates at the end
};

void Client::prepare() {
    if (o_.json && o_.out_dir.empty())
        throw std::invalid_argument("-J prints its document on standard output: give -o DIR for the bodies");
    std::set<std::string> names;
    for (const std::string& text : o_.urls) {
        Download& d = downloads_.emplace_back();
        d.url = parse_url(text);
        if (d.url.host != downloads_.front().url.host || d.url.port != downloads_.front().url.port)
            throw std::invalid_argument(fmt::format(
                "URL {}: ndm-h3 get makes one connection, to {}; run it once per server", text,
                downloads_.front().url.authority));
        if (o_.out_dir.empty()) continue;
        d.file = (std::filesystem::path(o_.out_dir) / file_name(d.url)).string();
        if (!names.insert(d.file).second)
            throw std::invalid_argument(fmt::format("URL {}: -o {}: another URL writes {} too", text, o_.out_dir,
                                                    file_name(d.url)));
    }
    if (!o_.out_dir.empty()) make_output_dir(o_.out_dir, "-o");
}

::ndm::h3::ResponseHandler Client::handler(Download& d) {
    ::ndm::h3::ResponseHandler r;
    r.headers = [&d](unsigned status, const std::vector<::ndm::h3::Field>&) {
        d.status = status;
        d.headers_ms = to_seconds(steady_now() - d.started) * 1e3;
        if (!d.file.empty()) {
            d.out.open(d.file, std::ios::binary | std::ios::trunc);
            if (!d.out) d.error = fmt::format("cannot write {}", d.file);
        }
    };
    r.data = [&d](std::span<const std::uint8_t> bytes) {
        d.bytes += bytes.size();
        if (d.out.is_open()) d.out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        else if (d.file.empty()) d.held.insert(d.held.end(), bytes.begin(), bytes.end());
    };
    r.done = [this, &d](const std::string& error) { finish(d, error); };
    return r;
}

// A download ends: whole, or with the reason it is not. A file that is not
// whole is removed, so that nothing cut short passes for a download.
void Client::finish(Download& d, const std::string& error) {
    if (d.done) return;
    d.done = true;
    ++completed_;
    d.total_ms = to_seconds(steady_now() - d.started) * 1e3;
    if (d.error.empty()) d.error = error;
    if (d.error.empty() && (d.status < 200 || d.status > 299)) d.error = fmt::format("HTTP status {}", d.status);
    if (d.out.is_open()) {
        d.out.close();
        if (d.error.empty() && !d.out) d.error = fmt::format("writing {} failed", d.file);
    }
    if (!d.error.empty() && !d.file.empty()) std::filesystem::remove(d.file);
    if (o_.common.verbose)
        std::cerr << fmt::format("ndm-h3: {} {} {} bytes in {:.1f} ms{}\n", d.url.text, d.status, d.bytes, d.total_ms,
                                 d.error.empty() ? "" : " (" + printable(d.error) + ")");
    write_stdout_in_order();
}

void Client::write_stdout_in_order() {
    if (!o_.out_dir.empty()) return;
    while (written_ < downloads_.size() && downloads_[written_].done) {
        Download& d = downloads_[written_++];
        if (d.ok()) std::cout.write(reinterpret_cast<const char*>(d.held.data()), static_cast<std::streamsize>(d.held.size()));
        d.held = {};
    }
    std::cout.flush();
}

// As many requests as the server's stream limit allows now; the rest wait
// for the MAX_STREAMS that finished streams bring.
void Client::submit_pending(Connection& c) {
    while (next_ < downloads_.size()) {
        Download& d = downloads_[next_];
        ::ndm::h3::Request req;
        req.authority = d.url.authority;
        req.path = d.url.path;
        req.fields = {{"user-agent", "ndm-h3/" + std::string(ndm::version())}};
        d.started = steady_now();
        if (!session_->submit(c, req, handler(d))) {
            if (session_->goaway_received()) {  // the server will take no more: the rest fail, said
                for (; next_ < downloads_.size(); ++next_) finish(downloads_[next_], "the server sent GOAWAY first");
            }
            return;
        }
        d.submitted = true;
        ++next_;
    }
}

void Client::on_event(ConnectionHandle h, const Event& ev) {
    if (h != h_) return;
    const Instant now = steady_now();
    if (const auto* closed = std::get_if<event::Closed>(&ev)) {
        closed_ = closed->info;
        session_->on_close(closed->info);
        for (; next_ < downloads_.size(); ++next_) finish(downloads_[next_], "the connection closed first");
        return;
    }
    Connection* c = ep_->connection(h);
    if (!c) return;
    if (kept_.take(ev)) return;
    if (std::holds_alternative<event::Established>(ev)) {
        handshake_ms_ = to_seconds(now - start_) * 1e3;
        summary_ = c->handshake_summary();
        if (!session_started_) session_->start(*c);
        session_started_ = true;
    } else {
        session_->on_event(*c, ev, now);
    }
    if (c->is_established() && session_->error().empty()) {
        submit_pending(*c);
        session_->flush(*c, now);
    }
    maybe_update_keys(*c);
}

// --key-update: tried after every turn until the connection allows it
// (Connection::request_key_update: confirmed, a first-phase packet acknowledged).
void Client::maybe_update_keys(Connection& c) {
    if (!o_.key_update || key_update_ms_ || !c.is_established() || !c.request_key_update()) return;
    key_update_ms_ = to_seconds(steady_now() - start_) * 1e3;
    if (o_.common.verbose) std::cerr << fmt::format("ndm-h3: key update started at {:.1f} ms\n", *key_update_ms_);
}

// GOAWAY, then a clean close (H3_NO_ERROR), waited for briefly.
void Client::close_connection() {
    if (const Connection* c = ep_->find(h_)) key_updates_ = c->stats(steady_now()).key_updates;
    if (Connection* c = ep_->connection(h_); c && c->is_established()) {
        session_->shutdown(*c);
        session_->flush(*c, steady_now());
        c->close(::ndm::h3::kNoError, "", steady_now());
    }
    ep_->run_until([&] { return ep_->find(h_) == nullptr; }, std::chrono::seconds(2));
}

int Client::run() {
    prepare();
    if (!o_.session.file.empty()) kept_ = SessionFile::load(o_.session.file);
    const std::optional<emu::Profile> profile = check_common(o_.common);
    EndpointConfig cfg = endpoint_config(o_.common, profile, client_tls(o_.tls), emu::Direction::up, path_);
    cfg.connection.handshake_timeout = from_seconds(o_.connect_timeout_s);
    cfg.connection.tls.server_name = o_.tls.server_name.empty() ? downloads_.front().url.host : o_.tls.server_name;
    if (!o_.session.file.empty()) kept_.apply(cfg.connection, !o_.session.no_early_data);
    ep_ = std::make_unique<Endpoint>(cfg);
    session_ = ::ndm::h3::Session::client();
    catch_interrupts();
    start_ = steady_now();
    h_ = ep_->connect(downloads_.front().url.host, downloads_.front().url.port);
    ep_->on_event([this](ConnectionHandle h, const Event& ev) { on_event(h, ev); });
    // 0-RTT (RFC 9114 §A.2.4 allows requests in it): the session and the
    // requests start now, in the client's first flight.
    if (Connection* c = ep_->connection(h_); c && c->can_send_early_data()) {
        session_->start(*c);
        session_started_ = true;
        submit_pending(*c);
        session_->flush(*c, steady_now());
    }
    try {
        // The server's MAX_STREAMS may come in a packet that raises no event:
        // requests still waiting for a stream are tried after every turn.
        while (!all_done() && !closed_) {
            ep_->run_once(steady_now() + std::chrono::milliseconds(100));
            throw_if_interrupted();
            if (Connection* c = ep_->connection(h_); c && o_.key_update && !key_update_ms_) maybe_update_keys(*c);
            if (next_ == downloads_.size() || !handshake_ms_) continue;
            if (Connection* c = ep_->connection(h_); c && c->is_established() && session_->error().empty()) {
                submit_pending(*c);
                session_->flush(*c, steady_now());
            }
        }
    } catch (const Interrupted&) {
        for (Download& d : downloads_) finish(d, "interrupted");
    }
    end_ = steady_now();
    close_connection();
    if (!o_.session.file.empty() && (kept_.ticket || !kept_.token.empty())) {
        try {
            kept_.save(o_.session.file);
        } catch (const std::runtime_error& e) {
            std::cerr << "ndm-h3: " << e.what() << '\n';
        }
    }
    return report();
}

int Client::report() {
    const double seconds = to_seconds(end_ - start_);  // from the first packet to the last response, not the close
    std::uint64_t bytes = 0;
    std::size_t ok = 0;
    for (const Download& d : downloads_) {
        bytes += d.bytes;
        ok += d.ok();
        if (!d.ok()) std::cerr << fmt::format("ndm-h3: {}: {}\n", d.url.text, printable(d.error));
    }
    const Url& u = downloads_.front().url;
    if (!handshake_ms_)
        std::cerr << fmt::format("ndm-h3: no HTTP/3 connection to {}{}\n", u.authority,
                                 closed_ ? ": " + printable(closed_->reason) : "");
    const bool key_update_failed = o_.key_update && handshake_ms_ && !key_update_ms_;
    if (key_update_failed)
        std::cerr << "ndm-h3: --key-update: the connection allowed no key update before the downloads ended\n";
    if (o_.json) {
        json requests = json::array();
        for (const Download& d : downloads_) {
            json r = {{"url", d.url.text}, {"status", d.status}, {"bytes", d.bytes}};
            if (!d.file.empty() && d.ok()) r["file"] = d.file;
            if (d.headers_ms >= 0) r["headers_ms"] = d.headers_ms;
            if (d.total_ms >= 0) r["total_ms"] = d.total_ms;
            if (!d.ok()) r["error"] = printable(d.error);
            requests.push_back(r);
        }
        json doc = {{"provenance", provenance_json(started_)},
                    {"connection", {{"server", u.authority}, {"alpn", summary_.alpn}, {"cipher_suite", summary_.cipher_suite},
                                    {"resumed", summary_.resumed}, {"early_data", summary_.early_data}}},
                    {"requests", requests},
                    {"end", {{"requests", downloads_.size()}, {"ok", ok}, {"bytes", bytes}, {"seconds", seconds},
                             {"bits_per_second", seconds > 0 ? bytes * 8 / seconds : 0.0}}},
                    {"ok", ok == downloads_.size()}};
        if (handshake_ms_) doc["connection"]["handshake_ms"] = *handshake_ms_;
        doc["connection"]["key_updates"] = key_updates_;
        if (key_update_ms_) doc["connection"]["key_update_ms"] = *key_update_ms_;
        if (key_update_failed) doc["ok"] = false;
        std::cout << doc.dump(2) << '\n';
    }
    return ok == downloads_.size() && !key_update_failed ? 0 : 1;
}

}  // namespace

int run_get(GetOptions& o) { return Client(o).run(); }

}  // namespace ndm::tools::h3

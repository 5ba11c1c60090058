#include "tools/h3/serve.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "ndm/endpoint.hpp"
#include "ndm/workload.hpp"
#include "tools/cli/interrupt.hpp"
#include "tools/cli/printable.hpp"

namespace ndm::tools::h3 {

namespace fs = std::filesystem;
using ::ndm::h3::Body;
using ::ndm::h3::Request;
using ::ndm::h3::Response;

namespace {

// An open file, shared by the body that reads it.
struct File {
    int fd = -1;
    ~File() {
        if (fd >= 0) ::close(fd);
    }
};

Response text(unsigned status, std::string message) {
    auto s = std::make_shared<std::string>(std::move(message) + "\n");
    Response r{status, {{"content-type", "text/plain"}}, {}};
    r.body.size = s->size();
    r.body.fill = [s](std::uint64_t offset, std::span<std::uint8_t> out) {
        std::copy_n(s->data() + offset, out.size(), out.data());
    };
    return r;
}

// The file `path` names under `root`, or nullopt when none may be served:
// ".." segments, a path that leaves root through a link, not a regular file.
std::optional<fs::path> resolve(const std::string& root, std::string path) {
    path = path.substr(0, path.find_first_of("?#"));
    if (path.empty() || path.front() != '/') return std::nullopt;
    for (std::size_t i = 0; i < path.size();) {
        const std::size_t j = path.find('/', i + 1);
        const std::string seg = path.substr(i + 1, j == std::string::npos ? std::string::npos : j - i - 1);
        if (seg == "..") return std::nullopt;
        i = j == std::string::npos ? path.size() : j;
    }
    fs::path p = fs::path(root) / path.substr(1);
    std::error_code ec;
    if (fs::is_directory(p, ec)) p /= "index.html";
    const fs::path real = fs::canonical(p, ec);
    if (ec) return std::nullopt;
    const std::string r = real.string();
    if (r.compare(0, root.size(), root) != 0 || (r.size() > root.size() && r[root.size()] != '/' && root != "/"))
        return std::nullopt;
    if (!fs::is_regular_file(real, ec)) return std::nullopt;
    return real;
}

std::optional<std::uint64_t> generated_size(const std::string& path) {
    const std::string digits = path.substr(1, path.find_first_of("?#") - 1);
    if (digits.empty() || digits.size() > 13 || digits.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    const std::uint64_t n = std::stoull(digits);
    if (n > kMaxGenerated) return std::nullopt;
    return n;
}

}  // namespace

Response respond(const std::string& root, const Request& req) {
    if (req.method != "GET" && req.method != "HEAD") {
        Response r = text(405, "method not allowed: ndm-h3 serve answers GET and HEAD");
        r.fields.push_back({"allow", "GET, HEAD"});
        return r;
    }
    if (const auto file = resolve(root, req.path)) {
        auto f = std::make_shared<File>();
        f->fd = ::open(file->c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st {};
        if (f->fd < 0 || ::fstat(f->fd, &st) != 0) return text(403, "cannot read " + req.path);
        Response r;
        r.body.size = static_cast<std::uint64_t>(st.st_size);
        // A short read (the file shrank while served) cannot be made whole:
        // the body's fill throws, the handler's stream ends in an error.
        r.body.fill = [f, size = r.body.size](std::uint64_t offset, std::span<std::uint8_t> out) {
            std::size_t done = 0;
            while (done < out.size()) {
                const ssize_t n = ::pread(f->fd, out.data() + done, out.size() - done,
                                          static_cast<off_t>(offset + done));
                if (n <= 0) throw std::runtime_error(fmt::format("file shorter than its {} bytes", size));
                done += static_cast<std::size_t>(n);
            }
        };
        return r;
    }
    if (const auto n = generated_size(req.path)) {
        auto payload = std::make_shared<workload::Payload>(0);
        Response r;
        r.body.size = *n;
        r.body.fill = [payload](std::uint64_t offset, std::span<std::uint8_t> out) { payload->fill(offset, out); };
        return r;
    }
    return text(404, "not found");
}

namespace {

class Server {
public:
    explicit Server(ServeOptions& o) : o_(o) {}
    int run();

private:
    void on_event(ConnectionHandle h, const Event& ev);

    ServeOptions& o_;
    std::string root_;
    std::unique_ptr<Endpoint> ep_;
    std::optional<SharedEmuPath> path_;
    std::map<ConnectionHandle, std::unique_ptr<::ndm::h3::Session>> sessions_;
    // --early-data: stream events of a connection's 0-RTT requests, which
    // come before it is established; the bytes wait in the transport, and
    // the session reads them once it has started (it cannot send before).
    std::map<ConnectionHandle, std::vector<Event>> early_;
    std::uint64_t closed_ = 0;
};

void Server::on_event(ConnectionHandle h, const Event& ev) {
    const Instant now = steady_now();
    if (const auto* closed = std::get_if<event::Closed>(&ev)) {
        auto it = sessions_.find(h);
        early_.erase(h);
        if (it == sessions_.end()) return;
        it->second->on_close(closed->info);
        const CloseInfo& i = closed->info;
        const bool clean = (i.application && i.code == ::ndm::h3::kNoError) || (!i.application && i.code == 0);
        if (!clean || o_.common.verbose)
            std::cerr << fmt::format("ndm-h3: client #{} {}: {}{}\n", h, clean ? "closed" : "failed",
                                     i.application ? ::ndm::h3::error_name(i.code) : close_code_name(i.code),
                                     i.reason.empty() ? "" : " (" + printable(i.reason) + ")");
        sessions_.erase(it);
        ++closed_;
        return;
    }
    Connection* c = ep_->connection(h);
    if (!c) return;
    auto it = sessions_.find(h);
    if (std::holds_alternative<event::Established>(ev)) {
        ::ndm::h3::SessionConfig sc;
        sc.handler = [this, h](const Request& req) {
            Response r = respond(root_, req);
            if (o_.common.verbose)
                std::cerr << fmt::format("ndm-h3: client #{} {} {} {} {}\n", h, printable(req.method),
                                         printable(req.path), r.status, r.body.size);
            return r;
        };
        if (o_.common.verbose) {
            const HandshakeSummary hs = c->handshake_summary();
            std::cerr << fmt::format("ndm-h3: client #{} connected: {}, 0-RTT {}\n", h,
                                     hs.resumed ? "resumed" : "full handshake", hs.early_data);
        }
        it = sessions_.emplace(h, ::ndm::h3::Session::server(std::move(sc))).first;
        try {
            it->second->start(*c);
        } catch (const ::ndm::h3::SessionError& e) {  // the client left no room for our streams
            c->close(0x101 /* H3_GENERAL_PROTOCOL_ERROR */, e.what(), now);
            return;
        }
        if (const auto e = early_.find(h); e != early_.end()) {
            for (const Event& held : e->second) it->second->on_event(*c, held, now);
            early_.erase(e);
        }
    } else if (it == sessions_.end() && !c->is_established()) {
        early_[h].push_back(ev);
    } else if (it != sessions_.end()) {
        it->second->on_event(*c, ev, now);
    }
    if (it != sessions_.end()) it->second->flush(*c, now);
}

int Server::run() {
    std::error_code ec;
    root_ = fs::canonical(o_.root, ec).string();
    if (ec || !fs::is_directory(root_, ec))
        throw std::invalid_argument(fmt::format("DIR {}: not a directory", o_.root));
    const std::optional<emu::Profile> profile = check_common(o_.common);
    check_numeric_address(o_.bind, "--bind");
    const ServerTls tls = server_tls(o_.tls, o_.bind);
    EndpointConfig cfg = endpoint_config(o_.common, profile, tls.options, emu::Direction::down, path_);
    cfg.bind_address = o_.bind;
    cfg.port = o_.port;
    cfg.accept_connections = true;
    cfg.retry = parse_retry_policy(o_.retry);
    if (o_.handshake_timeout_s > 0) cfg.connection.handshake_timeout = from_seconds(o_.handshake_timeout_s);
    ep_ = std::make_unique<Endpoint>(cfg);
    std::cerr << fmt::format("ndm-h3: serving {} over HTTP/3 on {} (UDP)\n", root_, ep_->local_address());
    if (!tls.self_signed_note.empty()) std::cerr << tls.self_signed_note << '\n';
    std::cerr << std::flush;
    ep_->on_event([this](ConnectionHandle h, const Event& ev) { on_event(h, ev); });
    catch_interrupts();
    while (!interrupted() && (o_.count == 0 || closed_ < o_.count)) {
        ep_->run_once(steady_now() + std::chrono::milliseconds(100));
        while (ep_->next_accepted()) {
        }
    }
    // GOAWAY and a clean close for the connections still open.
    for (auto& [h, s] : sessions_)
        if (Connection* c = ep_->connection(h); c && c->is_established()) {
            s->shutdown(*c);
            s->flush(*c, steady_now());
            c->close(::ndm::h3::kNoError, "server shutting down", steady_now());
        }
    ep_->run_until([&] { return ep_->connection_count() == 0; }, std::chrono::seconds(2));
    return 0;
}

}  // namespace

int run_serve(ServeOptions& o) { return Server(o).run(); }

}  // namespace ndm::tools::h3

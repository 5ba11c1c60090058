// EndpointConfig's values: the names of its backends and Retry policies, the
// checks and resolution of host names and addresses (include/ndm/endpoint.hpp),
// and the socket and backend a configuration asks for (io_uring, else the
// epoll fallback: docs/architecture.md's "Real parts").
#include "ndm/endpoint.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "io/backend.hpp"
#include "io/probe.hpp"

namespace ndm {

IoBackend parse_io_backend(const std::string& name) {
    if (name == "auto") return IoBackend::automatic;
    if (name == "uring" || name == "io_uring") return IoBackend::uring;
    if (name == "epoll") return IoBackend::epoll;
    throw std::invalid_argument(fmt::format("unknown I/O backend '{}' (expected auto, uring or epoll)", name));
}

void check_numeric_address(const std::string& host, const std::string& what) {
    try {
        (void)io::Address::parse(host, 0);
    } catch (const EndpointError&) {
        throw std::invalid_argument(fmt::format("{}: '{}' is not a numeric IPv4/IPv6 address (or localhost)", what, host));
    }
}

namespace {
int socket_family(AddressFamily f) { return f == AddressFamily::ipv4 ? AF_INET : f == AddressFamily::ipv6 ? AF_INET6 : AF_UNSPEC; }
}  // namespace

std::string resolve_host(const std::string& host, AddressFamily family) {
    std::string text = io::Address::resolve(host, 0, socket_family(family)).to_string();
    text.erase(text.rfind(':'));  // the port
    if (text.size() >= 2 && text.front() == '[') text = text.substr(1, text.size() - 2);
    return text;
}

void check_host(const std::string& host, const std::string& what) {
    try {
        (void)io::Address::parse(host, 0);
    } catch (const EndpointError&) {
        if (!io::is_host_name(host))
            throw std::invalid_argument(
                fmt::format("{}: '{}' is neither a host name nor a numeric IPv4/IPv6 address", what, host));
    }
}

RetryPolicy parse_retry_policy(const std::string& name) {
    if (name == "auto") return RetryPolicy::under_load;
    if (name == "always") return RetryPolicy::always;
    if (name == "never") return RetryPolicy::never;
    throw std::invalid_argument(fmt::format("unknown Retry policy '{}' (expected auto, always or never)", name));
}

const char* to_string(RetryPolicy p) {
    switch (p) {
        case RetryPolicy::never: return "never";
        case RetryPolicy::under_load: return "auto";
        case RetryPolicy::always: return "always";
    }
    return "?";
}

const char* to_string(IoBackend b) {
    switch (b) {
        case IoBackend::automatic: return "auto";
        case IoBackend::uring: return "uring";
        case IoBackend::epoll: return "epoll";
    }
    return "?";
}

namespace io {

// The socket options come from the configuration; only how many receive
// buffers a wait provides depends on the endpoint's role.
std::unique_ptr<Backend> open_backend(const EndpointConfig& cfg) {
    SocketOptions opt;
    opt.bind = Address::parse(cfg.bind_address, cfg.port);
    opt.gso = cfg.gso;
    opt.gro = cfg.gro;
    opt.buffer_bytes = cfg.socket_buffer_bytes;
    opt.reuse_port = cfg.reuse_port;
    opt.report_errors = !cfg.accept_connections;
    // A data sender reads ACKs, one small datagram per 64 KiB provided
    // buffer: with 16, ndm-send -P 128 read at most 16 a wait and the rest
    // queued (150 ms of RTT on loopback); 64 cost 16 % less CPU per GB.
    // A listening endpoint keeps 16: under a flood of Initials, reading
    // more per wait only answers more of them, and the kernel's drops of
    // the rest are what cost the server nothing (with 64 the flood test's
    // client got no handshake within 6.5 s under ASan; docs/security.md).
    opt.gro_receive_buffers = cfg.accept_connections ? 16 : 64;
    std::unique_ptr<Backend> backend;
    switch (cfg.backend) {
        case IoBackend::uring: backend = make_uring_backend(opt); break;
        case IoBackend::epoll: backend = make_epoll_backend(opt); break;
        case IoBackend::automatic: {
            const auto probe = probe_uring();
            if (probe.available) {
                try {
                    backend = make_uring_backend(opt);
                } catch (const BindError&) {
                    throw;
                } catch (const EndpointError& e) {
                    spdlog::info("ndm io: io_uring backend failed ({}); using the epoll fallback", e.what());
                }
            } else {
                spdlog::info("ndm io: io_uring unavailable ({}); using the epoll fallback", probe.reason);
            }
            if (!backend) backend = make_epoll_backend(opt);
            break;
        }
    }
    return backend;
}

}  // namespace io

}  // namespace ndm

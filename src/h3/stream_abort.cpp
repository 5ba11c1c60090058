#include "h3/stream_abort.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ndm/h3.hpp"

namespace ndm::h3 {

std::string abandon_send(Connection& c, StreamId id, std::uint64_t code, Instant now) {
    std::string reason = fmt::format("HTTP/3 reset stream {} with {}; without RESET_STREAM the connection closes",
                                     id, error_name(code));
    spdlog::warn("h3: {}", reason);
    if (c.state() == ConnectionState::established || c.state() == ConnectionState::handshaking)
        c.close(code, reason, now);
    return reason;
}

void abandon_receive(Connection&, StreamId id, std::uint64_t code) {
    spdlog::debug("h3: stream {}: the peer's data is discarded ({}; STOP_SENDING not sent)", id, error_name(code));
}

}  // namespace ndm::h3

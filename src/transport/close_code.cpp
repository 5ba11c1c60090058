// Names of close codes, for messages people read (RFC 9000 §20.1).
#include <fmt/format.h>

#include "ndm/connection.hpp"

namespace ndm {

std::string close_code_name(std::uint64_t code) {
    static constexpr const char* kTransport[] = {
        "NO_ERROR",           "INTERNAL_ERROR",           "CONNECTION_REFUSED",
        "FLOW_CONTROL_ERROR", "STREAM_LIMIT_ERROR",       "STREAM_STATE_ERROR",
        "FINAL_SIZE_ERROR",   "FRAME_ENCODING_ERROR",     "TRANSPORT_PARAMETER_ERROR",
        "CONNECTION_ID_LIMIT_ERROR", "PROTOCOL_VIOLATION", "INVALID_TOKEN",
        "APPLICATION_ERROR",  "CRYPTO_BUFFER_EXCEEDED",   "KEY_UPDATE_ERROR",
        "AEAD_LIMIT_REACHED", "NO_VIABLE_PATH",           "VERSION_NEGOTIATION_ERROR",
    };
    if (code < std::size(kTransport)) return kTransport[code];
    const auto base = static_cast<std::uint64_t>(CloseCode::crypto_error_base);
    if (code >= base && code <= base + 0xff) return "CRYPTO_ERROR";
    if (code == static_cast<std::uint64_t>(CloseCode::idle_timeout)) return "IDLE_TIMEOUT";
    if (code == static_cast<std::uint64_t>(CloseCode::handshake_timeout)) return "HANDSHAKE_TIMEOUT";
    if (code == static_cast<std::uint64_t>(CloseCode::stateless_reset)) return "STATELESS_RESET";
    return fmt::format("{:#x}", code);
}

}  // namespace ndm

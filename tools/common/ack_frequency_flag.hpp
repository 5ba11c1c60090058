// --ack-frequency / --no-ack-frequency: the ACK frequency extension
// (ConnectionConfig::ack_frequency, draft-ietf-quic-ack-frequency-14).
// ndm-send decides: ndm-recv runs the extension unless told not to, so it
// is in use exactly when the client asks for it (both directions, -R too).
#pragma once

#include <CLI/CLI.hpp>

namespace ndm::tools {

inline CLI::Option* add_ack_frequency_flag(CLI::App& app, bool& on) {
    return app.add_flag("--ack-frequency", on,
                        "the data sender asks the receiver for one ACK per cwnd/8 packets (at most 32) instead of "
                        "one per 2 (draft-ietf-quic-ack-frequency); losses are still reported at once. Far fewer "
                        "ACKs to send and process at high rates and with many connections (-P); ACK clocking no "
                        "longer as RFC 9000 and kernel TCP have it (default: off)");
}

inline CLI::Option* add_no_ack_frequency_flag(CLI::App& app, bool& off) {
    return app.add_flag("--no-ack-frequency", off,
                        "do not take part in the ACK frequency extension that a client's --ack-frequency asks for "
                        "(draft-ietf-quic-ack-frequency): acknowledge every second packet as RFC 9000 has it");
}

}  // namespace ndm::tools

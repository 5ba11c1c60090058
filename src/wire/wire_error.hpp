// Errors found while decoding bytes from the network.
#pragma once

#include <cstdint>
#include <string>

#include "ndm/connection.hpp"  // CloseCode: the RFC 9000 §20.1 transport error codes

namespace ndm::wire {

enum class ErrorKind {
    truncated,          // a field runs past the end of the buffer
    bad_varint,         // value does not fit / non-minimal where that matters
    bad_value,          // a field holds a value the protocol forbids
    unknown_frame,      // frame type not defined
    frame_not_allowed,  // frame defined but not allowed in this packet type
    bad_header,         // fixed bit, lengths or form wrong
    integrity,          // CRC32C mismatch: corrupted in transit
    unknown_version,
};

struct Error {
    ErrorKind kind;
    std::string what;  // human-readable, names the field
    // The connection error the RFC names for it (RFC 9000 §20.1): frames fail
    // with FRAME_ENCODING_ERROR, transport parameters with
    // TRANSPORT_PARAMETER_ERROR; packet parsing leaves the default.
    CloseCode code = CloseCode::frame_encoding_error;
};

}  // namespace ndm::wire

// Errors found while decoding bytes from the network.
#pragma once

#include <cstdint>
#include <string>

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
};

}  // namespace ndm::wire

// Frame codec (RFC 9000 §19). Decoding never reads past the reader's end and
// never allocates more than kMaxAckRanges ranges; every failure names the
// frame and field and carries the RFC's error code. Encoding and
// encoded_size share one emitter so the size is exact by construction.
#include "wire/frame.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

namespace ndm::wire {

namespace {

template <class... Ts>
struct overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

std::string hex(std::uint64_t v) {
    char buf[2 + 16];
    buf[0] = '0';
    buf[1] = 'x';
    auto res = std::to_chars(buf + 2, buf + sizeof buf, v, 16);
    return std::string(buf, res.ptr);
}

std::string dec(std::uint64_t v) { return std::to_string(v); }

// Every frame decoding error is a FRAME_ENCODING_ERROR (RFC 9000 §12.4,
// §19, §20.1) unless the RFC names another code.
bool fail(Error& err, ErrorKind kind, std::string what, CloseCode code = CloseCode::frame_encoding_error) {
    err.kind = kind;
    err.what = std::move(what);
    err.code = code;
    return false;
}

// Reads one field of a named frame, turning a short buffer into an Error.
struct FieldReader {
    Reader& r;
    Error& err;
    const char* frame;

    bool varint(std::uint64_t& v, const char* field) {
        auto x = r.varint();
        if (!x) return fail(err, ErrorKind::truncated, std::string(frame) + ": " + field + " truncated");
        v = *x;
        return true;
    }
    bool bytes(std::span<const std::uint8_t>& out, std::uint64_t len, const char* field) {
        if (len > r.remaining())
            return fail(err, ErrorKind::truncated,
                        std::string(frame) + ": " + field + " " + dec(len) + " past end of packet (" +
                            dec(r.remaining()) + " bytes left)");
        out = *r.bytes(static_cast<std::size_t>(len));
        return true;
    }
    template <std::size_t N>
    bool array(std::array<std::uint8_t, N>& out, const char* field) {
        std::span<const std::uint8_t> b;
        if (!bytes(b, N, field)) return false;
        std::copy(b.begin(), b.end(), out.begin());
        return true;
    }
    bool bad(std::string what) { return fail(err, ErrorKind::bad_value, std::string(frame) + ": " + what); }
};

// RFC 9000 §19.8/§19.6: the end offset of stream or crypto data is at most 2^62-1.
bool check_end_offset(Error& err, const char* frame, std::uint64_t offset, std::size_t len) {
    if (len > kVarintMax || offset > kVarintMax - len)
        return fail(err, ErrorKind::bad_value,
                    std::string(frame) + ": offset " + dec(offset) + " + length " + dec(len) +
                        " exceeds 2^62-1");
    return true;
}

// The largest ACK delay, in microseconds, that a Duration (nanoseconds) holds.
constexpr std::uint64_t kMaxAckDelayUs =
    static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max()) / 1000;

// RFC 9000 §19.3.1: largest_i = smallest_{i-1} - gap - 2, smallest_i =
// largest_i - length; neither may go below packet number 0.
bool decode_ack_ranges(FieldReader& f, std::uint64_t range_count, AckFrame& out) {
    std::uint64_t smallest = out.ranges.front().smallest;
    for (std::uint64_t i = 0; i < range_count; ++i) {
        std::uint64_t gap, length;
        if (!f.varint(gap, "gap") || !f.varint(length, "range length")) return false;
        if (smallest < 2 || gap > smallest - 2)
            return f.bad("gap " + dec(gap) + " of range " + dec(i + 1) + " underflows below packet number 0");
        const std::uint64_t hi = smallest - gap - 2;
        if (length > hi)
            return f.bad("range length " + dec(length) + " of range " + dec(i + 1) +
                         " underflows below packet number 0");
        smallest = hi - length;
        out.ranges.push_back({smallest, hi});
    }
    return true;
}

bool decode_ack(Reader& r, bool ecn, unsigned exponent, AckFrame& out, Error& err) {
    FieldReader f{r, err, ecn ? "ACK_ECN frame" : "ACK frame"};
    std::uint64_t largest, delay, range_count, first_range;
    if (!f.varint(largest, "largest acknowledged") || !f.varint(delay, "ack delay") ||
        !f.varint(range_count, "range count") || !f.varint(first_range, "first range"))
        return false;
    // Range count counts the (gap, length) pairs after the first range; cap
    // the total before allocating anything.
    if (range_count > kMaxAckRanges - 1)
        return f.bad("range count " + dec(range_count) + " exceeds " + dec(kMaxAckRanges - 1) + " (at most " +
                     dec(kMaxAckRanges) + " ranges)");
    if (first_range > largest)
        return f.bad("first range " + dec(first_range) + " exceeds largest acknowledged " + dec(largest));
    out.ranges.clear();
    out.ranges.reserve(static_cast<std::size_t>(range_count) + 1);
    out.ack_delay = decode_ack_delay(delay, exponent);
    out.ranges.push_back({largest - first_range, largest});
    if (!decode_ack_ranges(f, range_count, out)) return false;
    out.ecn.reset();
    if (ecn) {
        EcnCounts c;
        if (!f.varint(c.ect0, "ECT(0) count") || !f.varint(c.ect1, "ECT(1) count") ||
            !f.varint(c.ce, "ECN-CE count"))
            return false;
        out.ecn = c;
    }
    return true;
}

bool decode_stream(Reader& r, std::uint64_t type, StreamFrame& out, Error& err) {
    FieldReader f{r, err, "STREAM frame"};
    out.fin = (type & 0x01) != 0;
    out.offset = 0;
    if (!f.varint(out.stream_id, "stream id")) return false;
    if ((type & 0x04) && !f.varint(out.offset, "offset")) return false;
    std::uint64_t len = r.remaining();  // no LEN bit: data runs to the end of the packet
    if ((type & 0x02) && !f.varint(len, "length")) return false;
    if (!f.bytes(out.data, len, "length")) return false;
    return check_end_offset(err, "STREAM frame", out.offset, out.data.size());
}

bool decode_crypto(Reader& r, CryptoFrame& out, Error& err) {
    FieldReader f{r, err, "CRYPTO frame"};
    std::uint64_t len;
    return f.varint(out.offset, "offset") && f.varint(len, "length") && f.bytes(out.data, len, "length") &&
           check_end_offset(err, "CRYPTO frame", out.offset, out.data.size());
}

bool decode_close(Reader& r, bool application, ConnectionCloseFrame& out, Error& err) {
    FieldReader f{r, err, "CONNECTION_CLOSE frame"};
    out.application = application;
    out.frame_type = 0;
    if (!f.varint(out.error_code, "error code")) return false;
    if (!application && !f.varint(out.frame_type, "frame type")) return false;
    std::uint64_t len;
    if (!f.varint(len, "reason length")) return false;
    if (len > kMaxReasonLength) return f.bad("reason length " + dec(len) + " exceeds " + dec(kMaxReasonLength));
    std::span<const std::uint8_t> reason;
    if (!f.bytes(reason, len, "reason length")) return false;
    out.reason = std::string_view(reinterpret_cast<const char*>(reason.data()), reason.size());
    return true;
}

// RFC 9000 §19.11, §19.14: stream counts above 2^60 are FRAME_ENCODING_ERROR.
bool decode_stream_count(Reader& r, const char* frame, std::uint64_t& out, Error& err) {
    FieldReader f{r, err, frame};
    if (!f.varint(out, "maximum streams")) return false;
    if (out > kMaxStreamCount) return f.bad("maximum streams " + dec(out) + " exceeds 2^60");
    return true;
}

// RFC 9000 §19.7: a NEW_TOKEN frame with an empty token is FRAME_ENCODING_ERROR.
bool decode_new_token(Reader& r, NewTokenFrame& out, Error& err) {
    FieldReader f{r, err, "NEW_TOKEN frame"};
    std::uint64_t len;
    if (!f.varint(len, "token length")) return false;
    if (len == 0) return f.bad("empty token");
    return f.bytes(out.token, len, "token length");
}

// RFC 9000 §19.15: length 1..20, Retire Prior To <= Sequence Number, a
// 16-byte reset token; anything else is FRAME_ENCODING_ERROR.
bool decode_new_connection_id(Reader& r, NewConnectionIdFrame& out, Error& err) {
    FieldReader f{r, err, "NEW_CONNECTION_ID frame"};
    if (!f.varint(out.sequence, "sequence number") || !f.varint(out.retire_prior_to, "retire prior to"))
        return false;
    if (out.retire_prior_to > out.sequence)
        return f.bad("retire prior to " + dec(out.retire_prior_to) + " exceeds sequence number " +
                     dec(out.sequence));
    const auto len = r.u8();
    if (!len) return fail(err, ErrorKind::truncated, "NEW_CONNECTION_ID frame: length truncated");
    if (*len < 1 || *len > kMaxConnectionIdLength)
        return f.bad("connection id length " + dec(*len) + " outside 1..20");
    return f.bytes(out.cid, *len, "connection id length") &&
           f.bytes(out.reset_token, kStatelessResetTokenSize, "stateless reset token");
}

// draft-ietf-quic-ack-frequency-14 §4: four varints. A requested delay of
// 2^14 ms or more is invalid as a max_ack_delay (RFC 9000 §18.2): a
// PROTOCOL_VIOLATION. Whether it is below the min_ack_delay we advertised
// is the connection's to check.
bool decode_ack_frequency(Reader& r, Frame& out, Error& err) {
    FieldReader f{r, err, "ACK_FREQUENCY frame"};
    AckFrequencyFrame x;
    if (!f.varint(x.sequence, "sequence number") || !f.varint(x.ack_eliciting_threshold, "ack-eliciting threshold") ||
        !f.varint(x.requested_max_ack_delay_us, "requested max ack delay") ||
        !f.varint(x.reordering_threshold, "reordering threshold"))
        return false;
    if (x.requested_max_ack_delay_us >= kAckDelayLimitUs)
        return fail(err, ErrorKind::bad_value,
                    "ACK_FREQUENCY frame: requested max ack delay " + dec(x.requested_max_ack_delay_us) +
                        " us is not below 2^14 ms",
                    CloseCode::protocol_violation);
    out = x;
    return true;
}

// RFC 9221 §4: 0x31 carries a length, 0x30 runs to the end of the packet.
bool decode_datagram(Reader& r, std::uint64_t type, Frame& out, Error& err) {
    FieldReader f{r, err, "DATAGRAM frame"};
    DatagramFrame d;
    d.has_length = type == frame_type::datagram_len;
    std::uint64_t len = r.remaining();
    if (d.has_length && !f.varint(len, "length")) return false;
    if (!f.bytes(d.data, len, "length")) return false;
    out = d;
    return true;
}

// Frames of two varints or one: stream-scoped and connection-scoped limits.
bool decode_simple(Reader& r, std::uint64_t type, Frame& out, Error& err) {
    const std::string_view name = frame_name(type);
    const std::string label = std::string(name) + " frame";
    FieldReader f{r, err, label.c_str()};
    switch (type) {
        case frame_type::reset_stream: {
            ResetStreamFrame x;
            if (!f.varint(x.stream_id, "stream id") || !f.varint(x.error_code, "error code") ||
                !f.varint(x.final_size, "final size"))
                return false;
            out = x;
            return true;
        }
        case frame_type::stop_sending: {
            StopSendingFrame x;
            if (!f.varint(x.stream_id, "stream id") || !f.varint(x.error_code, "error code")) return false;
            out = x;
            return true;
        }
        case frame_type::max_data: {
            MaxDataFrame x;
            if (!f.varint(x.maximum, "maximum data")) return false;
            out = x;
            return true;
        }
        case frame_type::max_stream_data: {
            MaxStreamDataFrame x;
            if (!f.varint(x.stream_id, "stream id") || !f.varint(x.maximum, "maximum stream data")) return false;
            out = x;
            return true;
        }
        case frame_type::data_blocked: {
            DataBlockedFrame x;
            if (!f.varint(x.limit, "maximum data")) return false;
            out = x;
            return true;
        }
        case frame_type::stream_data_blocked: {
            StreamDataBlockedFrame x;
            if (!f.varint(x.stream_id, "stream id") || !f.varint(x.limit, "maximum stream data")) return false;
            out = x;
            return true;
        }
        case frame_type::retire_connection_id: {
            RetireConnectionIdFrame x;
            if (!f.varint(x.sequence, "sequence number")) return false;
            out = x;
            return true;
        }
        default: return false;  // not reached: decode_frame dispatches only the types above
    }
}

// Frames with structure of their own (lengths, counts, fixed-size data).
bool decode_structured(Reader& r, std::uint64_t type, Frame& out, Error& err, unsigned exponent) {
    switch (type) {
        case frame_type::ack:
        case frame_type::ack_ecn: {
            AckFrame a;
            if (!decode_ack(r, type == frame_type::ack_ecn, exponent, a, err)) return false;
            out = std::move(a);
            return true;
        }
        case frame_type::crypto: {
            CryptoFrame c;
            if (!decode_crypto(r, c, err)) return false;
            out = c;
            return true;
        }
        case frame_type::new_token: {
            NewTokenFrame t;
            if (!decode_new_token(r, t, err)) return false;
            out = t;
            return true;
        }
        case frame_type::max_streams:
        case frame_type::max_streams_uni: {
            MaxStreamsFrame m;
            m.bidi = type == frame_type::max_streams;
            if (!decode_stream_count(r, "MAX_STREAMS frame", m.maximum, err)) return false;
            out = m;
            return true;
        }
        case frame_type::streams_blocked:
        case frame_type::streams_blocked_uni: {
            StreamsBlockedFrame s;
            s.bidi = type == frame_type::streams_blocked;
            if (!decode_stream_count(r, "STREAMS_BLOCKED frame", s.limit, err)) return false;
            out = s;
            return true;
        }
        case frame_type::new_connection_id: {
            NewConnectionIdFrame n;
            if (!decode_new_connection_id(r, n, err)) return false;
            out = n;
            return true;
        }
        case frame_type::path_challenge:
        case frame_type::path_response: {
            FieldReader f{r, err, type == frame_type::path_challenge ? "PATH_CHALLENGE frame" : "PATH_RESPONSE frame"};
            std::array<std::uint8_t, kPathDataSize> data;
            if (!f.array(data, "data")) return false;
            if (type == frame_type::path_challenge) out = PathChallengeFrame{data};
            else out = PathResponseFrame{data};
            return true;
        }
        case frame_type::connection_close:
        case frame_type::connection_close_app: {
            ConnectionCloseFrame c;
            if (!decode_close(r, type == frame_type::connection_close_app, c, err)) return false;
            out = c;
            return true;
        }
        default: return false;  // not reached
    }
}

// Emits a frame into a sink: either SizeSink (counts) or WriteSink (writes).
// Values a peer would reject (over 2^62-1, empty ACK, bad ranges) mark the
// sink invalid instead of producing bytes.
struct SizeSink {
    std::size_t n = 0;
    bool ok = true;
    void varint(std::uint64_t v) {
        if (v > kVarintMax) ok = false;
        n += v > kVarintMax ? 8 : varint_size(v);
    }
    void u8(std::uint8_t) { n += 1; }
    void bytes(std::span<const std::uint8_t> b) { n += b.size(); }
    void zeros(std::size_t k) { n += k; }
    void invalid() { ok = false; }
};

struct WriteSink {
    Writer& w;
    bool ok = true;
    void varint(std::uint64_t v) { ok = ok && w.varint(v); }
    void u8(std::uint8_t v) { ok = ok && w.u8(v); }
    void bytes(std::span<const std::uint8_t> b) { ok = ok && w.bytes(b); }
    void zeros(std::size_t k) {
        static constexpr std::uint8_t kZeros[64] = {};
        while (ok && k > 0) {
            const std::size_t c = std::min(k, sizeof kZeros);
            ok = w.bytes({kZeros, c});
            k -= c;
        }
    }
    void invalid() { ok = false; }
};

template <class Sink>
void emit_ack(Sink& s, const AckFrame& f, unsigned exponent) {
    const std::size_t n = std::min(f.ranges.size(), kMaxAckRanges);
    if (n == 0) return s.invalid();
    const AckRange& first = f.ranges[0];
    if (first.smallest > first.largest) return s.invalid();
    s.varint(f.ecn ? frame_type::ack_ecn : frame_type::ack);
    s.varint(first.largest);
    s.varint(encode_ack_delay(f.ack_delay, exponent));
    s.varint(n - 1);
    s.varint(first.largest - first.smallest);
    std::uint64_t prev_smallest = first.smallest;
    for (std::size_t i = 1; i < n; ++i) {
        const AckRange& a = f.ranges[i];
        // Descending and non-adjacent: at least one missing packet between.
        if (a.smallest > a.largest || prev_smallest < 2 || a.largest > prev_smallest - 2) return s.invalid();
        s.varint(prev_smallest - a.largest - 2);
        s.varint(a.largest - a.smallest);
        prev_smallest = a.smallest;
    }
    if (f.ecn) {
        s.varint(f.ecn->ect0);
        s.varint(f.ecn->ect1);
        s.varint(f.ecn->ce);
    }
}


template <class Sink>
void emit_new_connection_id(Sink& s, const NewConnectionIdFrame& f) {
    if (f.retire_prior_to > f.sequence || f.cid.empty() || f.cid.size() > kMaxConnectionIdLength ||
        f.reset_token.size() != kStatelessResetTokenSize)
        return s.invalid();
    s.varint(frame_type::new_connection_id);
    s.varint(f.sequence);
    s.varint(f.retire_prior_to);
    s.u8(static_cast<std::uint8_t>(f.cid.size()));
    s.bytes(f.cid);
    s.bytes(f.reset_token);
}

template <class Sink>
void emit_close(Sink& s, const ConnectionCloseFrame& f) {
    // Longer reasons are cut, as the peer would reject them.
    const std::size_t len = std::min(f.reason.size(), kMaxReasonLength);
    s.varint(f.application ? frame_type::connection_close_app : frame_type::connection_close);
    s.varint(f.error_code);
    if (!f.application) s.varint(f.frame_type);
    s.varint(len);
    s.bytes({reinterpret_cast<const std::uint8_t*>(f.reason.data()), len});
}

template <class Sink>
void emit(Sink& s, const Frame& frame, unsigned exponent) {
    // The type and the frame's varint fields; counts over 2^60 are invalid.
    auto fields = [&](std::uint64_t type, std::initializer_list<std::uint64_t> values) {
        s.varint(type);
        for (auto v : values) s.varint(v);
    };
    auto count = [&](std::uint64_t type, std::uint64_t v) {
        if (v > kMaxStreamCount) return s.invalid();
        fields(type, {v});
    };
    std::visit(
        overloaded{
            [&](const PaddingFrame& f) { s.zeros(f.length); },
            [&](const PingFrame&) { fields(frame_type::ping, {}); },
            [&](const AckFrame& f) { emit_ack(s, f, exponent); },
            [&](const ResetStreamFrame& f) {
                fields(frame_type::reset_stream, {f.stream_id, f.error_code, f.final_size});
            },
            [&](const StopSendingFrame& f) { fields(frame_type::stop_sending, {f.stream_id, f.error_code}); },
            [&](const CryptoFrame& f) {
                if (f.data.size() > kVarintMax || f.offset > kVarintMax - f.data.size()) return s.invalid();
                fields(frame_type::crypto, {f.offset, f.data.size()});
                s.bytes(f.data);
            },
            [&](const NewTokenFrame& f) {
                if (f.token.empty()) return s.invalid();
                fields(frame_type::new_token, {f.token.size()});
                s.bytes(f.token);
            },
            [&](const StreamFrame& f) {
                if (f.data.size() > kVarintMax || f.offset > kVarintMax - f.data.size()) return s.invalid();
                fields(frame_type::stream | 0x04 | 0x02 | (f.fin ? 0x01 : 0x00),
                       {f.stream_id, f.offset, f.data.size()});
                s.bytes(f.data);
            },
            [&](const MaxDataFrame& f) { fields(frame_type::max_data, {f.maximum}); },
            [&](const MaxStreamDataFrame& f) { fields(frame_type::max_stream_data, {f.stream_id, f.maximum}); },
            [&](const MaxStreamsFrame& f) {
                count(f.bidi ? frame_type::max_streams : frame_type::max_streams_uni, f.maximum);
            },
            [&](const DataBlockedFrame& f) { fields(frame_type::data_blocked, {f.limit}); },
            [&](const StreamDataBlockedFrame& f) {
                fields(frame_type::stream_data_blocked, {f.stream_id, f.limit});
            },
            [&](const StreamsBlockedFrame& f) {
                count(f.bidi ? frame_type::streams_blocked : frame_type::streams_blocked_uni, f.limit);
            },
            [&](const NewConnectionIdFrame& f) { emit_new_connection_id(s, f); },
            [&](const RetireConnectionIdFrame& f) { fields(frame_type::retire_connection_id, {f.sequence}); },
            [&](const PathChallengeFrame& f) {
                fields(frame_type::path_challenge, {});
                s.bytes(f.data);
            },
            [&](const PathResponseFrame& f) {
                fields(frame_type::path_response, {});
                s.bytes(f.data);
            },
            [&](const ConnectionCloseFrame& f) { emit_close(s, f); },
            [&](const HandshakeDoneFrame&) { fields(frame_type::handshake_done, {}); },
            [&](const AckFrequencyFrame& f) {
                if (f.requested_max_ack_delay_us >= kAckDelayLimitUs) return s.invalid();
                fields(frame_type::ack_frequency, {f.sequence, f.ack_eliciting_threshold,
                                                   f.requested_max_ack_delay_us, f.reordering_threshold});
            },
            [&](const ImmediateAckFrame&) { fields(frame_type::immediate_ack, {}); },
            [&](const DatagramFrame& f) {
                fields(frame_type::datagram_len, {f.data.size()});
                s.bytes(f.data);
            },
        },
        frame);
}

// RFC 9000 §12.4 Table 3, one bit per packet kind.
constexpr std::uint8_t kI = 1u << static_cast<unsigned>(PacketKind::initial);
constexpr std::uint8_t k0 = 1u << static_cast<unsigned>(PacketKind::zero_rtt);
constexpr std::uint8_t kH = 1u << static_cast<unsigned>(PacketKind::handshake);
constexpr std::uint8_t k1 = 1u << static_cast<unsigned>(PacketKind::one_rtt);

struct FrameTypeInfo {
    const char* name;
    std::uint8_t packets;
};

constexpr FrameTypeInfo kFrameTypes[] = {
    {"PADDING", kI | k0 | kH | k1},              // 0x00
    {"PING", kI | k0 | kH | k1},                 // 0x01
    {"ACK", kI | kH | k1},                       // 0x02
    {"ACK_ECN", kI | kH | k1},                   // 0x03
    {"RESET_STREAM", k0 | k1},                   // 0x04
    {"STOP_SENDING", k0 | k1},                   // 0x05
    {"CRYPTO", kI | kH | k1},                    // 0x06
    {"NEW_TOKEN", k1},                           // 0x07
    {"STREAM", k0 | k1}, {"STREAM", k0 | k1},    // 0x08..0x0f
    {"STREAM", k0 | k1}, {"STREAM", k0 | k1},
    {"STREAM", k0 | k1}, {"STREAM", k0 | k1},
    {"STREAM", k0 | k1}, {"STREAM", k0 | k1},
    {"MAX_DATA", k0 | k1},                       // 0x10
    {"MAX_STREAM_DATA", k0 | k1},                // 0x11
    {"MAX_STREAMS", k0 | k1},                    // 0x12
    {"MAX_STREAMS", k0 | k1},                    // 0x13
    {"DATA_BLOCKED", k0 | k1},                   // 0x14
    {"STREAM_DATA_BLOCKED", k0 | k1},            // 0x15
    {"STREAMS_BLOCKED", k0 | k1},                // 0x16
    {"STREAMS_BLOCKED", k0 | k1},                // 0x17
    {"NEW_CONNECTION_ID", k0 | k1},              // 0x18
    {"RETIRE_CONNECTION_ID", k0 | k1},           // 0x19
    {"PATH_CHALLENGE", k0 | k1},                 // 0x1a
    {"PATH_RESPONSE", k1},                       // 0x1b
    {"CONNECTION_CLOSE", kI | k0 | kH | k1},     // 0x1c
    {"CONNECTION_CLOSE", k0 | k1},               // 0x1d: application errors only in 0-RTT/1-RTT
    {"HANDSHAKE_DONE", k1},                      // 0x1e
    {"IMMEDIATE_ACK", k1},                       // 0x1f: not in 0-RTT (ack-frequency-14 §3)
};
static_assert(std::size(kFrameTypes) == frame_type::immediate_ack + 1);
constexpr FrameTypeInfo kAckFrequencyType = {"ACK_FREQUENCY", k1};  // 0xaf, as IMMEDIATE_ACK
// RFC 9221 §4: DATAGRAM frames go in 0-RTT and 1-RTT packets only.
constexpr FrameTypeInfo kDatagramType = {"DATAGRAM", k0 | k1};  // 0x30, 0x31

}  // namespace

std::uint64_t encode_ack_delay(Duration delay, unsigned ack_delay_exponent) {
    if (delay <= Duration::zero()) return 0;
    const auto us = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(delay).count());
    return us >> std::min(ack_delay_exponent, kMaxAckDelayExponent);
}

Duration decode_ack_delay(std::uint64_t field, unsigned ack_delay_exponent) {
    const unsigned e = std::min(ack_delay_exponent, kMaxAckDelayExponent);
    // Saturate at a multiple of 2^e, so that the saturated value re-encodes
    // to the same field.
    const std::uint64_t units = std::min(field, kMaxAckDelayUs >> e);
    return std::chrono::microseconds(static_cast<std::int64_t>(units << e));
}

bool is_ack_eliciting(const Frame& f) {
    return !std::holds_alternative<AckFrame>(f) && !std::holds_alternative<PaddingFrame>(f) &&
           !std::holds_alternative<ConnectionCloseFrame>(f);
}

std::uint64_t type_of(const Frame& frame) {
    return std::visit(
        overloaded{
            [](const PaddingFrame&) { return frame_type::padding; },
            [](const PingFrame&) { return frame_type::ping; },
            [](const AckFrame& f) { return f.ecn ? frame_type::ack_ecn : frame_type::ack; },
            [](const ResetStreamFrame&) { return frame_type::reset_stream; },
            [](const StopSendingFrame&) { return frame_type::stop_sending; },
            [](const CryptoFrame&) { return frame_type::crypto; },
            [](const NewTokenFrame&) { return frame_type::new_token; },
            [](const StreamFrame& f) { return frame_type::stream | 0x06 | (f.fin ? 0x01 : 0x00); },
            [](const MaxDataFrame&) { return frame_type::max_data; },
            [](const MaxStreamDataFrame&) { return frame_type::max_stream_data; },
            [](const MaxStreamsFrame& f) { return f.bidi ? frame_type::max_streams : frame_type::max_streams_uni; },
            [](const DataBlockedFrame&) { return frame_type::data_blocked; },
            [](const StreamDataBlockedFrame&) { return frame_type::stream_data_blocked; },
            [](const StreamsBlockedFrame& f) {
                return f.bidi ? frame_type::streams_blocked : frame_type::streams_blocked_uni;
            },
            [](const NewConnectionIdFrame&) { return frame_type::new_connection_id; },
            [](const RetireConnectionIdFrame&) { return frame_type::retire_connection_id; },
            [](const PathChallengeFrame&) { return frame_type::path_challenge; },
            [](const PathResponseFrame&) { return frame_type::path_response; },
            [](const ConnectionCloseFrame& f) {
                return f.application ? frame_type::connection_close_app : frame_type::connection_close;
            },
            [](const HandshakeDoneFrame&) { return frame_type::handshake_done; },
            [](const AckFrequencyFrame&) { return frame_type::ack_frequency; },
            [](const ImmediateAckFrame&) { return frame_type::immediate_ack; },
            [](const DatagramFrame&) { return frame_type::datagram_len; },
        },
        frame);
}

namespace {
const FrameTypeInfo* type_info(std::uint64_t type) {
    if (type < std::size(kFrameTypes)) return &kFrameTypes[type];
    if (type == frame_type::datagram || type == frame_type::datagram_len) return &kDatagramType;
    return type == frame_type::ack_frequency ? &kAckFrequencyType : nullptr;
}
}  // namespace

std::string_view frame_name(std::uint64_t type) {
    const FrameTypeInfo* info = type_info(type);
    return info ? info->name : "unknown";
}

bool frame_allowed(std::uint64_t type, PacketKind kind) {
    const FrameTypeInfo* info = type_info(type);
    return info && (info->packets & (1u << static_cast<unsigned>(kind))) != 0;
}

bool decode_frame(Reader& r, Frame& out, Error& err, unsigned ack_delay_exponent) {
    const std::size_t start = r.position();
    const auto type_opt = r.varint();
    if (!type_opt) return fail(err, ErrorKind::truncated, "frame type: truncated varint");
    const std::uint64_t type = *type_opt;
    // RFC 9000 §12.4: frame types use the shortest encoding; a longer one
    // may be treated as a PROTOCOL_VIOLATION.
    if (r.position() - start != varint_size(type))
        return fail(err, ErrorKind::bad_varint, "frame type " + hex(type) + ": non-minimal varint encoding",
                    CloseCode::protocol_violation);

    switch (type) {
        case frame_type::padding: {
            // Fold the run of zero bytes into one frame.
            const auto rest = r.rest();
            const auto nz = std::find_if(rest.begin(), rest.end(), [](std::uint8_t b) { return b != 0; });
            const auto run = static_cast<std::size_t>(nz - rest.begin());
            (void)r.bytes(run);
            out = PaddingFrame{1 + run};
            return true;
        }
        case frame_type::ping: out = PingFrame{}; return true;
        case frame_type::handshake_done: out = HandshakeDoneFrame{}; return true;
        case frame_type::immediate_ack: out = ImmediateAckFrame{}; return true;
        case frame_type::ack_frequency: return decode_ack_frequency(r, out, err);
        case frame_type::datagram:
        case frame_type::datagram_len: return decode_datagram(r, type, out, err);
        case frame_type::reset_stream:
        case frame_type::stop_sending:
        case frame_type::max_data:
        case frame_type::max_stream_data:
        case frame_type::data_blocked:
        case frame_type::stream_data_blocked:
        case frame_type::retire_connection_id: return decode_simple(r, type, out, err);
        case frame_type::ack:
        case frame_type::ack_ecn:
        case frame_type::crypto:
        case frame_type::new_token:
        case frame_type::max_streams:
        case frame_type::max_streams_uni:
        case frame_type::streams_blocked:
        case frame_type::streams_blocked_uni:
        case frame_type::new_connection_id:
        case frame_type::path_challenge:
        case frame_type::path_response:
        case frame_type::connection_close:
        case frame_type::connection_close_app: return decode_structured(r, type, out, err, ack_delay_exponent);
        default:
            if (type >= frame_type::stream && type <= frame_type::stream + 0x07) {
                StreamFrame s;
                if (!decode_stream(r, type, s, err)) return false;
                out = s;
                return true;
            }
            // RFC 9000 §12.4: an unknown frame type is a FRAME_ENCODING_ERROR.
            return fail(err, ErrorKind::unknown_frame, "unknown frame type " + hex(type));
    }
}

bool encode_frame(Writer& w, const Frame& f, unsigned ack_delay_exponent) {
    SizeSink size;
    emit(size, f, ack_delay_exponent);
    if (!size.ok || size.n > w.remaining()) return false;
    WriteSink out{w};
    emit(out, f, ack_delay_exponent);
    return out.ok;  // cannot fail after the size check
}

std::size_t stream_frame_overhead(std::uint64_t stream_id, std::uint64_t offset, std::size_t data_len) {
    return varint_size(frame_type::stream | 0x06) + varint_size(stream_id) + varint_size(offset) +
           varint_size(data_len);
}

std::size_t encoded_size(const Frame& f, unsigned ack_delay_exponent) {
    SizeSink size;
    emit(size, f, ack_delay_exponent);
    return size.n;
}

std::size_t datagram_frame_size(std::size_t data_len) {
    return varint_size(frame_type::datagram_len) + varint_size(data_len) + data_len;
}

std::size_t datagram_frame_size(const DatagramFrame& f) {
    return f.has_length ? datagram_frame_size(f.data.size()) : varint_size(frame_type::datagram) + f.data.size();
}

}  // namespace ndm::wire

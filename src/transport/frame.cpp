// Frame codec (RFC 9000 §19). Decoding never reads past the reader's end and
// never allocates more than kMaxAckRanges ranges; every failure names the
// frame and field. Encoding and encoded_size share one emitter so the size
// is exact by construction.
#include "transport/frame.hpp"

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

bool fail(Error& err, ErrorKind kind, std::string what) {
    err.kind = kind;
    err.what = std::move(what);
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
};

// RFC 9000 §19.8/§19.6: the end offset of stream or crypto data is at most 2^62-1.
bool check_end_offset(Error& err, const char* frame, std::uint64_t offset, std::size_t len) {
    if (len > kVarintMax || offset > kVarintMax - len)
        return fail(err, ErrorKind::bad_value,
                    std::string(frame) + ": offset " + dec(offset) + " + length " + dec(len) +
                        " exceeds 2^62-1");
    return true;
}

// ack_delay travels in microseconds; it must fit a Duration in nanoseconds.
constexpr std::uint64_t kMaxAckDelayUs =
    static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max()) / 1000;
// RFC 9000 §19.11: a stream count cannot exceed 2^60.
constexpr std::uint64_t kMaxStreamCount = std::uint64_t{1} << 60;

bool decode_ack(Reader& r, AckFrame& out, Error& err) {
    FieldReader f{r, err, "ACK frame"};
    std::uint64_t largest, delay_us, range_count, first_range;
    if (!f.varint(largest, "largest acknowledged") || !f.varint(delay_us, "ack delay") ||
        !f.varint(range_count, "range count") || !f.varint(first_range, "first range"))
        return false;
    if (delay_us > kMaxAckDelayUs)
        return fail(err, ErrorKind::bad_value,
                    "ACK frame: ack delay " + dec(delay_us) + " us out of range");
    // Range count counts the (gap, length) pairs after the first range; cap
    // the total before allocating anything.
    if (range_count > kMaxAckRanges - 1)
        return fail(err, ErrorKind::bad_value,
                    "ACK frame: range count " + dec(range_count) + " exceeds " +
                        dec(kMaxAckRanges - 1) + " (at most " + dec(kMaxAckRanges) + " ranges)");
    if (first_range > largest)
        return fail(err, ErrorKind::bad_value,
                    "ACK frame: first range " + dec(first_range) + " exceeds largest acknowledged " +
                        dec(largest));
    out.ranges.clear();
    out.ranges.reserve(static_cast<std::size_t>(range_count) + 1);
    out.ack_delay = Duration(static_cast<Duration::rep>(delay_us * 1000));
    std::uint64_t smallest = largest - first_range;
    out.ranges.push_back({smallest, largest});
    // RFC 9000 §19.3.1: largest_i = smallest_{i-1} - gap - 2,
    // smallest_i = largest_i - length; neither may go below packet number 0.
    for (std::uint64_t i = 0; i < range_count; ++i) {
        std::uint64_t gap, length;
        if (!f.varint(gap, "gap") || !f.varint(length, "range length")) return false;
        if (smallest < 2 || gap > smallest - 2)
            return fail(err, ErrorKind::bad_value,
                        "ACK frame: gap " + dec(gap) + " of range " + dec(i + 1) +
                            " underflows below packet number 0");
        const std::uint64_t hi = smallest - gap - 2;
        if (length > hi)
            return fail(err, ErrorKind::bad_value,
                        "ACK frame: range length " + dec(length) + " of range " + dec(i + 1) +
                            " underflows below packet number 0");
        smallest = hi - length;
        out.ranges.push_back({smallest, hi});
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

bool decode_close(Reader& r, bool application, ConnectionCloseFrame& out, Error& err) {
    FieldReader f{r, err, "CONNECTION_CLOSE frame"};
    out.application = application;
    out.frame_type = 0;
    if (!f.varint(out.error_code, "error code")) return false;
    if (!application && !f.varint(out.frame_type, "frame type")) return false;
    std::uint64_t len;
    if (!f.varint(len, "reason length")) return false;
    if (len > kMaxReasonLength)
        return fail(err, ErrorKind::bad_value,
                    "CONNECTION_CLOSE frame: reason length " + dec(len) + " exceeds " +
                        dec(kMaxReasonLength));
    std::span<const std::uint8_t> reason;
    if (!f.bytes(reason, len, "reason length")) return false;
    out.reason = std::string_view(reinterpret_cast<const char*>(reason.data()), reason.size());
    return true;
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
    void bytes(std::span<const std::uint8_t> b) { n += b.size(); }
    void zeros(std::size_t k) { n += k; }
    void invalid() { ok = false; }
};

struct WriteSink {
    Writer& w;
    bool ok = true;
    void varint(std::uint64_t v) { ok = ok && w.varint(v); }
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
void emit(Sink& s, const Frame& frame) {
    std::visit(
        overloaded{
            [&](const PaddingFrame& f) { s.zeros(f.length); },
            [&](const PingFrame&) { s.varint(frame_type::ping); },
            [&](const AckFrame& f) {
                const std::size_t n = std::min(f.ranges.size(), kMaxAckRanges);
                if (n == 0) return s.invalid();
                const auto delay = f.ack_delay.count() < 0 ? 0 : f.ack_delay.count() / 1000;
                const AckRange& first = f.ranges[0];
                if (first.smallest > first.largest) return s.invalid();
                s.varint(frame_type::ack);
                s.varint(first.largest);
                s.varint(static_cast<std::uint64_t>(delay));
                s.varint(n - 1);
                s.varint(first.largest - first.smallest);
                std::uint64_t prev_smallest = first.smallest;
                for (std::size_t i = 1; i < n; ++i) {
                    const AckRange& a = f.ranges[i];
                    // Descending and non-adjacent: at least one missing packet between.
                    if (a.smallest > a.largest || prev_smallest < 2 || a.largest > prev_smallest - 2)
                        return s.invalid();
                    s.varint(prev_smallest - a.largest - 2);
                    s.varint(a.largest - a.smallest);
                    prev_smallest = a.smallest;
                }
            },
            [&](const CryptoFrame& f) {
                if (f.data.size() > kVarintMax || f.offset > kVarintMax - f.data.size())
                    return s.invalid();
                s.varint(frame_type::crypto);
                s.varint(f.offset);
                s.varint(f.data.size());
                s.bytes(f.data);
            },
            [&](const StreamFrame& f) {
                if (f.data.size() > kVarintMax || f.offset > kVarintMax - f.data.size())
                    return s.invalid();
                s.varint(frame_type::stream | 0x04 | 0x02 | (f.fin ? 0x01 : 0x00));
                s.varint(f.stream_id);
                s.varint(f.offset);
                s.varint(f.data.size());
                s.bytes(f.data);
            },
            [&](const MaxDataFrame& f) {
                s.varint(frame_type::max_data);
                s.varint(f.maximum);
            },
            [&](const MaxStreamDataFrame& f) {
                s.varint(frame_type::max_stream_data);
                s.varint(f.stream_id);
                s.varint(f.maximum);
            },
            [&](const MaxStreamsFrame& f) {
                if (f.maximum > kMaxStreamCount) return s.invalid();
                s.varint(frame_type::max_streams);
                s.varint(f.maximum);
            },
            [&](const DataBlockedFrame& f) {
                s.varint(frame_type::data_blocked);
                s.varint(f.limit);
            },
            [&](const StreamDataBlockedFrame& f) {
                s.varint(frame_type::stream_data_blocked);
                s.varint(f.stream_id);
                s.varint(f.limit);
            },
            [&](const ConnectionCloseFrame& f) {
                // Longer reasons are cut, as the peer would reject them.
                const std::size_t len = std::min(f.reason.size(), kMaxReasonLength);
                s.varint(f.application ? frame_type::connection_close_app
                                       : frame_type::connection_close);
                s.varint(f.error_code);
                if (!f.application) s.varint(f.frame_type);
                s.varint(len);
                s.bytes({reinterpret_cast<const std::uint8_t*>(f.reason.data()), len});
            },
            [&](const HandshakeDoneFrame&) { s.varint(frame_type::handshake_done); },
        },
        frame);
}

}  // namespace

bool is_ack_eliciting(const Frame& f) {
    return !std::holds_alternative<AckFrame>(f) && !std::holds_alternative<PaddingFrame>(f) &&
           !std::holds_alternative<ConnectionCloseFrame>(f);
}

bool decode_frame(Reader& r, Frame& out, Error& err) {
    const std::size_t start = r.position();
    const auto type_opt = r.varint();
    if (!type_opt) return fail(err, ErrorKind::truncated, "frame type: truncated varint");
    const std::uint64_t type = *type_opt;
    // RFC 9000 §12.4: frame types use the shortest encoding.
    if (r.position() - start != varint_size(type))
        return fail(err, ErrorKind::bad_varint,
                    "frame type " + hex(type) + ": non-minimal varint encoding");

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
        case frame_type::ack: {
            AckFrame a;
            if (!decode_ack(r, a, err)) return false;
            out = std::move(a);
            return true;
        }
        case frame_type::crypto: {
            FieldReader f{r, err, "CRYPTO frame"};
            CryptoFrame c;
            std::uint64_t len;
            if (!f.varint(c.offset, "offset") || !f.varint(len, "length") || !f.bytes(c.data, len, "length") ||
                !check_end_offset(err, "CRYPTO frame", c.offset, c.data.size()))
                return false;
            out = c;
            return true;
        }
        case frame_type::max_data: {
            FieldReader f{r, err, "MAX_DATA frame"};
            MaxDataFrame m;
            if (!f.varint(m.maximum, "maximum data")) return false;
            out = m;
            return true;
        }
        case frame_type::max_stream_data: {
            FieldReader f{r, err, "MAX_STREAM_DATA frame"};
            MaxStreamDataFrame m;
            if (!f.varint(m.stream_id, "stream id") || !f.varint(m.maximum, "maximum stream data"))
                return false;
            out = m;
            return true;
        }
        case frame_type::max_streams: {
            FieldReader f{r, err, "MAX_STREAMS frame"};
            MaxStreamsFrame m;
            if (!f.varint(m.maximum, "maximum streams")) return false;
            if (m.maximum > kMaxStreamCount)
                return fail(err, ErrorKind::bad_value,
                            "MAX_STREAMS frame: maximum streams " + dec(m.maximum) + " exceeds 2^60");
            out = m;
            return true;
        }
        case frame_type::data_blocked: {
            FieldReader f{r, err, "DATA_BLOCKED frame"};
            DataBlockedFrame d;
            if (!f.varint(d.limit, "maximum data")) return false;
            out = d;
            return true;
        }
        case frame_type::stream_data_blocked: {
            FieldReader f{r, err, "STREAM_DATA_BLOCKED frame"};
            StreamDataBlockedFrame d;
            if (!f.varint(d.stream_id, "stream id") || !f.varint(d.limit, "maximum stream data"))
                return false;
            out = d;
            return true;
        }
        case frame_type::connection_close:
        case frame_type::connection_close_app: {
            ConnectionCloseFrame c;
            if (!decode_close(r, type == frame_type::connection_close_app, c, err)) return false;
            out = c;
            return true;
        }
        default:
            if (type >= frame_type::stream && type <= frame_type::stream + 0x07) {
                StreamFrame s;
                if (!decode_stream(r, type, s, err)) return false;
                out = s;
                return true;
            }
            return fail(err, ErrorKind::unknown_frame, "unknown frame type " + hex(type));
    }
}

bool encode_frame(Writer& w, const Frame& f) {
    SizeSink size;
    emit(size, f);
    if (!size.ok || size.n > w.remaining()) return false;
    WriteSink out{w};
    emit(out, f);
    return out.ok;  // cannot fail after the size check
}

std::size_t stream_frame_overhead(std::uint64_t stream_id, std::uint64_t offset, std::size_t data_len) {
    return varint_size(frame_type::stream | 0x06) + varint_size(stream_id) + varint_size(offset) +
           varint_size(data_len);
}

std::size_t encoded_size(const Frame& f) {
    SizeSink size;
    emit(size, f);
    return size.n;
}

}  // namespace ndm::wire

// ndm::h3: HTTP/3 (RFC 9114) over an ndm::Connection, with Debian's
// libnghttp3 doing the framing and QPACK (RFC 9204). A Session is sans-I/O
// like the Connection it rides on: the driver (an Endpoint's event loop, the
// simulator) hands it the connection's events and calls flush() after them;
// the session reads the connection's streams, and writes nghttp3's frames into
// them. docs/h3.md says how streams, flow control and closes map.
//
//   auto s = h3::Session::client();            // ALPN "h3" on the connection
//   on Established:        s->start(conn);
//   on every event:        s->on_event(conn, ev, now); s->flush(conn, now);
//   s->submit(conn, {"GET", "https", "example.com", "/"}, handler);
//
// A Session is not thread-safe; drive it from the connection's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndm/connection.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::h3 {

// The ALPN token of HTTP/3 (RFC 9114 §3.1): TlsOptions::alpn of both ends.
inline constexpr const char* kAlpn = "h3";

// HTTP/3 error codes (RFC 9114 §8.1) that ndm's side uses: the application
// close code of a clean close, and a request given up.
inline constexpr std::uint64_t kNoError = 0x100;
inline constexpr std::uint64_t kInternalError = 0x102;
inline constexpr std::uint64_t kRequestRejected = 0x10b;
inline constexpr std::uint64_t kRequestCancelled = 0x10c;
// The code's name as RFC 9114 §8.1 spells it ("H3_NO_ERROR"), "0x…" if none.
std::string error_name(std::uint64_t code);

// Unidirectional streams an HTTP/3 endpoint must let its peer open: control,
// QPACK encoder and decoder (RFC 9114 §6.2). ConnectionConfig's
// initial_max_streams_uni must be at least this.
inline constexpr std::uint64_t kMinUniStreams = 3;

// A field line (RFC 9114 §4.2): names are lower case.
struct Field {
    std::string name, value;
};

// A body made on demand, as Connection::StreamSource: fill(offset, out)
// writes the body's bytes [offset, offset + out.size()). The session asks
// for each byte once, in order, and keeps what it asked for only until the
// transport has taken it (nghttp3's acked_stream_data). `size` goes out as
// content-length, so a peer can tell a whole body from a cut one.
struct Body {
    std::uint64_t size = 0;
    std::function<void(std::uint64_t offset, std::span<std::uint8_t> out)> fill;
};

struct Request {
    std::string method = "GET";
    std::string scheme = "https";
    std::string authority;
    std::string path = "/";
    std::vector<Field> fields;  // regular fields (user-agent, ...), no pseudo-fields
};

struct Response {
    unsigned status = 200;
    std::vector<Field> fields;  // content-length is added from body.size
    Body body;
};

// What a client hears of one request, in this order: the response's
// header section once, its body in pieces, then done() exactly once. done's
// argument is empty when the response arrived whole (the stream's FIN read
// after a complete message, content-length honoured: nghttp3 checks it);
// else it says why not (a stream or connection error, GOAWAY, the
// connection's close), and the bytes handed to data() are not the whole body.
struct ResponseHandler {
    std::function<void(unsigned status, const std::vector<Field>& fields)> headers;
    std::function<void(std::span<const std::uint8_t> bytes)> data;
    std::function<void(const std::string& error)> done;
};

// A server's answer to a whole request (its FIN read): called once per
// request, on the connection's thread.
using RequestHandler = std::function<Response(const Request&)>;

struct SessionConfig {
    // The largest header section this side accepts (SETTINGS_MAX_FIELD_SECTION_SIZE,
    // RFC 9114 §7.2.4.1); a larger one is a message error on its stream.
    std::uint64_t max_field_section_size = 64 * 1024;
    // Server: the requests' handler (required).
    RequestHandler handler;
};

// A fatal HTTP/3 error (a connection error, RFC 9114 §8), or a session
// used against its contract (start() twice, submit() on a server).
class SessionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Session {
public:
    static std::unique_ptr<Session> client(SessionConfig config = {});
    // Throws SessionError without a handler.
    static std::unique_ptr<Session> server(SessionConfig config);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Opens this side's control and QPACK streams and queues SETTINGS: call
    // once the connection is established. Throws SessionError when the peer
    // lets this side open fewer than kMinUniStreams unidirectional streams.
    void start(Connection& c);
    // Every event of the connection: the peer's streams and their data go
    // to nghttp3, writable streams are unblocked, Closed ends the requests
    // still open (done() with the close's reason). A fatal HTTP/3 error
    // closes the connection with its code and a reason, which error() then
    // holds; nothing is dropped without a word.
    void on_event(Connection& c, const Event& ev, Instant now);
    // The Closed event's part, for a driver that has no Connection left to
    // pass (an Endpoint removes it): requests still open end with `info`.
    void on_close(const CloseInfo& info);
    // Writes what nghttp3 has to send (frames, bodies) into the streams, as
    // far as their send buffers take it; call after on_event, submit and
    // shutdown. `now` is for a close (a session reads no clock).
    void flush(Connection& c, Instant now);

    // Client: starts a request on a new bidirectional stream; its stream, or
    // nullopt when the peer's stream limit is reached for now (try again
    // after a later event: the peer's MAX_STREAMS comes as streams finish)
    // or the peer sent GOAWAY. Throws SessionError on a server or before start().
    std::optional<StreamId> submit(Connection& c, const Request& request, ResponseHandler handler);
    // Gives up request `id` (RFC 9114 §4.1.1): the halves of its stream
    // still open end with `code`, STOP_SENDING for the peer's and
    // RESET_STREAM for ours, and the connection's other requests go on. A
    // client's done() then says the response was cut, naming the code; a
    // server abandons the response (H3_REQUEST_REJECTED for a request it
    // will not process, §8.1). Nothing happens for a stream that is not an
    // open request. The peer's own RESET_STREAM and STOP_SENDING arrive as
    // the connection's events (on_event): a reset response ends its request
    // with done() naming the peer's code.
    void cancel(Connection& c, StreamId id, std::uint64_t code, Instant now);
    // Graceful shutdown (RFC 9114 §5.2): sends GOAWAY naming the first
    // request this side will not process. Requests in progress complete;
    // then close the connection with kNoError.
    void shutdown(Connection& c);

    // Requests submitted (client) or received (server) whose streams have
    // not completed yet.
    [[nodiscard]] std::size_t open_requests() const;
    // The peer sent GOAWAY (RFC 9114 §5.2).
    [[nodiscard]] bool goaway_received() const;
    // Empty until a fatal HTTP/3 error closed the connection; then what it was.
    [[nodiscard]] const std::string& error() const;

    struct Impl;

private:
    explicit Session(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace ndm::h3

#pragma GCC visibility pop

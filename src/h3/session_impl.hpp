// The private state of ndm::h3::Session, shared by session.cpp (the public
// calls: streams read into nghttp3, its frames written out) and callbacks.cpp
// (what nghttp3 calls back).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nghttp3/nghttp3.h>

#include "ndm/h3.hpp"

namespace ndm::h3 {

// One request stream (bidirectional, RFC 9114 §4.1).
struct RequestStream {
    // Client: the handler and what arrived of the response so far.
    ResponseHandler handler;
    unsigned status = 0;
    std::vector<Field> fields;
    bool complete = false;  // nghttp3's end_stream: the whole message arrived
    // Server: the request as it arrives, and the response once answered.
    Request request;
    Response response;
    // The body bytes nghttp3 asked for (read_data) and the transport has not
    // taken yet; released by acked_stream_data.
    std::deque<std::vector<std::uint8_t>> chunks;
    std::uint64_t front_released = 0;  // bytes of chunks.front() already released
    std::uint64_t body_offset = 0;     // next byte read_data asks the body for
    bool fin_written = false;          // our FIN went to the connection
    bool fin_read = false;             // the peer's FIN went to nghttp3
    bool discard = false;              // we stopped reading (STOP_SENDING): what the peer sends is dropped
    bool reset_by_peer = false;        // the peer reset its sending (RESET_STREAM)
    bool send_aborted = false;         // our sending was reset (by us, or at the peer's STOP_SENDING)
    // The code of the first abandoned half, which the stream closes with
    // in nghttp3 (a client's done() names it); none: H3_NO_ERROR.
    std::optional<std::uint64_t> abort_code;
    [[nodiscard]] bool read_ended() const { return fin_read || discard || reset_by_peer; }
    [[nodiscard]] bool write_ended() const { return fin_written || send_aborted; }
};

struct Session::Impl {
    Impl(bool is_server, SessionConfig cfg);
    ~Impl();
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    // session.cpp
    void read(StreamId id);
    void write_all();
    void close_finished();
    void fail(int rv, const char* what);
    void end_all(const std::string& why);
    void answer(std::int64_t id, RequestStream& s);
    // stream_abort.cpp: a half given up by this side (tell_nghttp3: false
    // inside an nghttp3 callback, where nghttp3 made the decision), the
    // peer's RESET_STREAM and STOP_SENDING, a request whose halves both
    // ended queued for nghttp3_conn_close_stream, Session::cancel.
    void abort_send(std::int64_t sid, std::uint64_t code, bool tell_nghttp3);
    void abort_receive(std::int64_t sid, std::uint64_t code, bool tell_nghttp3);
    void on_peer_reset(std::int64_t sid, std::uint64_t code);
    void on_peer_stop(std::int64_t sid, std::uint64_t code);
    void maybe_close(std::int64_t sid);
    void cancel(std::int64_t sid, std::uint64_t code);
    void abort_pending();  // the bodies that failed inside read_data (to_abort)

    RequestStream* stream(std::int64_t id) {
        auto it = streams.find(id);
        return it == streams.end() ? nullptr : &it->second;
    }

    bool server;
    SessionConfig config;
    nghttp3_conn* h3 = nullptr;
    bool started = false;
    std::map<std::int64_t, RequestStream> streams;  // open request streams
    std::set<std::int64_t> peer_uni;                 // the peer's streams that are not requests (control, QPACK, ...), until their FIN
    std::set<std::int64_t> blocked;                  // told nghttp3_conn_block_stream: the send buffer was full
    std::vector<std::int64_t> to_answer;             // server: requests complete, to respond to
    std::vector<std::int64_t> to_close;              // both halves done: nghttp3_conn_close_stream
    std::vector<std::pair<std::int64_t, std::uint64_t>> uni_to_close;  // the peer's streams we stopped, with the code
    std::vector<std::int64_t> to_abort;              // server: a body failed in read_data: reset the response
    std::string error;                               // the fatal error that closed the connection
    bool goaway = false;
    // The connection and the time of the public call in progress, for the callbacks.
    Connection* conn = nullptr;
    Instant now{};
};

// The nghttp3 callbacks (callbacks.cpp), their conn_user_data the Impl.
nghttp3_callbacks session_callbacks();

}  // namespace ndm::h3

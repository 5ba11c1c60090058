// A server's record of the ClientHellos that carried 0-RTT (RFC 8446 §8,
// RFC 9001 §9.2): GnuTLS's anti-replay check (gnutls_anti_replay_*) rejects
// a ClientHello outside its time window on its own and asks this record
// whether one inside the window was seen before. A ClientHello seen before,
// or one that finds the record full, has its early data refused: the
// handshake goes on and the client sends the data again in 1-RTT packets
// (RFC 9001 §4.6.2), so a replayed 0-RTT flight is never processed twice.
// One record serves every session of a ServerCredentials (its state), from
// any thread.
#pragma once

#include <gnutls/gnutls.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace ndm::tls {

class AntiReplay {
public:
    // Entries held at most; past it new early data is refused until old
    // entries leave the window.
    static constexpr std::size_t kMaxEntries = 1u << 16;

    AntiReplay();
    ~AntiReplay();
    AntiReplay(const AntiReplay&) = delete;
    AntiReplay& operator=(const AntiReplay&) = delete;

    // Enables the check on a server session, with `window` (RFC 8446 §8.2's
    // allowed ticket age skew, at least 1 ms).
    void enable(gnutls_session_t session, std::chrono::milliseconds window);

    // GnuTLS's add function: true if `key` was new (and is now held).
    bool add(std::time_t expires, const std::string& key);

    struct Counts {
        std::uint64_t accepted = 0;  // first sight of a ClientHello
        std::uint64_t replayed = 0;  // seen before: early data refused
        std::uint64_t full = 0;      // the record was full: refused
    };
    [[nodiscard]] Counts counts() const;

private:
    mutable std::mutex mutex_;
    gnutls_anti_replay_t ar_ = nullptr;
    std::chrono::milliseconds window_{0};
    std::set<std::string> keys_;
    std::multimap<std::time_t, std::string> by_expiry_;
    Counts counts_;
};

}  // namespace ndm::tls

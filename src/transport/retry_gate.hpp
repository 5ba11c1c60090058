// Address validation with Retry (RFC 9000 §8.1.2) for a server's Router (router.hpp):
// whether a client's Initial gets a Retry instead of a connection, the Retry
// itself, and the check of the token the client returns. The token
// (crypto::AddressTokenKey) binds the client's address and port and its
// first Destination Connection ID, sealed under a key only this gate holds,
// so a Retry costs the server no state and an Initial that returns a valid
// token proves its sender receives at that address. The same key makes the
// tokens a server gives in NEW_TOKEN frames for later connections (§8.1.3):
// another kind byte, the client's address without its port (a client's next
// connection has another), no DCID, and 24 hours' life instead of 10 s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "crypto/address_token.hpp"
#include "crypto/random.hpp"
#include "ndm/connection.hpp"
#include "transport/peer_address.hpp"
#include "wire/quic_header.hpp"

namespace ndm::transport {

// When an Initial without a token gets a Retry (EndpointConfig::retry's
// values, include/ndm/endpoint.hpp, which the core does not include).
enum class RetryMode : std::uint8_t { never, under_load, always };

class RetryGate {
public:
    // A Retry is at most: first byte, version, two CID lengths and CIDs,
    // the token and the integrity tag (RFC 9000 §17.2.5).
    static constexpr std::size_t kMaxRetrySize =
        7 + 2 * wire::kMaxCidLength + crypto::kMaxAddressTokenSize + crypto::kAeadTagSize;

    RetryGate(RetryMode mode, std::size_t threshold);

    // An Initial without a (valid) token gets a Retry now: always, or under
    // load: once the threshold is reached by the `half_open` handshakes in
    // progress or by those begun within the last second. (Both: spoofed
    // Initials whose ports answer with ICMP errors end their handshakes
    // within a round trip, so a flood of them never piles up half-open
    // state, yet each one would cost a TLS handshake.)
    [[nodiscard]] bool wants_retry(std::size_t half_open, Instant now) const;
    // A connection was admitted without a Retry at `now`.
    void on_handshake_started(Instant now);

    // Writes into `out` (at least kMaxRetrySize bytes) the Retry answering
    // `initial`, the parsed first packet of a client's datagram from `peer`,
    // and returns its size: its DCID is the client's SCID, its SCID a fresh
    // random ID the client will use as DCID from now on.
    std::size_t write_retry(std::span<std::uint8_t> out, const wire::quic::PacketView& initial, const PeerAddress& peer,
                            Instant now);

    // A token for `peer`'s later connections of QUIC `version` (RFC 9369 §5:
    // valid for that version only), for ConnectionConfig::token_to_issue.
    [[nodiscard]] std::vector<std::uint8_t> issue_new_token(const PeerAddress& peer, std::uint32_t version, Instant now);

    // What the token of `initial` (a client's Initial from `peer`) proves.
    struct TokenCheck {
        enum class Kind : std::uint8_t {
            none,     // no token, or one this gate did not make (a NEW_TOKEN
                      // token of another server): as if none (RFC 9000 §8.1.3)
            valid,    // a Retry token this gate issued for `peer`, unexpired,
                      // or a NEW_TOKEN one for its address (retry.from_new_token)
            invalid,  // shaped like this gate's Retry tokens but forged,
                      // expired or from another address: dropped (§8.1.2).
                      // A NEW_TOKEN token that fails is `none` instead: the
                      // client may have moved, and its Initial may get a Retry (§8.1.3)
        };
        Kind kind = Kind::none;
        RetryValidation retry;  // when valid: the client's first DCID
    };
    [[nodiscard]] TokenCheck check_token(const wire::quic::PacketView& initial, const PeerAddress& peer, Instant now);

private:
    // Handshakes begun in the last second, from two one-second buckets (the
    // previous one weighted by how much of it the last second still covers).
    [[nodiscard]] double recent_handshakes(Instant now) const;
    void roll_window(Instant now);

    RetryMode policy_;
    std::size_t threshold_;
    Instant window_start_{};
    std::size_t this_window_ = 0, last_window_ = 0;
    crypto::CryptoRandom random_;
    crypto::AddressTokenKey key_;
};

}  // namespace ndm::transport

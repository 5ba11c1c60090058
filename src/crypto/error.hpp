// The one exception src/crypto throws for a GnuTLS, nettle or OpenSSL call that cannot
// fail on valid input (library or memory failure). Peer input never throws:
// it is refused with a false or an empty optional.
#pragma once

#include <stdexcept>

namespace ndm::crypto {

struct CryptoError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace ndm::crypto

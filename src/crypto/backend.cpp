#include "crypto/backend.hpp"

namespace ndm::crypto {

std::string_view to_string(Backend backend) {
    switch (backend) {
    case Backend::gnutls: return "gnutls";
    case Backend::openssl: return "openssl";
    }
    return "?";
}

std::optional<Backend> parse_backend(std::string_view name) {
    for (const Backend b : kBackends)
        if (name == to_string(b)) return b;
    return std::nullopt;
}

const BackendOps& backend_ops(Backend backend) {
    return backend == Backend::openssl ? kOpensslBackend : kGnutlsBackend;
}

std::string_view library_version(Backend backend) { return backend_ops(backend).version(); }

}  // namespace ndm::crypto

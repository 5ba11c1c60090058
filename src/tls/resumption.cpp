// ResumptionTicket's byte format (include/ndm/tls.hpp): what a client stores
// between connections, read back as untrusted input (a file may be truncated,
// old or edited): "ndm-ticket 1\n", then four fields, each a 32-bit
// big-endian length and its bytes (the session data, the server's transport
// parameters, the server name, the ALPN), then one flags byte (bit 0: early
// data allowed). Every length is bounded and the bytes must end there.
#include <fmt/format.h>

#include <array>
#include <string_view>

#include "ndm/tls.hpp"

namespace ndm::tls {

namespace {

constexpr std::string_view kMagic = "ndm-ticket 1\n";
// A GnuTLS TLS 1.3 session is well under 4 KiB; transport parameters are
// bounded by a datagram; a name by DNS, an ALPN by TLS.
constexpr std::array<std::size_t, 4> kMaxField = {64 * 1024, 65535, 255, 255};
constexpr std::array<std::string_view, 4> kFieldName = {"session data", "transport parameters", "server name",
                                                        "ALPN"};

void put_field(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> bytes) {
    const auto n = static_cast<std::uint32_t>(bytes.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(n >> shift));
    out.insert(out.end(), bytes.begin(), bytes.end());
}

std::span<const std::uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

std::vector<std::uint8_t> ResumptionTicket::serialize() const {
    std::vector<std::uint8_t> out(kMagic.begin(), kMagic.end());
    put_field(out, session);
    put_field(out, transport_parameters);
    put_field(out, bytes_of(server_name));
    put_field(out, bytes_of(alpn));
    out.push_back(early_data ? 1 : 0);
    return out;
}

ResumptionTicket ResumptionTicket::parse(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < kMagic.size() ||
        std::string_view(reinterpret_cast<const char*>(bytes.data()), kMagic.size()) != kMagic)
        throw ResumptionError("not an ndm session ticket (no \"ndm-ticket 1\" header)");
    std::size_t at = kMagic.size();
    std::array<std::vector<std::uint8_t>, 4> fields;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (bytes.size() - at < 4) throw ResumptionError(fmt::format("session ticket ends before its {}", kFieldName[i]));
        std::size_t n = 0;
        for (int k = 0; k < 4; ++k) n = n << 8 | bytes[at + static_cast<std::size_t>(k)];
        at += 4;
        if (n > kMaxField[i])
            throw ResumptionError(fmt::format("session ticket's {} is {} bytes (at most {})", kFieldName[i], n, kMaxField[i]));
        if (bytes.size() - at < n) throw ResumptionError(fmt::format("session ticket's {} is cut short", kFieldName[i]));
        fields[i].assign(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
    }
    if (bytes.size() - at != 1 || bytes[at] > 1)
        throw ResumptionError("session ticket has a bad flags byte or bytes after it");
    ResumptionTicket t;
    t.session = std::move(fields[0]);
    t.transport_parameters = std::move(fields[1]);
    t.server_name.assign(fields[2].begin(), fields[2].end());
    t.alpn.assign(fields[3].begin(), fields[3].end());
    t.early_data = bytes[at] == 1;
    if (t.session.empty()) throw ResumptionError("session ticket has no session data");
    if (t.transport_parameters.empty()) throw ResumptionError("session ticket has no transport parameters");
    if (t.alpn.empty()) throw ResumptionError("session ticket has no ALPN");
    return t;
}

}  // namespace ndm::tls

// QUIC packet protection cost (src/crypto, RFC 9001 §5): per suite and
// backend (GnuTLS/nettle, OpenSSL libcrypto: src/crypto/backend.hpp), protect
// (AEAD seal + header protection) and the receive side (remove header
// protection + AEAD open) of a 1452-byte short header packet, the header
// protection mask alone, and the packet codec's build + open of the same
// packet through OneRttKeys (src/wire/packet_codec). BM_Choice is what the
// start-up measurement (src/crypto/backend_choice) costs and chooses.
//   build/bench/bench_crypto [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <limits>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "crypto/backend_choice.hpp"
#include "crypto/hkdf.hpp"
#include "crypto/key_phase.hpp"
#include "crypto/packet_protection.hpp"
#include "wire/packet_codec.hpp"

using ndm::crypto::QuicVersion;

namespace {

using namespace ndm::crypto;

constexpr std::size_t kPacket = 1452;
constexpr std::size_t kPnOffset = 9;  // first byte and an 8-byte DCID

PacketKeys keys_for(CipherSuite suite) {
    Secret s;
    s.size = static_cast<std::uint8_t>(hash_size(suite));
    s.bytes.fill(0x5a);
    return derive_packet_keys(suite, s, QuicVersion::v1);
}

std::vector<std::uint8_t> plain_packet(std::uint64_t pn) {
    std::vector<std::uint8_t> p(kPacket, 0x11);
    p[0] = 0x41;
    p[kPnOffset] = static_cast<std::uint8_t>(pn >> 8);
    p[kPnOffset + 1] = static_cast<std::uint8_t>(pn);
    return p;
}

void BM_Protect(benchmark::State& state, CipherSuite suite, Backend backend) {
    DirectionKeys tx(backend, keys_for(suite));
    auto pkt = plain_packet(1);
    std::uint64_t pn = 0;
    for (auto _ : state) {
        pkt[0] = 0x41;
        if (!protect(pkt, kPnOffset, 2, ++pn, tx.aead, tx.hp)) throw std::runtime_error("protect failed");
        benchmark::DoNotOptimize(pkt.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPacket));
}

// Opens the same protected packet each time from a fresh copy (the copy of
// 1452 bytes is part of the measured time; it is small next to the AEAD).
void BM_Unprotect(benchmark::State& state, CipherSuite suite, Backend backend) {
    const auto keys = keys_for(suite);
    DirectionKeys tx(backend, keys);
    DirectionKeys rx(backend, keys);
    auto sealed = plain_packet(7);
    if (!protect(sealed, kPnOffset, 2, 7, tx.aead, tx.hp)) throw std::runtime_error("protect failed");
    std::vector<std::uint8_t> pkt(sealed.size());
    for (auto _ : state) {
        std::copy(sealed.begin(), sealed.end(), pkt.begin());
        const auto header = remove_header_protection(pkt, kPnOffset, rx.hp);
        if (!header || !open_payload(pkt, header->header_length(kPnOffset), 7, rx.aead)) {
            throw std::runtime_error("open failed");
        }
        benchmark::DoNotOptimize(pkt.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPacket));
}

void BM_HeaderMask(benchmark::State& state, CipherSuite suite, Backend backend) {
    const HeaderProtection hp(backend, keys_for(suite));
    std::array<std::uint8_t, kHpSampleSize> sample{};
    for (auto _ : state) {
        const HpMask m = hp.mask(sample);
        sample[0] ^= m[0];  // chained, so calls cannot overlap or be hoisted
        benchmark::DoNotOptimize(sample);
    }
}

// PacketBuilder + DatagramPackets-style parse + open_packet of a full 1-RTT
// packet; the AEAD limits are lifted so long runs never hit them.
void BM_CodecRoundTrip(benchmark::State& state, CipherSuite suite, Backend backend) {
    override_backend(backend);  // OneRttKeys makes its keys with the process's choice
    namespace quic = ndm::wire::quic;
    Secret read_secret = Secret{};
    read_secret.size = static_cast<std::uint8_t>(hash_size(suite));
    Secret write_secret = read_secret;
    write_secret.bytes.fill(0x5a);
    constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
    const AeadUsage unlimited(AeadLimits{kMax, kMax}, kMax);
    OneRttKeys tx(suite, QuicVersion::v1, read_secret, write_secret, unlimited);
    OneRttKeys rx(suite, QuicVersion::v1, write_secret, read_secret, unlimited);
    std::vector<std::uint8_t> datagram(kPacket, 0x11);
    quic::ShortHeader h;
    h.dcid.length = kPnOffset - 1;
    h.pn_length = 2;
    for (auto _ : state) {
        ++h.packet_number;
        quic::PacketBuilder b(datagram, 0, h);
        if (b.finish(b.payload_space().size(), tx) != kPacket) throw std::runtime_error("build failed");
        quic::PacketView v;
        quic::OpenedPacket p;
        if (quic::parse_packet_header(datagram, kPnOffset - 1, v) != quic::HeaderError::none ||
            quic::open_packet(datagram, v, &rx, h.packet_number - 1, ndm::Instant{}, ndm::Duration{1}, p) !=
                quic::OpenError::none)
            throw std::runtime_error("open failed");
        benchmark::DoNotOptimize(p.payload.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPacket));
    override_backend(std::nullopt);
}

// The start-up measurement of one suite: its cost, and its pick as a label.
void BM_Choice(benchmark::State& state, CipherSuite suite) {
    BackendChoice choice;
    for (auto _ : state) choice = measure_backends(suite);
    state.SetLabel(describe(choice));
}

const bool registered = [] {
    for (const auto suite : {CipherSuite::aes128_gcm_sha256, CipherSuite::aes256_gcm_sha384,
                             CipherSuite::chacha20_poly1305_sha256}) {
        const std::string name(to_string(suite));
        for (const Backend backend : kBackends) {
            const std::string tail = name + "/" + std::string(to_string(backend));
            benchmark::RegisterBenchmark(("BM_Protect/" + tail).c_str(), BM_Protect, suite, backend);
            benchmark::RegisterBenchmark(("BM_Unprotect/" + tail).c_str(), BM_Unprotect, suite, backend);
            benchmark::RegisterBenchmark(("BM_HeaderMask/" + tail).c_str(), BM_HeaderMask, suite, backend);
            benchmark::RegisterBenchmark(("BM_CodecRoundTrip/" + tail).c_str(), BM_CodecRoundTrip, suite, backend);
        }
        benchmark::RegisterBenchmark(("BM_Choice/" + name).c_str(), BM_Choice, suite)->Iterations(3);
    }
    return true;
}();

}  // namespace

BENCHMARK_MAIN();

// Unreliable datagrams (RFC 9221) with the sans-I/O Connection, in virtual
// time: a client sends 500 numbered datagrams, one every 2 ms, over a
// simulated 20 ms path that loses 5 % of them; the server reads each as it
// arrives. The client learns each datagram's fate from the transport
// (DatagramAcked / DatagramLost: never resent), and the two counts agree with
// what the server saw. `datagrams [loss-percent]`.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <variant>
#include <vector>

#include <ndm/connection.hpp>
#include <ndm/sim.hpp>

int main(int argc, char** argv) {
    const double loss = (argc > 1 ? std::atof(argv[1]) : 5.0) / 100;
    if (!(loss >= 0 && loss < 1)) {
        std::fprintf(stderr, "usage: %s [loss-percent, 0..99]\n", argv[0]);
        return 2;
    }
    ndm::sim::SimpleLinkConfig up, down;
    up.delay = down.delay = std::chrono::milliseconds(20);
    up.loss = loss;
    ndm::sim::Simulator sim(std::make_unique<ndm::sim::SimpleLink>(up), std::make_unique<ndm::sim::SimpleLink>(down));
    ndm::ConnectionConfig client, server;
    server.max_datagram_frame_size = 65535;  // the server takes DATAGRAM frames; the client need not
    sim.connect(client, server);
    if (!sim.run_until([&] { return sim.client()->is_established() && sim.server(); }, sim.now() + std::chrono::seconds(5))) {
        std::fprintf(stderr, "no handshake\n");
        return 1;
    }
    std::printf("negotiated: datagrams of up to %zu bytes\n", sim.client()->max_datagram_payload());

    std::set<std::uint32_t> received;
    std::uint64_t acked = 0, lost = 0;
    auto poll = [&] {
        while (auto d = sim.server()->recv_datagram())
            if (d->size() == 4) received.insert(std::uint32_t((*d)[0]) << 24 | std::uint32_t((*d)[1]) << 16 |
                                                std::uint32_t((*d)[2]) << 8 | (*d)[3]);
        while (sim.server()->poll_event()) {
        }
        while (auto ev = sim.client()->poll_event()) {
            acked += std::holds_alternative<ndm::event::DatagramAcked>(*ev);
            lost += std::holds_alternative<ndm::event::DatagramLost>(*ev);
        }
    };
    const std::uint32_t count = 500;
    for (std::uint32_t seq = 0; seq < count; ++seq) {
        const std::vector<std::uint8_t> d{std::uint8_t(seq >> 24), std::uint8_t(seq >> 16), std::uint8_t(seq >> 8),
                                          std::uint8_t(seq)};
        const ndm::DatagramSendResult r = sim.client()->send_datagram(d);
        if (!r.queued()) {
            std::fprintf(stderr, "datagram %u refused: %s\n", seq, std::string(ndm::datagram_status_name(r.status)).c_str());
            return 1;
        }
        sim.flush();
        sim.run_until(sim.now() + std::chrono::milliseconds(2));
        poll();
    }
    sim.run_until([&] { poll(); return acked + lost == count; }, sim.now() + std::chrono::seconds(10));
    const ndm::ConnectionStats st = sim.client()->stats(sim.now());
    std::printf("sent %u, the server received %zu; the transport told the client: %llu acknowledged, %llu lost; "
                "%llu packets retransmitted\n",
                count, received.size(), static_cast<unsigned long long>(acked), static_cast<unsigned long long>(lost),
                static_cast<unsigned long long>(st.packets_retransmitted));
    return acked + lost == count && received.size() >= acked ? 0 : 1;
}

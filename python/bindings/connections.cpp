// ndm.SimulatedPair: a client and a server Connection over a simulated path
// (ndm/sim.hpp's Simulator and SimpleLink, virtual time), with their stream
// calls - open, write, read, finish, reset_stream, stop_sending, priorities,
// key update - and their events as Python objects (StreamReset,
// StreamStopped, ...), so that stream cancellation and scheduling can be
// tried from Python as from C++ (docs/python.md, "Connections").
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "ndm/connection.hpp"
#include "ndm/sim.hpp"

namespace ndm::python {

namespace {

class SimulatedPair {
public:
    SimulatedPair(double delay, double rate, double loss, std::uint64_t seed, const std::string& cc,
                  std::uint64_t uni_streams) {
        check_range("delay", delay, 0, 10);
        check_range("rate", rate, 0, 1e12);
        check_range("loss", loss, 0, 1);
        check_range("uni_streams", static_cast<double>(uni_streams), 0, 1e6);
        sim::SimpleLinkConfig link;
        link.delay = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(delay));
        link.rate_bps = rate;
        link.loss = loss;
        link.seed = seed;
        sim::SimpleLinkConfig back = link;
        back.seed = seed + 1;
        sim_ = std::make_unique<sim::Simulator>(std::make_unique<sim::SimpleLink>(link),
                                                std::make_unique<sim::SimpleLink>(back));
        ConnectionConfig client, server;
        client.seed = seed;
        server.seed = seed + 1;
        client.cc = server.cc = cc;
        client.initial_max_streams_uni = server.initial_max_streams_uni = uni_streams;
        sim_->connect(client, server);  // std::invalid_argument (ValueError) for an unknown controller
    }

    // The connection of one side, its remembered timer forgotten (the
    // application may change it); throws when the server has not started.
    Connection& side(bool server) {
        Connection* c = server ? sim_->server() : sim_->client();
        if (!c) throw std::runtime_error("the server connection does not exist yet (run the pair first)");
        return *c;
    }
    [[nodiscard]] bool has_server() const { return sim_->server() != nullptr; }
    [[nodiscard]] Instant now() const { return sim_->now(); }

    void run(double seconds) {
        check_range("seconds", seconds, 0, 86400);
        (void)sim_->client();
        (void)sim_->server();
        sim_->flush();
        sim_->run_until(sim_->now() + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
    }

    bool run_until_established(double timeout) {
        check_range("timeout", timeout, 0, 86400);
        const Instant deadline =
            sim_->now() + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(timeout));
        return sim_->run_until(
            [&] {
                const Connection* s = sim_->server();
                return sim_->client()->is_established() && s && s->is_established();
            },
            deadline);
    }

private:
    std::unique_ptr<sim::Simulator> sim_;
};

// One side of a pair, as Python holds it (the pair stays alive with it).
struct Side {
    SimulatedPair* pair;
    bool server;
    Connection& c() const { return pair->side(server); }
};

py::object event_object(const Event& e) {
    return std::visit([](const auto& ev) { return py::cast(ev); }, e);
}

void bind_events(py::module_& m) {
    py::class_<event::Established>(m, "Established", "The handshake completed.")
        .def("__repr__", [](const event::Established&) { return std::string("Established()"); });
    py::class_<event::StreamOpened>(m, "StreamOpened", "The peer opened a stream.")
        .def_readonly("id", &event::StreamOpened::id)
        .def("__repr__", [](const event::StreamOpened& e) { return "StreamOpened(id=" + std::to_string(e.id) + ")"; });
    py::class_<event::StreamReadable>(m, "StreamReadable", "New in-order bytes or the FIN can be read.")
        .def_readonly("id", &event::StreamReadable::id)
        .def("__repr__",
             [](const event::StreamReadable& e) { return "StreamReadable(id=" + std::to_string(e.id) + ")"; });
    py::class_<event::StreamWritable>(m, "StreamWritable", "Send buffer or flow-control credit opened up.")
        .def_readonly("id", &event::StreamWritable::id)
        .def("__repr__",
             [](const event::StreamWritable& e) { return "StreamWritable(id=" + std::to_string(e.id) + ")"; });
    py::class_<event::StreamReset>(m, "StreamReset",
                                   "The peer abandoned its sending (RESET_STREAM, RFC 9000 §19.4): bytes not read "
                                   "are gone; final_size is how many it had sent.")
        .def_readonly("id", &event::StreamReset::id)
        .def_readonly("error_code", &event::StreamReset::error_code)
        .def_readonly("final_size", &event::StreamReset::final_size)
        .def("__repr__", [](const event::StreamReset& e) {
            return "StreamReset(id=" + std::to_string(e.id) + ", error_code=" + std::to_string(e.error_code) +
                   ", final_size=" + std::to_string(e.final_size) + ")";
        });
    py::class_<event::StreamStopped>(m, "StreamStopped",
                                     "The peer asked this side to stop sending (STOP_SENDING, RFC 9000 §19.5); "
                                     "the stream's sending was reset with the same code.")
        .def_readonly("id", &event::StreamStopped::id)
        .def_readonly("error_code", &event::StreamStopped::error_code)
        .def("__repr__", [](const event::StreamStopped& e) {
            return "StreamStopped(id=" + std::to_string(e.id) + ", error_code=" + std::to_string(e.error_code) + ")";
        });
    py::class_<event::Closed>(m, "Closed", "The connection ended.")
        .def_property_readonly("code", [](const event::Closed& e) { return e.info.code; })
        .def_property_readonly("reason", [](const event::Closed& e) { return e.info.reason; })
        .def_property_readonly("by_peer", [](const event::Closed& e) { return e.info.by_peer; })
        .def_property_readonly("application", [](const event::Closed& e) { return e.info.application; })
        .def("__repr__", [](const event::Closed& e) {
            return "Closed(code=" + std::to_string(e.info.code) + ", reason='" + e.info.reason + "')";
        });
    py::class_<event::PathValidation>(m, "PathValidation",
                                      "A path validation this side started ended (RFC 9000 §8.2): path is the "
                                      "path's number, validated whether a PATH_RESPONSE came in time.")
        .def_property_readonly("path", [](const event::PathValidation& e) { return e.path.id; })
        .def_readonly("validated", &event::PathValidation::validated)
        .def("__repr__", [](const event::PathValidation& e) {
            return "PathValidation(path=" + std::to_string(e.path.id) + ", validated=" +
                   (e.validated ? "True" : "False") + ")";
        });
    py::class_<event::PeerMigrated>(m, "PeerMigrated",
                                    "The peer's packets come from a new address (RFC 9000 §9.3): from and to "
                                    "are path numbers.")
        .def_property_readonly("from_path", [](const event::PeerMigrated& e) { return e.from.id; })
        .def_property_readonly("to_path", [](const event::PeerMigrated& e) { return e.to.id; })
        .def("__repr__", [](const event::PeerMigrated& e) {
            return "PeerMigrated(from_path=" + std::to_string(e.from.id) + ", to_path=" + std::to_string(e.to.id) +
                   ")";
        });
    py::class_<event::DatagramReceived>(m, "DatagramReceived", "Datagrams (RFC 9221) wait to be read.")
        .def("__repr__", [](const event::DatagramReceived&) { return std::string("DatagramReceived()"); });
    py::class_<event::DatagramsDropped>(m, "DatagramsDropped",
                                        "The receive queue of datagrams was full; its oldest were dropped.")
        .def("__repr__", [](const event::DatagramsDropped&) { return std::string("DatagramsDropped()"); });
    py::class_<event::DatagramAcked>(m, "DatagramAcked", "A datagram sent was acknowledged (RFC 9221 §5.2).")
        .def_readonly("id", &event::DatagramAcked::id)
        .def("__repr__", [](const event::DatagramAcked& e) { return "DatagramAcked(id=" + std::to_string(e.id) + ")"; });
    py::class_<event::DatagramLost>(m, "DatagramLost", "A datagram sent was declared lost; it is never resent.")
        .def_readonly("id", &event::DatagramLost::id)
        .def("__repr__", [](const event::DatagramLost& e) { return "DatagramLost(id=" + std::to_string(e.id) + ")"; });
    py::class_<event::SessionTicket>(m, "SessionTicket",
                                     "The server sent a session ticket (RFC 8446 §4.6.1): ticket is its serialized "
                                     "form (tls::ResumptionTicket), for a later connection to resume with.")
        .def_property_readonly("ticket",
                               [](const event::SessionTicket& e) {
                                   const auto b = e.ticket.serialize();
                                   return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
                               })
        .def("__repr__", [](const event::SessionTicket& e) {
            return "SessionTicket(server_name='" + e.ticket.server_name + "', alpn='" + e.ticket.alpn + "')";
        });
    py::class_<event::NewToken>(m, "NewToken", "The server sent a NEW_TOKEN token (RFC 9000 §8.1.3).")
        .def_property_readonly("token",
                               [](const event::NewToken& e) {
                                   return py::bytes(reinterpret_cast<const char*>(e.token.data()), e.token.size());
                               })
        .def("__repr__", [](const event::NewToken& e) {
            return "NewToken(" + std::to_string(e.token.size()) + " bytes)";
        });
}

void bind_side(py::module_& m) {
    py::class_<Side>(m, "Connection",
                     "One side of a SimulatedPair: ndm::Connection's stream calls (include/ndm/connection.hpp).")
        .def_property_readonly("established", [](const Side& s) { return s.c().is_established(); })
        .def("open_stream", [](const Side& s) { return s.c().open_stream(); },
             "A new bidirectional stream's ID, or None at the peer's stream limit.")
        .def("open_uni_stream", [](const Side& s) { return s.c().open_uni_stream(); })
        .def(
            "write",
            [](const Side& s, StreamId id, const py::bytes& data, bool fin) {
                const std::string v = data;
                return s.c().write(id, {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()}, fin);
            },
            py::arg("id"), py::arg("data"), py::arg("fin") = false, "Buffers bytes; returns how many were taken.")
        .def(
            "read",
            [](const Side& s, StreamId id, std::size_t max_bytes) {
                std::string out(max_bytes, '\0');
                const std::size_t n = s.c().read(id, {reinterpret_cast<std::uint8_t*>(out.data()), out.size()});
                out.resize(n);
                return py::bytes(out);
            },
            py::arg("id"), py::arg("max_bytes") = 65536)
        .def("finish", [](const Side& s, StreamId id) { s.c().finish(id); })
        .def("stream_finished", [](const Side& s, StreamId id) { return s.c().stream_finished(id); })
        .def("reset_stream", [](const Side& s, StreamId id, std::uint64_t code) { s.c().reset_stream(id, code); },
             py::arg("id"), py::arg("error_code"),
             "Abandons this side's sending with an application error code (RESET_STREAM).")
        .def("stop_sending", [](const Side& s, StreamId id, std::uint64_t code) { s.c().stop_sending(id, code); },
             py::arg("id"), py::arg("error_code"),
             "Abandons this side's reading and asks the peer to reset (STOP_SENDING).")
        .def(
            "set_stream_priority",
            [](const Side& s, StreamId id, unsigned urgency, bool incremental) {
                if (urgency > StreamPriority::kMaxUrgency)
                    throw std::invalid_argument("stream urgency " + std::to_string(urgency) + " is not 0..7");
                s.c().set_stream_priority(id, {static_cast<std::uint8_t>(urgency), incremental});
            },
            py::arg("id"), py::arg("urgency"), py::arg("incremental") = true,
            "Urgency 0 (first) .. 7 (last); incremental streams of one urgency share packets round robin.")
        .def("stream_priority",
             [](const Side& s, StreamId id) {
                 const StreamPriority p = s.c().stream_priority(id);
                 return py::make_tuple(static_cast<unsigned>(p.urgency), p.incremental);
             })
        .def("request_key_update", [](const Side& s) { return s.c().request_key_update(); },
             "Starts a 1-RTT key update (RFC 9001 §6); False when not allowed yet.")
        .def(
            "poll_events",
            [](const Side& s) {
                py::list out;
                while (auto e = s.c().poll_event()) out.append(event_object(*e));
                return out;
            },
            "The events raised since the last call, oldest first.")
        .def("stats", [](const Side& s) { return stats_dict(s.c().stats(s.pair->now())); });
}

}  // namespace

void bind_connections(py::module_& m) {
    bind_events(m);
    bind_side(m);
    py::class_<SimulatedPair>(m, "SimulatedPair",
                              "A client and a server connection over a simulated path in virtual time: delay "
                              "(seconds one way), rate (bit/s, 0 unlimited), loss (probability per datagram).")
        .def(py::init<double, double, double, std::uint64_t, const std::string&, std::uint64_t>(), py::kw_only(),
             py::arg("delay") = 0.01, py::arg("rate") = 0.0, py::arg("loss") = 0.0, py::arg("seed") = 1,
             py::arg("cc") = "cubic", py::arg("uni_streams") = 0)
        .def_property_readonly("client", [](SimulatedPair& p) { return Side{&p, false}; }, py::keep_alive<0, 1>())
        .def_property_readonly(
            "server",
            [](SimulatedPair& p) -> std::optional<Side> {
                if (!p.has_server()) return std::nullopt;
                return Side{&p, true};
            },
            py::keep_alive<0, 1>())
        .def_property_readonly("now", [](const SimulatedPair& p) { return to_seconds(p.now().time_since_epoch()); },
                               "Virtual seconds since the start.")
        .def("run", &SimulatedPair::run, py::arg("seconds"), "Advances virtual time, moving datagrams and timers.")
        .def("run_until_established", &SimulatedPair::run_until_established, py::arg("timeout") = 5.0);
}

}  // namespace ndm::python

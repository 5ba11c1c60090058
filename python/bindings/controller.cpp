// Controllers written in Python: a class derived from ndm.Controller,
// registered under a name with ndm.register_controller(), is created by the
// library's registry like any C++ controller and runs in the same virtual
// time (and over real sockets, slowly). Its events are the structs of
// include/ndm/cc.hpp with the same field names; instants and durations are
// integer nanoseconds.
#include <optional>
#include <string>
#include <utility>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "ndm/cc.hpp"

namespace ndm::python {

namespace {

thread_local py::error_already_set* kept_error = nullptr;

// The event structs as read-only Python objects with cc.hpp's field names.
void bind_events(py::module_& m) {
    using namespace cc;
#define NDM_RO(T, f) def_readonly(#f, &T::f)
#define NDM_TIME(T, f) def_property_readonly(#f, [](const T& e) { return ns(e.f); })
    py::class_<Params>(m, "Params", "What a controller is told when it is created (cc::Params).")
        .NDM_RO(Params, max_datagram_size)
        .NDM_TIME(Params, now);
    py::class_<PacketSent>(m, "PacketSent")
        .NDM_TIME(PacketSent, time)
        .NDM_RO(PacketSent, packet_number).NDM_RO(PacketSent, bytes).NDM_RO(PacketSent, bytes_in_flight)
        .NDM_RO(PacketSent, app_limited).NDM_RO(PacketSent, in_app_limited_phase);
    py::class_<PacketLost>(m, "PacketLost")
        .NDM_TIME(PacketLost, now).NDM_RO(PacketLost, packet_number).NDM_RO(PacketLost, bytes)
        .NDM_TIME(PacketLost, time_sent).NDM_RO(PacketLost, tx_in_flight).NDM_RO(PacketLost, lost)
        .NDM_RO(PacketLost, is_app_limited);
    py::class_<RateSample>(m, "RateSample")
        .NDM_RO(RateSample, valid).NDM_RO(RateSample, delivery_rate).NDM_TIME(RateSample, interval)
        .NDM_RO(RateSample, delivered).NDM_RO(RateSample, prior_delivered).NDM_RO(RateSample, total_delivered)
        .NDM_RO(RateSample, is_app_limited).NDM_TIME(RateSample, rtt).NDM_RO(RateSample, tx_in_flight)
        .NDM_RO(RateSample, lost).NDM_RO(RateSample, newly_acked).NDM_RO(RateSample, newly_lost);
    py::class_<AckEvent>(m, "AckEvent")
        .NDM_TIME(AckEvent, now).NDM_RO(AckEvent, bytes_acked).NDM_RO(AckEvent, packets_acked)
        .NDM_RO(AckEvent, has_rtt_sample).NDM_TIME(AckEvent, latest_rtt).NDM_TIME(AckEvent, smoothed_rtt)
        .NDM_TIME(AckEvent, rttvar).NDM_TIME(AckEvent, min_rtt).NDM_RO(AckEvent, prior_bytes_in_flight)
        .NDM_RO(AckEvent, bytes_in_flight).NDM_TIME(AckEvent, largest_acked_sent_time)
        .NDM_RO(AckEvent, app_limited).NDM_RO(AckEvent, rate);
    py::class_<CongestionEvent>(m, "CongestionEvent")
        .NDM_TIME(CongestionEvent, now).NDM_RO(CongestionEvent, bytes_lost).NDM_RO(CongestionEvent, packets_lost)
        .NDM_TIME(CongestionEvent, largest_lost_sent_time).NDM_RO(CongestionEvent, ecn_ce)
        .NDM_RO(CongestionEvent, bytes_in_flight).NDM_RO(CongestionEvent, persistent);
    py::class_<SpuriousEvent>(m, "SpuriousEvent").NDM_TIME(SpuriousEvent, now);
#undef NDM_RO
#undef NDM_TIME
}

// Which optional handlers a Python class overrides: the base class's are
// no-ops, so calls to them are skipped (on_packet_sent runs per packet).
struct Overrides {
    bool packet_sent = false, packet_lost = false, spurious = false, idle_restart = false;
};

// A cc::Controller whose every call goes to a Python object, with the GIL
// taken per call. cwnd(), ssthresh(), pacing_rate() and state() take no
// time argument, so their values change only through the event handlers:
// each is asked of Python once after an event, then served from a cache.
class PyController final : public cc::Controller {
public:
    PyController(py::object self, std::string name, Overrides o)
        : self_(std::move(self)), name_(std::move(name)), overrides_(o) {}
    ~PyController() override {
        py::gil_scoped_acquire gil;
        self_ = py::object();
    }

    void on_packet_sent(const cc::PacketSent& e) override {
        if (overrides_.packet_sent) event("on_packet_sent", e);
    }
    void on_packet_lost(const cc::PacketLost& e) override {
        if (overrides_.packet_lost) event("on_packet_lost", e);
    }
    void on_ack(const cc::AckEvent& e) override { event("on_ack", e); }
    void on_congestion_event(const cc::CongestionEvent& e) override { event("on_congestion_event", e); }
    void on_spurious_congestion(const cc::SpuriousEvent& e) override {
        if (overrides_.spurious) event("on_spurious_congestion", e);
    }
    void on_idle_restart(Instant now) override {
        if (overrides_.idle_restart) event("on_idle_restart", ns(now));
    }

    [[nodiscard]] std::uint64_t cwnd() const override { return refresh().cwnd; }
    [[nodiscard]] std::uint64_t ssthresh() const override { return refresh().ssthresh; }
    [[nodiscard]] std::optional<double> pacing_rate() const override { return refresh().pacing_rate; }
    [[nodiscard]] std::string_view state() const override { return refresh().state; }
    [[nodiscard]] std::string_view name() const override { return name_; }

private:
    struct Outputs {
        std::uint64_t cwnd = 0;
        std::uint64_t ssthresh = UINT64_MAX;
        std::optional<double> pacing_rate;
        std::string state;
    };

    template <typename E>
    void event(const char* method, const E& e) {
        py::gil_scoped_acquire gil;
        try {
            self_.attr(method)(e);
        } catch (py::error_already_set& err) {
            keep_python_error(std::move(err));
            throw PythonCallbackFailed{};
        }
        cache_.reset();
    }

    const Outputs& refresh() const {
        if (cache_) return *cache_;
        py::gil_scoped_acquire gil;
        try {
            Outputs o;
            o.cwnd = self_.attr("cwnd")().cast<std::uint64_t>();
            const py::object s = self_.attr("ssthresh")();
            if (!s.is_none()) o.ssthresh = s.cast<std::uint64_t>();
            const py::object rate = self_.attr("pacing_rate")();
            if (!rate.is_none()) o.pacing_rate = rate.cast<double>();
            o.state = self_.attr("state")().cast<std::string>();
            cache_ = std::move(o);
        } catch (py::error_already_set& err) {
            keep_python_error(std::move(err));
            throw PythonCallbackFailed{};
        } catch (const py::cast_error& err) {
            PyErr_SetString(PyExc_TypeError, ("controller " + name_ +
                                              ": cwnd() and ssthresh() must return a non-negative int, "
                                              "pacing_rate() a float or None, state() a str (" + err.what() + ")")
                                                 .c_str());
            keep_python_error(py::error_already_set());
            throw PythonCallbackFailed{};
        }
        return *cache_;
    }

    py::object self_;
    std::string name_;
    Overrides overrides_;
    mutable std::optional<Outputs> cache_;
};

Overrides overrides_of(const py::object& cls, const py::object& base) {
    auto differs = [&](const char* m) { return !cls.attr(m).is(base.attr(m)); };
    return {differs("on_packet_sent"), differs("on_packet_lost"), differs("on_spurious_congestion"),
            differs("on_idle_restart")};
}

}  // namespace

void keep_python_error(py::error_already_set&& e) {
    delete kept_error;
    kept_error = new py::error_already_set(std::move(e));
}

void raise_kept_python_error() {
    if (kept_error == nullptr) throw std::logic_error("a Python callback failed but left no error");
    py::error_already_set e = std::move(*kept_error);
    delete kept_error;
    kept_error = nullptr;
    throw e;
}

void bind_controllers(py::module_& m) {
    bind_events(m);
    // The class object is kept for the life of the process (the registry
    // outlives the interpreter, so it must never release it after that).
    m.def(
        "_register_controller",
        [](const std::string& name, const py::object& cls, const std::string& description, const py::object& base) {
            if (name.empty()) throw std::invalid_argument("a controller needs a name");
            const Overrides o = overrides_of(cls, base);
            PyObject* held = cls.inc_ref().ptr();
            cc::register_controller({name, description, [held, name, o](const cc::Params& p, const cc::Options& opts) {
                                         py::gil_scoped_acquire gil;
                                         try {
                                             py::dict options;
                                             for (const auto& [k, v] : opts) options[py::str(k)] = v;
                                             py::object self = py::handle(held)(p, options);
                                             return std::unique_ptr<cc::Controller>(
                                                 std::make_unique<PyController>(std::move(self), name, o));
                                         } catch (py::error_already_set& err) {
                                             keep_python_error(std::move(err));
                                             throw PythonCallbackFailed{};
                                         }
                                     }});
        },
        py::arg("name"), py::arg("cls"), py::arg("description"), py::arg("base"));
    m.def(
        "controllers",
        [] {
            py::dict out;
            for (const auto& c : cc::list()) out[py::str(c.name)] = c.description;
            return out;
        },
        "Every registered controller, name → description (ndm-compare --list-cc).");
}

}  // namespace ndm::python

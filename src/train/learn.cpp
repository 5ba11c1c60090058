#include "ndm/train.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "cc/ndm/engine.hpp"
#include "cc/ndm/ndm_controller.hpp"
#include "util/rng.hpp"

namespace ndm::train {

namespace nn = cc::ndm;
constexpr std::size_t kF = kFeatureCount;

std::vector<Sample> select(const Dataset& d, Split split, const SelectOptions& o) {
    std::vector<Sample> out;
    for (const auto& r : d.records) {
        if (r.split != split || r.persistent) continue;
        if (o.decisions_only && !r.decision) continue;
        if (!o.spurious && r.causes[kSpurious] > 0) continue;
        int y = r.label;
        if (!o.outage_congestive && r.causes[kOutage] > 0) {
            if (r.causes[kQueue] + r.causes[kAqm] > 0) y = 1;
            else continue;
        }
        Sample s;
        s.y = y;
        s.scenario = r.scenario;
        s.family = r.family;
        s.controller = r.controller;
        s.steps.reserve(r.rounds.size() + 1);
        auto conv = [](const FeatureVector& f) {
            Vec8 v{};
            for (std::size_t i = 0; i < kF; ++i) v[i] = f[i];
            return v;
        };
        for (const auto& f : r.rounds) s.steps.push_back(conv(f));
        s.steps.push_back(conv(r.at_loss));
        out.push_back(std::move(s));
    }
    if (o.max_per_scenario == 0) return out;
    // Even thinning within each scenario (records are in time order per scenario).
    std::map<std::uint32_t, std::size_t> count;
    for (const auto& s : out) ++count[s.scenario];
    std::map<std::uint32_t, std::size_t> seen;
    std::vector<Sample> kept;
    for (auto& s : out) {
        const std::size_t n = count[s.scenario];
        const std::size_t i = seen[s.scenario]++;
        // Keep i when it starts a new slot of n / max events.
        if (n <= o.max_per_scenario || (i * o.max_per_scenario) / n != ((i + 1) * o.max_per_scenario) / n)
            kept.push_back(std::move(s));
    }
    return kept;
}

Standardizer Standardizer::fit(const std::vector<Sample>& s) {
    Standardizer st;
    Vec8 sum{}, sq{};
    double n = 0;
    for (const auto& x : s)
        for (const auto& v : x.steps) {
            for (std::size_t i = 0; i < kF; ++i) {
                sum[i] += v[i];
                sq[i] += v[i] * v[i];
            }
            n += 1;
        }
    for (std::size_t i = 0; i < kF; ++i) {
        st.mean[i] = n > 0 ? sum[i] / n : 0;
        const double var = n > 0 ? sq[i] / n - st.mean[i] * st.mean[i] : 0;
        // A constant feature keeps scale 1 (its weight then stays inert).
        st.scale[i] = var > 1e-12 ? std::sqrt(var) : 1.0;
    }
    return st;
}

void Standardizer::apply(std::vector<Sample>& s) const {
    for (auto& x : s)
        for (auto& v : x.steps)
            for (std::size_t i = 0; i < kF; ++i) v[i] = (v[i] - mean[i]) / scale[i];
}

// ---------------------------------------------------------------- metrics

Metrics evaluate(const std::vector<double>& p, const std::vector<int>& y) {
    if (p.size() != y.size()) throw std::invalid_argument("evaluate: predictions and labels differ in size");
    Metrics m;
    m.n = p.size();
    if (m.n == 0) return m;
    std::vector<std::size_t> idx(m.n);
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return p[a] < p[b]; });
    // AUC = Mann–Whitney U / (n+ n−), average ranks for ties.
    double rank_sum = 0;
    for (std::size_t i = 0; i < m.n;) {
        std::size_t j = i;
        while (j < m.n && p[idx[j]] == p[idx[i]]) ++j;
        const double avg = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
        for (std::size_t k = i; k < j; ++k)
            if (y[idx[k]] == 1) rank_sum += avg;
        i = j;
    }
    for (const int v : y) m.positives += v == 1 ? 1 : 0;
    const double np = static_cast<double>(m.positives);
    const double nn_ = static_cast<double>(m.n - m.positives);
    m.auc = np > 0 && nn_ > 0 ? (rank_sum - np * (np + 1) / 2) / (np * nn_) : 0.5;
    std::array<double, 10> sum_p{}, sum_y{};
    for (std::size_t i = 0; i < m.n; ++i) {
        const bool pos = p[i] >= 0.5;
        if (pos && y[i] == 1) ++m.tp;
        else if (pos) ++m.fp;
        else if (y[i] == 1) ++m.fn;
        else ++m.tn;
        const double q = std::clamp(p[i], 1e-12, 1 - 1e-12);
        m.log_loss -= y[i] == 1 ? std::log(q) : std::log(1 - q);
        m.brier += (p[i] - y[i]) * (p[i] - y[i]);
        const auto b = std::min<std::size_t>(9, static_cast<std::size_t>(std::max(0.0, p[i]) * 10));
        ++m.bins[b].n;
        sum_p[b] += p[i];
        sum_y[b] += y[i];
    }
    const double n = static_cast<double>(m.n);
    m.accuracy = static_cast<double>(m.tp + m.tn) / n;
    m.log_loss /= n;
    m.brier /= n;
    for (std::size_t b = 0; b < 10; ++b) {
        auto& bin = m.bins[b];
        if (bin.n == 0) continue;
        bin.mean_p = sum_p[b] / static_cast<double>(bin.n);
        bin.frac_pos = sum_y[b] / static_cast<double>(bin.n);
        m.ece += static_cast<double>(bin.n) / n * std::abs(bin.mean_p - bin.frac_pos);
    }
    return m;
}

std::string format_metrics(const Metrics& m, bool bins) {
    std::string s = fmt::format(
        "n={} congestive={} ({:.1f} %)  accuracy={:.4f}  AUC={:.4f}  ECE={:.4f}  log-loss={:.4f}  Brier={:.4f}\n"
        "confusion at 0.5: TP={} FP={} TN={} FN={}  (true positive rate {:.3f}, false positive rate {:.3f})\n",
        m.n, m.positives, m.n ? 100.0 * static_cast<double>(m.positives) / static_cast<double>(m.n) : 0.0, m.accuracy,
        m.auc, m.ece, m.log_loss, m.brier, m.tp, m.fp, m.tn, m.fn,
        m.tp + m.fn ? static_cast<double>(m.tp) / static_cast<double>(m.tp + m.fn) : 0.0,
        m.fp + m.tn ? static_cast<double>(m.fp) / static_cast<double>(m.fp + m.tn) : 0.0);
    if (bins) {
        s += "reliability bins (P range: events, mean P, fraction congestive):\n";
        for (std::size_t b = 0; b < m.bins.size(); ++b) {
            const auto& x = m.bins[b];
            s += fmt::format("  [{:.1f}, {:.1f}{}: {:6}  {:.3f}  {:.3f}\n", 0.1 * static_cast<double>(b),
                             0.1 * static_cast<double>(b + 1), b == 9 ? "]" : ")", x.n, x.mean_p, x.frac_pos);
        }
    }
    return s;
}

std::string format_breakdown(const std::vector<double>& p, const std::vector<Sample>& s) {
    std::string out;
    for (const bool by_family : {true, false}) {
        std::map<std::string, std::pair<std::vector<double>, std::vector<int>>> groups;
        for (std::size_t i = 0; i < s.size(); ++i) {
            auto& g = groups[by_family ? s[i].family : s[i].controller];
            g.first.push_back(p[i]);
            g.second.push_back(s[i].y);
        }
        out += by_family ? "by scenario family:\n" : "by sender controller:\n";
        for (const auto& [name, g] : groups) {
            const auto m = evaluate(g.first, g.second);
            out += fmt::format("  {:<9} n={:6} congestive={:5.1f} %  accuracy={:.3f}  AUC={:.3f}  ECE={:.3f}  FPR={:.3f}  FNR={:.3f}\n",
                               name, m.n, 100.0 * static_cast<double>(m.positives) / static_cast<double>(m.n), m.accuracy,
                               m.auc, m.ece, m.fp + m.tn ? static_cast<double>(m.fp) / static_cast<double>(m.fp + m.tn) : 0.0,
                               m.tp + m.fn ? static_cast<double>(m.fn) / static_cast<double>(m.tp + m.fn) : 0.0);
        }
    }
    return out;
}

// ---------------------------------------------------------------- the network

namespace {

double sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

// BCE from the logit, stable for large |s|.
double bce(double s, int y) { return std::max(s, 0.0) - s * y + std::log1p(std::exp(-std::abs(s))); }

struct Offsets {
    std::size_t wih, whh, bih, bhh, v, c;
    explicit Offsets(std::size_t h) {
        wih = 0;
        whh = 3 * h * kF;
        bih = whh + 3 * h * h;
        bhh = bih + 3 * h;
        v = bhh + 3 * h;
        c = v + (h == 0 ? kF : h);
    }
};

struct StepCache {
    std::vector<double> h_prev, r, z, n, ghn;
};

// Runs the GRU over the steps; fills caches when given. Returns h_T.
std::vector<double> run_gru(const Net& net, const std::vector<Vec8>& steps, std::vector<StepCache>* caches) {
    const std::size_t H = net.hidden;
    const Offsets o(H);
    const double* t = net.theta.data();
    std::vector<double> h(H, 0.0), hn(H);
    if (caches) caches->resize(steps.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const Vec8& x = steps[s];
        StepCache local;
        StepCache& c = caches ? (*caches)[s] : local;
        c.h_prev = h;
        c.r.assign(H, 0);
        c.z.assign(H, 0);
        c.n.assign(H, 0);
        c.ghn.assign(H, 0);
        for (std::size_t j = 0; j < H; ++j) {
            double g[3];
            double gh[3];
            for (std::size_t k = 0; k < 3; ++k) {
                const std::size_t row = k * H + j;
                double a = t[o.bih + row];
                for (std::size_t f = 0; f < kF; ++f) a += t[o.wih + row * kF + f] * x[f];
                double b = t[o.bhh + row];
                for (std::size_t i = 0; i < H; ++i) b += t[o.whh + row * H + i] * h[i];
                g[k] = a;
                gh[k] = b;
            }
            c.r[j] = sigmoid(g[0] + gh[0]);
            c.z[j] = sigmoid(g[1] + gh[1]);
            c.ghn[j] = gh[2];
            c.n[j] = std::tanh(g[2] + c.r[j] * gh[2]);
            hn[j] = (1 - c.z[j]) * c.n[j] + c.z[j] * h[j];
        }
        h.swap(hn);
    }
    return h;
}

double logit(const Net& net, const std::vector<Vec8>& steps, std::vector<StepCache>* caches, std::vector<double>* hT) {
    const Offsets o(net.hidden);
    const double* t = net.theta.data();
    double s = t[o.c];
    if (net.hidden == 0) {
        const Vec8& x = steps.back();
        for (std::size_t f = 0; f < kF; ++f) s += t[o.v + f] * x[f];
        return s;
    }
    auto h = run_gru(net, steps, caches);
    for (std::size_t j = 0; j < net.hidden; ++j) s += t[o.v + j] * h[j];
    if (hT) *hT = std::move(h);
    return s;
}

}  // namespace

std::size_t Net::size() const {
    return hidden == 0 ? kF + 1 : 3 * hidden * kF + 3 * hidden * hidden + 6 * hidden + hidden + 1;
}

double Net::forward(const std::vector<Vec8>& steps) const {
    if (steps.empty()) throw std::invalid_argument("Net::forward: empty sequence");
    return sigmoid(logit(*this, steps, nullptr, nullptr));
}

double Net::backward(const std::vector<Vec8>& steps, int y, std::vector<double>& grad, double weight) const {
    const std::size_t H = hidden;
    const Offsets o(H);
    std::vector<StepCache> caches;
    std::vector<double> hT;
    const double s = logit(*this, steps, H ? &caches : nullptr, &hT);
    const double ds = weight * (sigmoid(s) - y);
    double* g = grad.data();
    const double* t = theta.data();
    g[o.c] += ds;
    if (H == 0) {
        for (std::size_t f = 0; f < kF; ++f) g[o.v + f] += ds * steps.back()[f];
        return weight * bce(s, y);
    }
    std::vector<double> dh(H), dprev(H);
    for (std::size_t j = 0; j < H; ++j) {
        g[o.v + j] += ds * hT[j];
        dh[j] = ds * t[o.v + j];
    }
    std::vector<double> da(3 * H), dgh(3 * H);  // d(input pre-activation), d(hidden pre-activation) per gate row
    for (std::size_t step = steps.size(); step-- > 0;) {
        const StepCache& c = caches[step];
        const Vec8& x = steps[step];
        for (std::size_t j = 0; j < H; ++j) {
            const double dn = dh[j] * (1 - c.z[j]);
            const double dz = dh[j] * (c.h_prev[j] - c.n[j]);
            dprev[j] = dh[j] * c.z[j];
            const double dan = dn * (1 - c.n[j] * c.n[j]);
            const double dr = dan * c.ghn[j];
            da[j] = dr * c.r[j] * (1 - c.r[j]);           // r: input and hidden share the pre-activation
            dgh[j] = da[j];
            da[H + j] = dz * c.z[j] * (1 - c.z[j]);       // z
            dgh[H + j] = da[H + j];
            da[2 * H + j] = dan;                          // n: input part
            dgh[2 * H + j] = dan * c.r[j];                // n: hidden part is gated by r
        }
        for (std::size_t row = 0; row < 3 * H; ++row) {
            g[o.bih + row] += da[row];
            g[o.bhh + row] += dgh[row];
            for (std::size_t f = 0; f < kF; ++f) g[o.wih + row * kF + f] += da[row] * x[f];
            for (std::size_t i = 0; i < H; ++i) {
                g[o.whh + row * H + i] += dgh[row] * c.h_prev[i];
                dprev[i] += t[o.whh + row * H + i] * dgh[row];
            }
        }
        dh.swap(dprev);
    }
    return weight * bce(s, y);
}

nn::Model Net::to_model(const Standardizer& st, const std::string& description) const {
    const Offsets o(hidden);
    nn::Model m;
    m.input_dim = kF;
    m.description = description;
    // Folds z = (x − μ)/σ into an input weight matrix W [rows][F] and bias b [rows].
    auto fold = [&](std::size_t rows, std::size_t w_at, std::size_t b_at, float* w_out, float* b_out) {
        for (std::size_t r = 0; r < rows; ++r) {
            double b = theta[b_at + r];
            for (std::size_t f = 0; f < kF; ++f) {
                const double w = theta[w_at + r * kF + f] / st.scale[f];
                w_out[r * kF + f] = static_cast<float>(w);
                b -= w * st.mean[f];
            }
            b_out[r] = static_cast<float>(b);
        }
    };
    nn::Layer head;
    head.kind = nn::LayerKind::dense;
    head.act = nn::Act::sigmoid;
    head.out = 1;
    if (hidden == 0) {
        head.in = kF;
        head.params.resize(kF + 1);
        fold(1, o.v, o.c, head.params.data(), head.params.data() + kF);
    } else {
        const auto H = static_cast<std::uint32_t>(hidden);
        nn::Layer gru;
        gru.kind = nn::LayerKind::gru;
        gru.in = kF;
        gru.out = H;
        gru.params.resize(nn::Layer::param_count(nn::LayerKind::gru, kF, H));
        float* p = gru.params.data();
        fold(3 * H, o.wih, o.bih, p + o.wih, p + o.bih);
        for (std::size_t i = o.whh; i < o.bih; ++i) p[i] = static_cast<float>(theta[i]);
        for (std::size_t i = o.bhh; i < o.v; ++i) p[i] = static_cast<float>(theta[i]);
        m.layers.push_back(std::move(gru));
        head.in = H;
        head.params.resize(H + 1);
        for (std::size_t j = 0; j < H; ++j) head.params[j] = static_cast<float>(theta[o.v + j]);
        head.params[H] = static_cast<float>(theta[o.c]);
    }
    m.layers.push_back(std::move(head));
    m.validate();
    return m;
}

Net Net::from_model(const nn::Model& m) {
    auto bad = [] { throw std::invalid_argument("model is not a GRU + dense sigmoid (or dense sigmoid) with 8 inputs and 1 output"); };
    if (m.input_dim != kF || m.output_dim() != 1) bad();
    Net net;
    const nn::Layer& head = m.layers.back();
    if (head.kind != nn::LayerKind::dense || head.act != nn::Act::sigmoid) bad();
    if (m.layers.size() == 1) {
        net.hidden = 0;
    } else if (m.layers.size() == 2 && m.layers[0].kind == nn::LayerKind::gru) {
        net.hidden = m.layers[0].out;
    } else {
        bad();
    }
    net.theta.assign(net.size(), 0.0);
    const Offsets o(net.hidden);
    std::size_t at = 0;
    if (net.hidden > 0)
        for (const float x : m.layers[0].params) net.theta[at++] = x;
    for (const float x : head.params) net.theta[at++] = x;
    (void)o;
    return net;
}

// ---------------------------------------------------------------- training

namespace {
constexpr const char* kFeatureNames[kF] = {"q_now", "q_p50", "q_p90", "slope", "entropy", "loss_rate", "rate_ratio", "loss_run"};
}  // namespace

const char* feature_name(std::size_t f) { return f < kF ? kFeatureNames[f] : "?"; }

std::uint32_t parse_input_mask(const std::string& names) {
    if (names == "all") return (1U << kF) - 1;
    std::uint32_t mask = 0;
    std::size_t at = 0;
    while (at <= names.size()) {
        const std::size_t end = std::min(names.find(',', at), names.size());
        const std::string name = names.substr(at, end - at);
        std::size_t f = 0;
        while (f < kF && name != kFeatureNames[f]) ++f;
        if (f == kF)
            throw std::invalid_argument(fmt::format("unknown feature \"{}\" (q_now, q_p50, q_p90, slope, entropy, "
                                                    "loss_rate, rate_ratio, loss_run or all)", name));
        mask |= 1U << f;
        at = end + 1;
    }
    return mask;
}

std::string format_input_mask(std::uint32_t mask) {
    if (mask == (1U << kF) - 1) return "all";
    std::string s;
    for (std::size_t f = 0; f < kF; ++f)
        if (mask & (1U << f)) s += (s.empty() ? "" : ",") + std::string(kFeatureNames[f]);
    return s;
}

namespace {

double mean_loss(const Net& net, const std::vector<Sample>& s, double pos_weight) {
    double sum = 0;
    for (const auto& x : s) sum += (x.y == 1 ? pos_weight : 1.0) * bce(logit(net, x.steps, nullptr, nullptr), x.y);
    return s.empty() ? 0 : sum / static_cast<double>(s.size());
}

}  // namespace

Net train_net(const std::vector<Sample>& train, const std::vector<Sample>& val, const TrainOptions& opt,
              TrainReport& report, const std::function<void(const std::string&)>& log) {
    if (train.empty()) throw std::invalid_argument("train: no training examples");
    if (opt.hidden > nn::NdmController::kMaxState)
        throw std::invalid_argument("train: hidden size above the controller's limit");
    Net net;
    net.hidden = opt.hidden;
    net.theta.assign(net.size(), 0.0);
    util::Xoshiro256 rng(opt.seed);
    const Offsets o(opt.hidden);
    if (opt.hidden > 0) {
        // PyTorch's GRU initialisation, U(−1/√H, 1/√H), for every parameter.
        const double k = 1 / std::sqrt(static_cast<double>(opt.hidden));
        for (auto& w : net.theta) w = (2 * rng.uniform() - 1) * k;
        net.theta[o.c] = 0;
    }
    // Masked features: their input weights start and stay at 0.
    std::vector<char> pinned(net.size(), 0);
    for (std::size_t f = 0; f < kF; ++f) {
        if (opt.input_mask & (1U << f)) continue;
        if (opt.hidden == 0) pinned[o.v + f] = 1;
        else
            for (std::size_t row = 0; row < 3 * opt.hidden; ++row) pinned[o.wih + row * kF + f] = 1;
    }
    for (std::size_t k = 0; k < net.size(); ++k)
        if (pinned[k]) net.theta[k] = 0;
    // L2 applies to weights, not biases.
    std::vector<char> decay(net.size(), 0);
    if (opt.hidden > 0) {
        std::fill(decay.begin() + static_cast<std::ptrdiff_t>(o.wih), decay.begin() + static_cast<std::ptrdiff_t>(o.bih), 1);
        std::fill(decay.begin() + static_cast<std::ptrdiff_t>(o.v), decay.begin() + static_cast<std::ptrdiff_t>(o.c), 1);
    } else {
        std::fill(decay.begin(), decay.begin() + static_cast<std::ptrdiff_t>(kF), 1);
    }

    // Adam (Kingma & Ba 2015).
    constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;
    std::vector<double> m1(net.size(), 0), m2(net.size(), 0), grad(net.size());
    std::uint64_t step = 0;
    std::vector<std::size_t> order(train.size());
    std::iota(order.begin(), order.end(), 0);
    Net best = net;
    report.best_val_loss = val.empty() ? mean_loss(net, train, opt.pos_weight) : mean_loss(net, val, opt.pos_weight);
    report.best_epoch = 0;
    std::size_t since_best = 0;
    for (std::size_t epoch = 1; epoch <= opt.max_epochs; ++epoch) {
        for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
        double train_loss = 0;
        for (std::size_t b = 0; b < order.size(); b += opt.batch) {
            const std::size_t e = std::min(order.size(), b + opt.batch);
            std::fill(grad.begin(), grad.end(), 0.0);
            for (std::size_t i = b; i < e; ++i) {
                const auto& ex = train[order[i]];
                train_loss += net.backward(ex.steps, ex.y, grad, ex.y == 1 ? opt.pos_weight : 1.0);
            }
            const double scale = 1.0 / static_cast<double>(e - b);
            ++step;
            const double c1 = 1 - std::pow(kB1, static_cast<double>(step));
            const double c2 = 1 - std::pow(kB2, static_cast<double>(step));
            for (std::size_t k = 0; k < net.size(); ++k) {
                if (pinned[k]) continue;
                const double gk = grad[k] * scale + (decay[k] ? opt.l2 * net.theta[k] : 0.0);
                m1[k] = kB1 * m1[k] + (1 - kB1) * gk;
                m2[k] = kB2 * m2[k] + (1 - kB2) * gk * gk;
                net.theta[k] -= opt.learning_rate * (m1[k] / c1) / (std::sqrt(m2[k] / c2) + kEps);
            }
        }
        train_loss /= static_cast<double>(order.size());
        const double vl = val.empty() ? mean_loss(net, train, opt.pos_weight) : mean_loss(net, val, opt.pos_weight);
        report.epochs = epoch;
        const bool better = vl < report.best_val_loss - 1e-6;
        if (better) {
            report.best_val_loss = vl;
            report.best_epoch = epoch;
            best = net;
            since_best = 0;
        } else {
            ++since_best;
        }
        if (log) log(fmt::format("epoch {:3}: train loss {:.5f}  validation loss {:.5f}{}", epoch, train_loss, vl, better ? "  *" : ""));
        if (since_best >= opt.patience) break;
    }
    return best;
}

std::vector<double> predict(const Net& net, const std::vector<Sample>& s) {
    std::vector<double> p;
    p.reserve(s.size());
    for (const auto& x : s) p.push_back(net.forward(x.steps));
    return p;
}

std::vector<double> predict(const nn::Model& m, const std::vector<Sample>& s, std::string_view simd) {
    const auto& k = nn::kernels_named(simd);
    std::vector<float> scratch(nn::scratch_floats(m, 1));
    std::vector<float> h(m.state_dim()), look(m.state_dim());
    std::array<float, kF> x{};
    std::vector<double> out;
    out.reserve(s.size());
    for (const auto& e : s) {
        std::fill(h.begin(), h.end(), 0.0F);
        float y = 0;
        for (std::size_t i = 0; i < e.steps.size(); ++i) {
            for (std::size_t f = 0; f < kF; ++f) x[f] = static_cast<float>(e.steps[i][f]);
            const bool last = i + 1 == e.steps.size();
            // Rounds commit the state; the at-loss step runs on a copy, as in the controller.
            if (last) look = h;
            nn::infer(k, m, nn::BatchView{1, 1, x.data(), last ? look.data() : h.data(), &y}, scratch);
        }
        out.push_back(y);
    }
    return out;
}

std::vector<int> labels(const std::vector<Sample>& s) {
    std::vector<int> y;
    y.reserve(s.size());
    for (const auto& x : s) y.push_back(x.y);
    return y;
}

}  // namespace ndm::train

namespace ndm::train {

FitResult fit(const Dataset& d, const TrainOptions& t, const SelectOptions& s,
              const std::function<void(const std::string&)>& log) {
    FitResult r;
    auto train = select(d, Split::train, s);
    SelectOptions all = s;
    all.max_per_scenario = 0;
    auto val = select(d, Split::val, all);
    auto test = select(d, Split::test, all);
    r.n_train = train.size();
    r.standardizer = Standardizer::fit(train);
    r.standardizer.apply(train);
    r.standardizer.apply(val);
    r.standardizer.apply(test);
    r.net = train_net(train, val, t, r.report, log);
    r.val = evaluate(predict(r.net, val), labels(val));
    const auto pt = predict(r.net, test);
    r.test = evaluate(pt, labels(test));
    r.test_breakdown = format_breakdown(pt, test);
    return r;
}

}  // namespace ndm::train

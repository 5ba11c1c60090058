#include "emu/delay_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ndm::emu {

double inverse_normal_cdf(double p) {
    static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                   1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                   6.680131188771972e+01,  -1.328068155288572e+01};
    static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                   -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                   3.754408661907416e+00};
    p = std::clamp(p, 1e-300, 1 - 1e-16);
    double x;
    if (p < 0.02425) {
        const double q = std::sqrt(-2 * std::log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    } else if (p <= 1 - 0.02425) {
        const double q = p - 0.5;
        const double r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    } else {
        const double q = std::sqrt(-2 * std::log1p(-p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    // Halley step on erfc for full double precision.
    const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
    const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

namespace {
constexpr double kClip = 32767.0 / 8192.0;  // netem's int16 table range in σ units

double pareto_std(Rng& rng) {
    // Pareto(x_m = 1, a = 3): mean 1.5, σ = √3/2; standardized to mean 0, σ 1.
    const double x = std::pow(1.0 - rng.uniform(), -1.0 / 3.0);
    return (x - 1.5) / (std::sqrt(3.0) / 2);
}
}  // namespace

double sample_jitter(Distribution distribution, Rng& rng) {
    double v = 0;
    switch (distribution) {
        case Distribution::uniform:
            return 2 * rng.uniform() - 1;  // netem without a table: U[d−J, d+J)
        case Distribution::normal:
            v = inverse_normal_cdf(rng.uniform());
            break;
        case Distribution::pareto:
            v = pareto_std(rng);
            break;
        case Distribution::paretonormal:
            // netem's paretonormal.c mixes 0.25·normal + 0.75·pareto.
            v = 0.25 * inverse_normal_cdf(rng.uniform());
            v += 0.75 * pareto_std(rng);
            break;
    }
    return std::clamp(v, -kClip, kClip);
}

void validate(const DelayConfig& c) {
    if (c.delay < Duration::zero()) throw std::invalid_argument("delay must be >= 0");
    if (c.jitter < Duration::zero()) throw std::invalid_argument("jitter must be >= 0");
    if (!(c.reorder >= 0 && c.reorder <= 1)) throw std::invalid_argument("reorder must be in [0, 1]");
    if (c.gap == 0) throw std::invalid_argument("gap must be >= 1");
    if (c.reorder > 0 && c.delay == Duration::zero())
        throw std::invalid_argument("reorder needs a delay (netem: reordering not possible without some delay)");
}

DelayModel::DelayModel(const DelayConfig& config, Rng jitter, Rng reorder)
    : config_(config), jitter_(jitter), reorder_(reorder), jitter_on_(config.jitter > Duration::zero()) {
    validate(config_);
}

DelayModel::Decision DelayModel::schedule(Instant now) {
    // netem: once gap−1 packets were delayed, the next may go at once (queue head).
    if (config_.reorder > 0) {
        if (counter_ + 1 >= config_.gap && reorder_.chance(config_.reorder)) {
            counter_ = 0;
            return {now, true};
        }
        ++counter_;
    }
    Duration d = config_.delay;
    if (jitter_on_) {
        const double j = sample_jitter(config_.distribution, jitter_) * static_cast<double>(config_.jitter.count());
        d += Duration(static_cast<Duration::rep>(std::floor(j)));
        d = std::max(d, Duration::zero());  // netem: a negative delay leaves at once
    }
    Instant at = now + d;
    if (config_.ordering == Ordering::in_order) {
        at = std::max(at, last_);  // t = max(t_prev, now + delay) (docs/emulator.md R3)
        last_ = at;
    }
    return {at, false};
}

}  // namespace ndm::emu

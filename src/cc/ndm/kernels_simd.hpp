// The loop structure every SIMD kernel shares, written once over a small
// vector-traits struct V (kernels.hpp explains the batch layout). An ISA file
// (kernels_{sse42,avx2,avx512,neon}.cpp) defines NDM_SIMD_TARGET (its
// __attribute__((target(...))) or nothing), then V, then includes this file
// inside its anonymous namespace. V provides, for a vector type V::reg of
// V::kLanes floats:
//   set1, zero, load, store, load_part(p, rem), store_part(p, rem, v) (lanes
//   [0, rem), rem < kLanes; load_part zero-fills), add, sub, mul, min, max,
//   fma(a, b, c) = a·b + c (fused or not: the ISA's choice), fnma(a, b, c) =
//   c − a·b, round (to nearest), ldexp(p, n) = p·2^n for integral n in
//   [−126, 127], recip(d) ≈ 1/d to ~23 bits.
// Everything else — activations, register blocking, the GRU cell update —
// is here, so the ISAs differ only in those primitives.
//
// Not a normal header: no include guard and no includes; the ISA file
// includes kernels.hpp and <cstddef> first.

// The small fixed loops over rows, gates and vectors must be unrolled, or
// their register arrays live on the stack (GCC -O2 does not do it alone).
#define NDM_UNROLL _Pragma("GCC unroll 8")

template <typename V>
struct SimdKernels {
    using R = typename V::reg;
    static constexpr std::size_t L = V::kLanes;

    // e^x: Cephes expf (range reduction by ln 2 in two parts, degree-7
    // polynomial), max relative error ~2 ulp on [−87.3, 88.3].
    NDM_SIMD_TARGET static inline R exp(R x) {
        x = V::min(V::max(x, V::set1(-87.3F)), V::set1(88.3F));
        const R n = V::round(V::mul(x, V::set1(1.44269504088896341F)));
        R r = V::fnma(n, V::set1(0.693359375F), x);
        r = V::fnma(n, V::set1(-2.12194440e-4F), r);
        R p = V::set1(1.9875691500e-4F);
        p = V::fma(p, r, V::set1(1.3981999507e-3F));
        p = V::fma(p, r, V::set1(8.3334519073e-3F));
        p = V::fma(p, r, V::set1(4.1665795894e-2F));
        p = V::fma(p, r, V::set1(1.6666665459e-1F));
        p = V::fma(p, r, V::set1(5.0000001201e-1F));
        p = V::fma(p, V::mul(r, r), V::add(r, V::set1(1.0F)));
        return V::ldexp(p, n);
    }

    NDM_SIMD_TARGET static inline R sigmoid(R x) {
        return V::recip(V::add(V::set1(1.0F), exp(V::sub(V::zero(), x))));
    }

    // tanh as the rational function x·P(x²)/Q(x²) (degrees 13/6) on x clamped
    // to ±7.905 (Eigen's ptanh_float coefficients): max relative error 2.6e-7
    // against libm, and half the work of an exp-based form.
    NDM_SIMD_TARGET static inline R tanh(R x) {
        const R lim = V::set1(7.90531110763549805F);
        x = V::min(V::max(x, V::sub(V::zero(), lim)), lim);
        const R x2 = V::mul(x, x);
        R p = V::set1(-2.76076847742355e-16F);
        p = V::fma(p, x2, V::set1(2.00018790482477e-13F));
        p = V::fma(p, x2, V::set1(-8.60467152213735e-11F));
        p = V::fma(p, x2, V::set1(5.12229709037114e-08F));
        p = V::fma(p, x2, V::set1(1.48572235717979e-05F));
        p = V::fma(p, x2, V::set1(6.37261928875436e-04F));
        p = V::fma(p, x2, V::set1(4.89352455891786e-03F));
        R q = V::set1(1.19825839466702e-06F);
        q = V::fma(q, x2, V::set1(1.18534705686654e-04F));
        q = V::fma(q, x2, V::set1(2.26843463243900e-03F));
        q = V::fma(q, x2, V::set1(4.89352518554385e-03F));
        return V::mul(V::mul(p, x), V::recip(q));
    }

    NDM_SIMD_TARGET static inline R activate(Act act, R v) {
        switch (act) {
            case Act::sigmoid: return sigmoid(v);
            case Act::tanh: return tanh(v);
            case Act::relu: return V::max(v, V::zero());
            case Act::linear: break;
        }
        return v;
    }

    // Loads of a full vector, or of the tail's rem lanes (rem < L) zero-filled.
    NDM_SIMD_TARGET static inline R ld(const float* p, std::size_t rem) {
        return rem == L ? V::load(p) : V::load_part(p, rem);
    }
    NDM_SIMD_TARGET static inline void st(float* p, std::size_t rem, R v) {
        if (rem == L) {
            V::store(p, v);
        } else {
            V::store_part(p, rem, v);
        }
    }

    // y[o][i] = act(b[o] + Σ_k w[o·in + k]·x[k][i]), k increasing.
    NDM_SIMD_TARGET static void dense(const float* w, const float* b, std::size_t in, std::size_t out, Act act,
                                      const float* x, std::size_t xs, float* y, std::size_t ys, std::size_t n) {
        std::size_t i = 0;
        // 4 output rows × 2 vectors: each x load feeds 4 FMAs and each weight
        // broadcast 2, so the loop is bound by FMA throughput, not loads.
        for (; i + 2 * L <= n; i += 2 * L) {
            std::size_t o = 0;
            for (; o + 4 <= out; o += 4) {
                const float* w0 = w + o * in;
                R a[4][2];
                NDM_UNROLL for (int r = 0; r < 4; ++r) a[r][0] = a[r][1] = V::set1(b[o + r]);
                for (std::size_t k = 0; k < in; ++k) {
                    const R x0 = V::load(x + k * xs + i);
                    const R x1 = V::load(x + k * xs + i + L);
                    NDM_UNROLL for (std::size_t r = 0; r < 4; ++r) {
                        const R c = V::set1(w0[r * in + k]);
                        a[r][0] = V::fma(c, x0, a[r][0]);
                        a[r][1] = V::fma(c, x1, a[r][1]);
                    }
                }
                NDM_UNROLL for (std::size_t r = 0; r < 4; ++r) {
                    V::store(y + (o + r) * ys + i, activate(act, a[r][0]));
                    V::store(y + (o + r) * ys + i + L, activate(act, a[r][1]));
                }
            }
            for (; o < out; ++o) {
                const float* wo = w + o * in;
                R a0 = V::set1(b[o]);
                R a1 = a0;
                for (std::size_t k = 0; k < in; ++k) {
                    const R c = V::set1(wo[k]);
                    a0 = V::fma(c, V::load(x + k * xs + i), a0);
                    a1 = V::fma(c, V::load(x + k * xs + i + L), a1);
                }
                V::store(y + o * ys + i, activate(act, a0));
                V::store(y + o * ys + i + L, activate(act, a1));
            }
        }
        // One vector at a time, the last one partial.
        for (; i < n; i += L) {
            const std::size_t rem = n - i < L ? n - i : L;
            for (std::size_t o = 0; o < out; ++o) {
                const float* wo = w + o * in;
                R a = V::set1(b[o]);
                for (std::size_t k = 0; k < in; ++k) a = V::fma(V::set1(wo[k]), ld(x + k * xs + i, rem), a);
                st(y + o * ys + i, rem, activate(act, a));
            }
        }
    }

    // The GRU cell update (kernels.hpp) for the lanes at offset i of unit j.
    // The gates use σ(x) = ½ + ½·tanh(x/2): a quarter cheaper than the
    // exp-based σ, and its absolute error (≤ 2e-7) is what a gate's error
    // contributes to the state (a small σ loses relative accuracy, which is
    // why dense layers keep the exp form for their outputs).
    NDM_SIMD_TARGET static inline R gate(R x) {
        const R half = V::set1(0.5F);
        return V::fma(half, tanh(V::mul(half, x)), half);
    }

    NDM_SIMD_TARGET static inline R gru_lanes(R ir, R hr, R iz, R hz, R in, R hn, R h) {
        const R r = gate(V::add(ir, hr));
        const R z = gate(V::add(iz, hz));
        const R c = tanh(V::fma(r, hn, in));
        // (1 − z)·c + z·h = c + z·(h − c)
        return V::fma(z, V::sub(h, c), c);
    }

    NDM_SIMD_TARGET static void gru(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
                                    std::size_t hs, std::size_t n) {
        for (std::size_t j = 0; j < hidden; ++j) {
            const auto [ir, iz, in, hr, hz, hn, hj] = gru_unit_rows(gi, gh, s, hidden, h, hs, j);
            std::size_t i = 0;
            for (; i + L <= n; i += L) {
                V::store(hj + i, gru_lanes(V::load(ir + i), V::load(hr + i), V::load(iz + i), V::load(hz + i),
                                           V::load(in + i), V::load(hn + i), V::load(hj + i)));
            }
            if (i < n) {
                const std::size_t rem = n - i;
                V::store_part(hj + i, rem,
                              gru_lanes(V::load_part(ir + i, rem), V::load_part(hr + i, rem),
                                        V::load_part(iz + i, rem), V::load_part(hz + i, rem),
                                        V::load_part(in + i, rem), V::load_part(hn + i, rem),
                                        V::load_part(hj + i, rem)));
            }
        }
    }

    static constexpr Kernels table(Simd simd, std::string_view name) { return {simd, name, dense, gru}; }
};

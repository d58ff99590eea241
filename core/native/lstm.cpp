// The LSTM row's time loops of core/kernels/lstm.py (_lstm_forward, _lstm_backward), compiled.
// Per step: one GEMM through ATen into the preallocated buffers; forward, ATen's sigmoid and tanh on the same
// views as the Python loops, the products in loops over B x H; backward, one fused loop over B x H. Every
// operation rounds as its torch counterpart in the Python loops, so the two agree to the last bit where the
// Python loops' vectorised torch ops do (tests/core/test_native_lstm.py). Same buffers, same layout, same
// formulas as the Python loops: engine gate order o, i, f, g; xh rows [1, x, h]; see core/kernels/lstm.py.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/extension.h>

#include <cmath>
#include <optional>
#include <vector>

namespace {

// a (1 - w), as torch.lerp(a, 0, w) computes it in the Python loops (ATen's vectorised lerp, one rounding):
// for a saturated gate w near 1, a - w a would cancel (and lose the digits the gradient has left);
// 1 - w is exact for w >= 1/2.
// Both forms are computed and one is picked (a select, not a branch: the loops over H vectorise).
template <typename T>
inline T times_one_minus(T a, T w) {
  const T below_half = std::fma(w, -a, a), from_half = (w - T(1)) * -a;
  return w < T(0.5) ? below_half : from_half;
}

// The cell update of one batch row, H units, between the gates and tanh c_t; each array is a separate
// restrict argument, which lets GCC vectorise the loop. i, f, g: the gates; cp = c_{t-1}; -> ig = i ⊙ g, c = c_t.
template <typename T>
void cell_row(const T* __restrict__ i, const T* __restrict__ f, const T* __restrict__ g,
              const T* __restrict__ cp, T* __restrict__ ig, T* __restrict__ c, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    ig[j] = i[j] * g[j];
    c[j] = std::fma(f[j], cp[j], ig[j]);   // as torch.addcmul: one rounding
  }
}

template <typename T>
void output_row(const T* __restrict__ o, const T* __restrict__ tc, T* __restrict__ h, int64_t H) {
  for (int64_t j = 0; j < H; ++j) h[j] = o[j] * tc[j];
}

// The gradients of one batch row, H units. dh = ∂L/∂h_t (direct + recurrent part); carry: what enters
// ∂L/∂c_t from outside, times s (f_{t+1} ⊙ ∂L/∂c_{t+1}, or the gradient into the final c), or null.
// o, i, f, g, h, cp = c_{t-1}, ig, tc: what the forward stored.
// -> dc = ∂L/∂c_t; d_o, d_i, d_f, d_g = ∂L/∂(pre-activations); fdc = f ⊙ ∂L/∂c_t (the next step's carry).
// Rounding as in the Python loops' torch ops: addcmul, add(alpha=) and lerp round once (an FMA), mul once.
// Carry::none: dc = dh kc; fused: dc = dh kc + carry in one rounding (addcmul, an unscaled carry from step t+1);
// scaled: dh kc is rounded first and s carry added in one more (add with alpha; s = 1 for the gradient into the
// final c). A template argument, not a test in the loop: the loop stays branch-free and vectorises.
enum class Carry { none, fused, scaled };

template <typename T, Carry kind>
void backward_row(const T* __restrict__ dh, const T* __restrict__ carry, T s, const T* __restrict__ o,
                  const T* __restrict__ i, const T* __restrict__ f, const T* __restrict__ g,
                  const T* __restrict__ h, const T* __restrict__ cp, const T* __restrict__ ig,
                  const T* __restrict__ tc, T* __restrict__ dc, T* __restrict__ d_o, T* __restrict__ d_i,
                  T* __restrict__ d_f, T* __restrict__ d_g, T* __restrict__ fdc, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T kc = std::fma(-h[j], tc[j], o[j]);                   // ∂h/∂c = o (1 - tanh² c)
    T dcj;
    if constexpr (kind == Carry::none) dcj = dh[j] * kc;
    else if constexpr (kind == Carry::fused) dcj = std::fma(dh[j], kc, carry[j]);
    else dcj = std::fma(s, carry[j], dh[j] * kc);
    dc[j] = dcj;
    d_o[j] = dh[j] * times_one_minus(h[j], o[j]);                // tanh(c) o (1 - o) = h (1 - o)
    d_i[j] = dcj * times_one_minus(ig[j], i[j]);                 // g i (1 - i)
    d_f[j] = dcj * (times_one_minus(cp[j], f[j]) * f[j]);        // c_{t-1} f (1 - f)
    d_g[j] = dcj * std::fma(-ig[j], g[j], i[j]);                 // i (1 - g²)
    fdc[j] = dcj * f[j];
  }
}

// x (M, K) @ Wᵀ by oneDNN, W (N, K) packed once per optimizer step by mkldnn::_reorder_linear_weight -> (M, N).
// The same op as the Python loops' _packed_linear (core/kernels/lstm.py), so the same bits.
at::Tensor packed_linear(const at::Tensor& x, const at::Tensor& packed) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("mkldnn::_linear_pointwise", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                         c10::string_view, c10::List<std::optional<at::Scalar>>,
                                         std::optional<c10::string_view>)>();
  return op.call(x, packed, std::nullopt, "none", c10::List<std::optional<at::Scalar>>(), std::nullopt);
}

void check(const at::Tensor& t, const at::Tensor& like, const char* name) {
  TORCH_CHECK(t.is_contiguous() && t.scalar_type() == like.scalar_type() && t.device().is_cpu(),
              name, ": expected a contiguous CPU tensor of the row's dtype");
}

// Forward time loop. xh (T+1, B, 1+I+H) holds [1, x] in its x rows and h0, c_buf (T+1, B, H) c0, at the
// initial state's row; wct (1+I+H, 4H) = [b, W_ih, W_hh]ᵀ in gate order o, i, f, g.
// -> gates (T, B, 4H), ig = i ⊙ g and tc = tanh c_t (T, B, H); h_t, c_t into their rows of xh, c_buf.
// A forward row's step t reads row t and writes row t+1; a reverse row's reads row t+1 and writes row t.
void lstm_forward(at::Tensor xh, at::Tensor c_buf, at::Tensor wct, at::Tensor gates, at::Tensor ig,
                  at::Tensor tc, bool reverse, std::optional<at::Tensor> packed) {
  for (auto* t : {&xh, &c_buf, &wct, &gates, &ig, &tc}) check(*t, xh, "lstm_forward");
  const int64_t T = gates.size(0), B = gates.size(1), H = tc.size(2), K = xh.size(2);
  AT_DISPATCH_FLOATING_TYPES(xh.scalar_type(), "lstm_forward", [&] {
    scalar_t *pxh = xh.data_ptr<scalar_t>(), *pc = c_buf.data_ptr<scalar_t>();
    scalar_t *pg = gates.data_ptr<scalar_t>(), *pig = ig.data_ptr<scalar_t>(), *ptc = tc.data_ptr<scalar_t>();
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = reverse ? T - 1 - k : k, cur = reverse ? t : t + 1, prv = reverse ? t + 1 : t;
      at::Tensor a = gates.select(0, t);                                      // (B, 4H)
      if (packed)
        a.copy_(packed_linear(xh.select(0, prv), *packed));
      else
        at::mm_out(a, xh.select(0, prv), wct);
      // sigmoid and tanh: ATen's kernels on the same views as the Python loops, so the same bits (a chaotic
      // run amplifies one ulp of exp into a different trajectory); the products are single roundings in both.
      a.narrow(1, 0, 3 * H).sigmoid_();
      a.narrow(1, 3 * H, H).tanh_();
      const scalar_t *cp = pc + prv * B * H, *o = pg + t * B * 4 * H;
      scalar_t *c = pc + cur * B * H, *ig_t = pig + t * B * H;
      for (int64_t b = 0; b < B; ++b, o += 4 * H, cp += H, ig_t += H, c += H)
        cell_row(o + H, o + 2 * H, o + 3 * H, cp, ig_t, c, H);
      at::Tensor tc_out = tc.select(0, t);                                    // (B, H)
      at::tanh_out(tc_out, c_buf.select(0, cur));
      o = pg + t * B * 4 * H;
      const scalar_t *tc_t = ptc + t * B * H;
      scalar_t *h = pxh + cur * B * K + (K - H);
      for (int64_t b = 0; b < B; ++b, o += 4 * H, tc_t += H, h += K)
        output_row(o, tc_t, h, H);
    }
  });
}

// Backward time loop, processed steps last to first. dh (T, B, H) holds the direct part of ∂L/∂h_t and
// gets the recurrent part added; -> dc (T, B, H) ∂L/∂c_t, d_g (T, B, 5H): d_o, d_i, d_f, d_g, fdc of backward_row.
// w_hh (4H, H), gate order o, i, f, g; packed_hh: W_hhᵀ packed for oneDNN, or none. scales: empty, or per processed step k the factor on the carry
// into step k (0: detached); g_c_last (B, H): the gradient into the final c, if any.
void lstm_backward(at::Tensor dh, at::Tensor dc, at::Tensor d_g, at::Tensor gates, at::Tensor xh,
                   at::Tensor c_buf, at::Tensor ig, at::Tensor tc, at::Tensor w_hh, bool reverse,
                   std::vector<double> scales, std::optional<at::Tensor> g_c_last,
                   std::optional<at::Tensor> packed_hh) {
  for (auto* t : {&dh, &dc, &d_g, &gates, &xh, &c_buf, &ig, &tc, &w_hh}) check(*t, dh, "lstm_backward");
  if (g_c_last) check(*g_c_last, dh, "lstm_backward");
  const int64_t T = dh.size(0), B = dh.size(1), H = dh.size(2), K = xh.size(2);
  AT_DISPATCH_FLOATING_TYPES(dh.scalar_type(), "lstm_backward", [&] {
    scalar_t *pdh = dh.data_ptr<scalar_t>(), *pdc = dc.data_ptr<scalar_t>(), *pd = d_g.data_ptr<scalar_t>();
    const scalar_t *pg = gates.data_ptr<scalar_t>(), *pxh = xh.data_ptr<scalar_t>();
    const scalar_t *pc = c_buf.data_ptr<scalar_t>(), *pig = ig.data_ptr<scalar_t>(), *ptc = tc.data_ptr<scalar_t>();
    int64_t next = -1;                                                        // the step processed after t
    for (int64_t k = T - 1; k >= 0; --k) {
      const int64_t t = reverse ? T - 1 - k : k, cur = reverse ? t : t + 1, prv = reverse ? t + 1 : t;
      const double s = next < 0 ? 0.0 : scales.empty() ? 1.0 : scales[k + 1];
      const scalar_t* carry = nullptr;
      int64_t ldc = 5 * H;
      if (s != 0.0) {
        at::Tensor d_a = d_g.select(0, next).narrow(1, 0, 4 * H);           // ∂L/∂a_{t+1}
        if (packed_hh)
          dh.select(0, t).add_(packed_linear(d_a, *packed_hh), s);
        else
          dh.select(0, t).addmm_(d_a, w_hh, 1.0, s);                          // + s W_hhᵀ ∂L/∂a_{t+1}
        carry = pd + next * B * 5 * H + 4 * H;
      } else if (next < 0 && g_c_last) {
        carry = g_c_last->data_ptr<scalar_t>();
        ldc = H;
      }
      const scalar_t s_t = static_cast<scalar_t>(s != 0.0 ? s : 1.0);       // 1 for g_c_last
      const scalar_t *o = pg + t * B * 4 * H, *h = pxh + cur * B * K + (K - H), *cp = pc + prv * B * H;
      const scalar_t *dh_t = pdh + t * B * H, *ig_t = pig + t * B * H, *tc_t = ptc + t * B * H;
      scalar_t *dc_t = pdc + t * B * H, *d = pd + t * B * 5 * H;
      auto rows = [&](auto row) {
        for (int64_t b = 0; b < B; ++b, o += 4 * H, h += K, cp += H, dh_t += H, ig_t += H, tc_t += H,
                                        dc_t += H, d += 5 * H, carry = carry ? carry + ldc : nullptr)
          row(dh_t, carry, s_t, o, o + H, o + 2 * H, o + 3 * H, h, cp, ig_t, tc_t, dc_t, d, d + H, d + 2 * H,
              d + 3 * H, d + 4 * H, H);
      };
      if (!carry) rows(backward_row<scalar_t, Carry::none>);
      else if (s == 1.0) rows(backward_row<scalar_t, Carry::fused>);
      else rows(backward_row<scalar_t, Carry::scaled>);
      next = t;
    }
  });
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("lstm_forward", &lstm_forward);
  m.def("lstm_backward", &lstm_backward);
}

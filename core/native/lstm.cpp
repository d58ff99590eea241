// The LSTM row's time loops of core.models (_lstm_forward, _lstm_backward), compiled.
// Per step: one GEMM through ATen into the preallocated buffers, then one fused loop over B x H
// for the gate math. Same buffers, same layout, same formulas as the Python loops:
// engine gate order o, i, f, g; xh rows [1, x, h]; see core/models.py.
#include <torch/extension.h>

#include <cmath>
#include <optional>
#include <vector>

namespace {

template <typename T>
inline T sigmoid(T a) { return T(1) / (T(1) + std::exp(-a)); }

// The gate math of one batch row, H units; each array is a separate restrict argument, which is what lets
// GCC vectorise the loop (exp, tanh from glibc's libmvec). o, i, f, g: pre-activations -> the gates in
// place; cp = c_{t-1}; -> ig = i ⊙ g, c = c_t, tc = tanh c_t, h = h_t.
template <typename T>
void forward_row(T* __restrict__ o, T* __restrict__ i, T* __restrict__ f, T* __restrict__ g,
                 const T* __restrict__ cp, T* __restrict__ ig, T* __restrict__ c, T* __restrict__ tc,
                 T* __restrict__ h, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T so = sigmoid(o[j]), si = sigmoid(i[j]), sf = sigmoid(f[j]), tg = std::tanh(g[j]);
    o[j] = so; i[j] = si; f[j] = sf; g[j] = tg;
    ig[j] = si * tg;
    c[j] = ig[j] + sf * cp[j];
    tc[j] = std::tanh(c[j]);
    h[j] = so * tc[j];
  }
}

// The gradients of one batch row, H units. dh = ∂L/∂h_t (direct + recurrent part); carry: what enters
// ∂L/∂c_t from outside, times s (f_{t+1} ⊙ ∂L/∂c_{t+1}, or the gradient into the final c), or null.
// o, i, f, g, h, cp = c_{t-1}, ig, tc: what the forward stored.
// -> dc = ∂L/∂c_t; d_o, d_i, d_f, d_g = ∂L/∂(pre-activations); fdc = f ⊙ ∂L/∂c_t (the next step's carry).
template <typename T>
void backward_row(const T* __restrict__ dh, const T* __restrict__ carry, T s, const T* __restrict__ o,
                  const T* __restrict__ i, const T* __restrict__ f, const T* __restrict__ g,
                  const T* __restrict__ h, const T* __restrict__ cp, const T* __restrict__ ig,
                  const T* __restrict__ tc, T* __restrict__ dc, T* __restrict__ d_o, T* __restrict__ d_i,
                  T* __restrict__ d_f, T* __restrict__ d_g, T* __restrict__ fdc, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    T dcj = dh[j] * (o[j] - h[j] * tc[j]);                      // ∂h/∂c = o (1 - tanh² c)
    if (carry) dcj += s * carry[j];
    dc[j] = dcj;
    d_o[j] = dh[j] * (h[j] - o[j] * h[j]);                       // tanh(c) o (1 - o) = h (1 - o)
    d_i[j] = dcj * (ig[j] - i[j] * ig[j]);                       // g i (1 - i)
    d_f[j] = dcj * (cp[j] - f[j] * cp[j]) * f[j];                // c_{t-1} f (1 - f)
    d_g[j] = dcj * (i[j] - ig[j] * g[j]);                        // i (1 - g²)
    fdc[j] = dcj * f[j];
  }
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
                  at::Tensor tc, bool reverse) {
  for (auto* t : {&xh, &c_buf, &wct, &gates, &ig, &tc}) check(*t, xh, "lstm_forward");
  const int64_t T = gates.size(0), B = gates.size(1), H = tc.size(2), K = xh.size(2);
  AT_DISPATCH_FLOATING_TYPES(xh.scalar_type(), "lstm_forward", [&] {
    scalar_t *pxh = xh.data_ptr<scalar_t>(), *pc = c_buf.data_ptr<scalar_t>();
    scalar_t *pg = gates.data_ptr<scalar_t>(), *pig = ig.data_ptr<scalar_t>(), *ptc = tc.data_ptr<scalar_t>();
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = reverse ? T - 1 - k : k, cur = reverse ? t : t + 1, prv = reverse ? t + 1 : t;
      at::Tensor a = gates.select(0, t);                                      // (B, 4H)
      at::mm_out(a, xh.select(0, prv), wct);
      const scalar_t *cp = pc + prv * B * H;
      scalar_t *o = pg + t * B * 4 * H, *c = pc + cur * B * H, *h = pxh + cur * B * K + (K - H);
      scalar_t *ig_t = pig + t * B * H, *tc_t = ptc + t * B * H;
      for (int64_t b = 0; b < B; ++b, o += 4 * H, cp += H, ig_t += H, c += H, tc_t += H, h += K)
        forward_row(o, o + H, o + 2 * H, o + 3 * H, cp, ig_t, c, tc_t, h, H);
    }
  });
}

// Backward time loop, processed steps last to first. dh (T, B, H) holds the direct part of ∂L/∂h_t and
// gets the recurrent part added; -> dc (T, B, H) ∂L/∂c_t, d_g (T, B, 5H): d_o, d_i, d_f, d_g, fdc of backward_row.
// w_hh (4H, H), gate order o, i, f, g. scales: empty, or per processed step k the factor on the carry
// into step k (0: detached); g_c_last (B, H): the gradient into the final c, if any.
void lstm_backward(at::Tensor dh, at::Tensor dc, at::Tensor d_g, at::Tensor gates, at::Tensor xh,
                   at::Tensor c_buf, at::Tensor ig, at::Tensor tc, at::Tensor w_hh, bool reverse,
                   std::vector<double> scales, std::optional<at::Tensor> g_c_last) {
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
        dh.select(0, t).addmm_(d_g.select(0, next).narrow(1, 0, 4 * H), w_hh, 1.0, s);  // + s W_hhᵀ ∂L/∂a_{t+1}
        carry = pd + next * B * 5 * H + 4 * H;
      } else if (next < 0 && g_c_last) {
        carry = g_c_last->data_ptr<scalar_t>();
        ldc = H;
      }
      const scalar_t s_t = static_cast<scalar_t>(s != 0.0 ? s : 1.0);       // 1 for g_c_last
      const scalar_t *o = pg + t * B * 4 * H, *h = pxh + cur * B * K + (K - H), *cp = pc + prv * B * H;
      const scalar_t *dh_t = pdh + t * B * H, *ig_t = pig + t * B * H, *tc_t = ptc + t * B * H;
      scalar_t *dc_t = pdc + t * B * H, *d = pd + t * B * 5 * H;
      for (int64_t b = 0; b < B; ++b, o += 4 * H, h += K, cp += H, dh_t += H, ig_t += H, tc_t += H,
                                      dc_t += H, d += 5 * H, carry = carry ? carry + ldc : nullptr)
        backward_row(dh_t, carry, s_t, o, o + H, o + 2 * H, o + 3 * H, h, cp, ig_t, tc_t, dc_t, d, d + H,
                     d + 2 * H, d + 3 * H, d + 4 * H, H);
      next = t;
    }
  });
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("lstm_forward", &lstm_forward);
  m.def("lstm_backward", &lstm_backward);
}

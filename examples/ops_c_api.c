/* The ops library from C through kiln_ops.h: a fused pointwise expression, a
 * layer norm and a fused logsumexp reduction on host tensors (kDLCPU: the
 * interpreter runs them), each checked against a double-precision
 * reference; then two calls that must fail, and their messages. On a GPU
 * the same calls take kDLCUDA tensors and a CUstream. */
#include <kiln_ops.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROWS = 4, COLS = 10 };

static DLTensor tensor_f32(float *data, int ndim, int64_t *shape) {
  DLTensor t = {0};
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static int failures = 0;

static void check(const char *what, const float *got, const double *want, int n, double tolerance) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    double error = fabs(got[i] - want[i]) / (fabs(want[i]) > 1 ? fabs(want[i]) : 1);
    if (!(error <= worst)) /* NaN counts as the worst */
      worst = error;
  }
  int ok = worst <= tolerance;
  printf("  %-34s %3d elements  max rel err %.2e (tol %.0e)  %s\n", what, n, worst, tolerance, ok ? "ok" : "MISMATCH");
  failures += !ok;
}

static void expect_ok(int status, const char *call) {
  if (status != KILN_OK) {
    printf("  %s failed (%d): %s\n", call, status, kiln_ops_last_error());
    ++failures;
  }
}

int main(void) {
  printf("kiln_ops %s (ABI %d) from C\n", kiln_ops_version(), kiln_ops_abi_version());
  float x[ROWS * COLS], w[COLS], b[COLS], y[ROWS * COLS], mean[ROWS], rstd[ROWS], lse[ROWS];
  double want[ROWS * COLS];
  srand(7);
  for (int i = 0; i < ROWS * COLS; ++i)
    x[i] = (float)rand() / RAND_MAX * 4 - 2;
  for (int j = 0; j < COLS; ++j) {
    w[j] = (float)rand() / RAND_MAX + 0.5f;
    b[j] = (float)rand() / RAND_MAX - 0.5f;
  }
  int64_t shape2[2] = {ROWS, COLS}, shape1[1] = {COLS}, rows[1] = {ROWS};
  DLTensor tx = tensor_f32(x, 2, shape2), tw = tensor_f32(w, 1, shape1), tb = tensor_f32(b, 1, shape1);
  DLTensor ty = tensor_f32(y, 2, shape2), tmean = tensor_f32(mean, 1, rows), trstd = tensor_f32(rstd, 1, rows);
  DLTensor tlse = tensor_f32(lse, 1, rows);

  /* y = gelu(x * w + b), w and b broadcast along the rows. */
  for (int i = 0; i < ROWS * COLS; ++i)
    y[i] = NAN;
  const DLTensor *inputs[3] = {&tx, &tw, &tb}, *outputs[1] = {&ty};
  expect_ok(kiln_pointwise("gelu(in0 * in1 + in2)", inputs, 3, outputs, 1, NULL), "kiln_pointwise");
  for (int i = 0; i < ROWS * COLS; ++i) {
    double v = (double)x[i] * w[i % COLS] + b[i % COLS];
    want[i] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
  }
  check("pointwise gelu(x * w + b)", y, want, ROWS * COLS, 1e-6);

  /* Layer norm with weight, bias, mean and rstd. */
  expect_ok(kiln_layer_norm(&tx, &tw, &tb, 1e-5, &ty, &tmean, &trstd, NULL), "kiln_layer_norm");
  double want_mean[ROWS], want_rstd[ROWS];
  for (int r = 0; r < ROWS; ++r) {
    double m = 0, v = 0;
    for (int j = 0; j < COLS; ++j)
      m += x[r * COLS + j] / (double)COLS;
    for (int j = 0; j < COLS; ++j)
      v += (x[r * COLS + j] - m) * (x[r * COLS + j] - m) / COLS;
    want_mean[r] = m;
    want_rstd[r] = 1 / sqrt(v + 1e-5);
    for (int j = 0; j < COLS; ++j)
      want[r * COLS + j] = (x[r * COLS + j] - m) * want_rstd[r] * w[j] + b[j];
  }
  check("layer norm y", y, want, ROWS * COLS, 1e-5);
  check("layer norm mean", mean, want_mean, ROWS, 1e-5);
  check("layer norm rstd", rstd, want_rstd, ROWS, 1e-5);

  /* logsumexp of each row: a fused reduction. */
  const DLTensor *only_x[1] = {&tx};
  expect_ok(kiln_reduce_fused(KILN_REDUCE_SUM, "exp(in0)", only_x, 1, -1, "log(r)", &tlse, 1, NULL),
            "kiln_reduce_fused");
  for (int r = 0; r < ROWS; ++r) {
    double total = 0;
    for (int j = 0; j < COLS; ++j)
      total += exp(x[r * COLS + j]);
    want[r] = log(total);
  }
  check("logsumexp (fused reduction)", lse, want, ROWS, 1e-6);

  /* Mistakes come back as statuses with a reason, never a crash. */
  int status = kiln_softmax(&tx, &tmean, NULL);
  printf("  softmax into a wrong shape: status %d: %s\n", status, kiln_ops_last_error());
  failures += status != KILN_ERROR_FAILED;
  status = kiln_layer_norm(NULL, NULL, NULL, 1e-5, &ty, NULL, NULL, NULL);
  printf("  layer norm of NULL: status %d: %s\n", status, kiln_ops_last_error());
  failures += status != KILN_ERROR_INVALID_ARGUMENT;

  printf(failures ? "ops from C: %d failure(s)\n" : "ops from C: all checks passed\n", failures);
  return failures ? 1 : 0;
}

/* Saved units from C (encore/encore_workload.h): a unit captured through the C API is saved, loaded
 * in the same process under a fresh device handle, and its runs give the bytes the same step gives
 * eagerly; with an edited binary key the program is compiled from source and the bytes are the same;
 * a wrong path, a corrupt or truncated file, a file with per-call bytes, bad handles and bad options
 * are a status and a message, with *out NULL, and the handles involved stay usable. On NULL (kernels
 * compute nothing: bytes compared on OpenCL only) and, when present, the default OpenCL device. C11.
 * ENCORE_TEST_DIR: where the files are written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "encore/encore_workload.h"

#define N 256

static const char* kSource =
    "__kernel void fill_table(__global float* t) { size_t i = get_global_id(0); t[i] = 0.5f + 0.25f * (float)(i % 7); }\n"
    "__kernel void axpy(__global const float* x, __global const float* t, __global float* st, __global float* out, float k) {\n"
    "  size_t i = get_global_id(0);\n"
    "  st[i] += x[i] * t[i] * k;\n"
    "  out[i] = st[i] * 2.0f - x[i];\n"
    "}\n";
static const char* kPerCallSource =
    "__kernel void pc(__global float* y, float2 p) { size_t i = get_global_id(0); y[i] = p.x * (float)i + p.y; }\n";

static char dir[512];

static void path_of(char* buf, size_t size, const char* dev, const char* file) {
  snprintf(buf, size, "%s/saved-%s-%s", dir, dev, file);
}

/* The whole file, NUL-terminated (free it); NULL when it cannot be read. */
static char* slurp(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  char* s = NULL;
  long n;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 && (s = (char*)malloc((size_t)n + 1)) != NULL) {
    if (fread(s, 1, (size_t)n, f) != (size_t)n) {
      free(s);
      s = NULL;
    } else {
      s[n] = 0;
      if (len) *len = (size_t)n;
    }
  }
  fclose(f);
  return s;
}

static int spit(const char* path, const char* s, size_t n) {
  FILE* f = fopen(path, "wb");
  int ok;
  if (!f) return 0;
  ok = fwrite(s, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

/* The step: t <- fill_table (one-time: pruned from replay), then axpy(x, t, st, out, k). */
static encore_status step(encore_device dev, encore_kernel fill, encore_kernel axpy, encore_buffer x, encore_buffer st,
                          encore_variable k, encore_buffer* out) {
  size_t n = N;
  encore_buffer t = NULL;
  encore_arg a1[1], a2[5];
  encore_status s;
  *out = NULL;
  if ((s = encore_buffer_alloc(dev, ENCORE_F32, N, &t)) != ENCORE_OK) return s;
  a1[0] = encore_arg_buffer(t);
  if ((s = encore_launch(dev, fill, &n, NULL, 1, a1, 1)) == ENCORE_OK && (s = encore_buffer_alloc(dev, ENCORE_F32, N, out)) == ENCORE_OK &&
      (s = encore_buffer_set_name(*out, "out")) == ENCORE_OK) {
    a2[0] = encore_arg_buffer(x);
    a2[1] = encore_arg_buffer(t);
    a2[2] = encore_arg_buffer(st);
    a2[3] = encore_arg_buffer(*out);
    a2[4] = encore_arg_variable(k);
    s = encore_launch(dev, axpy, &n, NULL, 1, a2, 5);
  }
  encore_buffer_destroy(t);
  return s;
}

/* What the state after the capture gives when the step runs eagerly: out and st after each of three
 * calls (k = 0.75, 0.75, then 0.25). */
typedef struct {
  float out[3][N], st[3][N];
} Expected;

static const double kK[3] = {0.75, 0.75, 0.25};

/* Runs a loaded unit three times (binding k = 0.25 for the third) and compares with `e` (cl only). */
static void expect_runs(encore_unit lu, const Expected* e, int cl) {
  encore_buffer out = NULL, st = NULL, x = NULL, none = NULL;
  size_t inputs = 0, vars = 0, c;
  float got[N];
  EXPECT_OK(encore_unit_counts(lu, &inputs, &vars));
  EXPECT_TRUE(inputs == 1 && vars == 1);
  EXPECT_OK(encore_unit_buffer(lu, "x", &x));
  EXPECT_OK(encore_unit_buffer(lu, "st", &st));
  EXPECT_OK(encore_unit_buffer(lu, "out", &out));
  EXPECT_ERR(encore_unit_buffer(lu, "nope", &none), ENCORE_ERROR_INVALID_ARGUMENT, "no buffer named \"nope\" (its buffers: x, ");
  EXPECT_TRUE(none == NULL);
  for (c = 0; c < 3; ++c) {
    if (c == 2) EXPECT_OK(encore_unit_bind_var_float(lu, 0, kK[2]));
    EXPECT_OK(encore_unit_run(lu, NULL, 0, NULL));
    if (!cl) continue;
    EXPECT_OK(encore_buffer_copyout(out, got, sizeof got));
    EXPECT_TRUE(memcmp(got, e->out[c], sizeof got) == 0);
    EXPECT_OK(encore_buffer_copyout(st, got, sizeof got));
    EXPECT_TRUE(memcmp(got, e->st[c], sizeof got) == 0);
  }
  encore_buffer_destroy(out);
  encore_buffer_destroy(st);
  encore_buffer_destroy(x);
}

/* A unit whose float2 argument is per call (a host input): saved with per-call bytes, which a loaded
 * unit cannot take. */
static int save_per_call(encore_device dev, const char* path) {
  encore_program prog = NULL;
  encore_kernel pc = NULL;
  encore_buffer y = NULL;
  encore_capture cap = NULL;
  encore_unit u = NULL;
  float p[2] = {0.5f, 1.0f};
  size_t n = N, hslot = 0;
  encore_arg args[2];
  int ok = 0;
  if (encore_program_compile(dev, kPerCallSource, NULL, &prog) == ENCORE_OK && encore_kernel_create(prog, "pc", &pc) == ENCORE_OK && encore_buffer_alloc(dev, ENCORE_F32, N, &y) == ENCORE_OK &&
      encore_capture_begin(NULL, &cap) == ENCORE_OK) {
    encore_status s = encore_capture_add_host_input(cap, p, sizeof p, &hslot);
    args[0] = encore_arg_out(y);
    args[1] = encore_arg_bytes_from(p, sizeof p);
    if (s == ENCORE_OK) s = encore_launch(dev, pc, &n, NULL, 1, args, 2);
    if (s == ENCORE_OK) s = encore_capture_add_output(cap, y);
    if (s != ENCORE_OK) encore_capture_destroy(cap);
    else if (encore_capture_end(cap, &u) == ENCORE_OK)
      ok = encore_unit_save(u, path, "per_call") == ENCORE_OK;
  }
  if (!ok) fprintf(stderr, "save_per_call: %s\n", encore_last_error());
  encore_unit_destroy(u);
  encore_buffer_destroy(y);
  encore_kernel_destroy(pc);
  encore_program_destroy(prog);
  return ok;
}

/* The loads come after every handle of the capture is let go: a program this process still holds
 * would be reused (no compile, and not from the binary either). */
static int run_on(const char* name, encore_device dev, encore_program unused) {
  encore_program prog = NULL;
  const char *id = NULL, *dev_name = NULL;
  char file[600], keyed[600], bad[600];
  encore_kernel fill = NULL, axpy = NULL;
  encore_buffer x = NULL, st = NULL, out = NULL;
  encore_variable k = NULL;
  encore_capture cap = NULL;
  encore_unit unit = NULL, lu = NULL;
  encore_device dev2 = NULL;
  static Expected e;
  float xs[N], ss[N];
  size_t i, c, compiled = 99;
  int cl;
  REQUIRE_OK(encore_device_info(dev, &id, &dev_name));
  cl = strcmp(id, "NULL") != 0;
  path_of(file, sizeof file, cl ? "cl" : "null", "step.json");
  path_of(keyed, sizeof keyed, cl ? "cl" : "null", "keyed.json");
  path_of(bad, sizeof bad, cl ? "cl" : "null", "bad.json");
  REQUIRE_OK(encore_program_compile(dev, kSource, NULL, &prog));
  REQUIRE_OK(encore_kernel_create(prog, "fill_table", &fill));
  REQUIRE_OK(encore_kernel_create(prog, "axpy", &axpy));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, N, &x));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, N, &st));
  REQUIRE_OK(encore_buffer_set_name(x, "x"));
  REQUIRE_OK(encore_buffer_set_name(st, "st"));
  for (i = 0; i < N; ++i) xs[i] = 0.125f * (float)(i % 13), ss[i] = (float)i * 0.01f;
  REQUIRE_OK(encore_buffer_copyin(x, xs, sizeof xs));
  REQUIRE_OK(encore_buffer_copyin(st, ss, sizeof ss));
  REQUIRE_OK(encore_variable_create_f32("k", -4.0, 4.0, &k));
  REQUIRE_OK(encore_variable_bind_float(k, kK[0], NULL));

  /* capture (runs once eagerly), save, then the same step eagerly from the saved state */
  REQUIRE_OK(encore_capture_begin(NULL, &cap));
  REQUIRE_OK(encore_capture_add_input(cap, x, NULL));
  REQUIRE_OK(step(dev, fill, axpy, x, st, k, &out));
  REQUIRE_OK(encore_capture_add_output(cap, out));
  REQUIRE_OK(encore_capture_end(cap, &unit));
  REQUIRE_OK(encore_buffer_destroy(out));
  EXPECT_ERR(encore_unit_buffer(unit, "x", &out), ENCORE_ERROR_INVALID_ARGUMENT, "it names none");
  EXPECT_ERR(encore_unit_save(NULL, file, NULL), ENCORE_ERROR_INVALID_HANDLE, "unit");
  EXPECT_ERR(encore_unit_save(unit, NULL, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "path is NULL");
  EXPECT_ERR(encore_unit_save(unit, "", NULL), ENCORE_ERROR_INVALID_ARGUMENT, "path is empty");
  EXPECT_ERR(encore_unit_save(unit, "/proc/encore-no-such/step.json", NULL), ENCORE_ERROR_WORKLOAD, "cannot write");
  EXPECT_OK(encore_unit_run_and_wait(unit, NULL)); /* usable after a failed save: the state moves on */
  EXPECT_OK(encore_unit_save(unit, file, NULL));
  for (c = 0; c < 3; ++c) {
    EXPECT_OK(encore_variable_bind_float(k, kK[c], NULL));
    REQUIRE_OK(step(dev, fill, axpy, x, st, k, &out));
    EXPECT_OK(encore_buffer_copyout(out, e.out[c], sizeof e.out[c]));
    EXPECT_OK(encore_buffer_copyout(st, e.st[c], sizeof e.st[c]));
    EXPECT_OK(encore_buffer_destroy(out));
  }
  EXPECT_TRUE(save_per_call(dev, bad));
  EXPECT_OK(encore_unit_destroy(unit));
  EXPECT_OK(encore_variable_destroy(k));
  EXPECT_OK(encore_buffer_destroy(st));
  EXPECT_OK(encore_buffer_destroy(x));
  EXPECT_OK(encore_kernel_destroy(axpy));
  EXPECT_OK(encore_kernel_destroy(fill));
  EXPECT_OK(encore_program_destroy(prog));

  /* loaded under a fresh device handle: from the saved binary (none on NULL), equal to eager */
  REQUIRE_OK(encore_device_open(cl ? NULL : "NULL", &dev2));
  EXPECT_OK(encore_unit_load(dev2, file, NULL, &lu, &compiled));
  EXPECT_TRUE(lu != NULL && compiled == 0);
  if (lu) expect_runs(lu, &e, cl);
  encore_unit_destroy(lu);
  lu = NULL;
  {  /* concurrent replay (encore_unit_options.concurrent): the same bytes */
    encore_unit_options o = encore_unit_options_default();
    o.concurrent = 1;
    EXPECT_OK(encore_unit_load(dev2, file, &o, &lu, NULL));
    if (lu) expect_runs(lu, &e, cl);
    encore_unit_destroy(lu);
    lu = NULL;
  }

  /* an edited binary key: compiled from source, never the binary; the same bytes */
  if (cl) {
    size_t len = 0;
    char* json = slurp(file, &len);
    char* at = json ? strstr(json, "\"key\": \"") : NULL;
    EXPECT_TRUE(at != NULL);
    if (at) {
      const char* ins = "another device | ";
      size_t head = (size_t)(at - json) + 8, m = strlen(ins);
      char* edited = (char*)malloc(len + m + 1);
      if (edited) {
        memcpy(edited, json, head);
        memcpy(edited + head, ins, m);
        memcpy(edited + head + m, json + head, len - head + 1);
        EXPECT_TRUE(spit(keyed, edited, len + m));
        compiled = 99;
        EXPECT_OK(encore_unit_load(dev2, keyed, NULL, &lu, &compiled));
        EXPECT_TRUE(lu != NULL && compiled == 1);
        if (lu) expect_runs(lu, &e, cl);
        encore_unit_destroy(lu);
        lu = NULL;
        free(edited);
      }
    }
    free(json);
  }

  /* errors: a status, a message, *out NULL, nothing made */
  lu = (encore_unit)(uintptr_t)1; /* set to NULL by every failure below */
  EXPECT_ERR(encore_unit_load(dev2, bad, NULL, &lu, NULL), ENCORE_ERROR_WORKLOAD, "per-call bytes");
  EXPECT_TRUE(lu == NULL);
  EXPECT_ERR(encore_unit_load(dev2, "/nonexistent/encore/step.json", NULL, &lu, NULL), ENCORE_ERROR_WORKLOAD, "no such file");
  EXPECT_TRUE(lu == NULL);
  {
    const char* cut = "{\"format\": \"encore.workload/1\", \"name\": ";
    EXPECT_TRUE(spit(bad, cut, strlen(cut)));
  }
  EXPECT_ERR(encore_unit_load(dev2, bad, NULL, &lu, &compiled), ENCORE_ERROR_WORKLOAD, NULL);
  EXPECT_TRUE(lu == NULL && compiled == 0);
  EXPECT_TRUE(spit(bad, "not json at all", strlen("not json at all")));
  EXPECT_ERR(encore_unit_load(dev2, bad, NULL, &lu, NULL), ENCORE_ERROR_WORKLOAD, NULL);
  {  /* the saved file cut in half */
    size_t len = 0;
    char* json = slurp(file, &len);
    EXPECT_TRUE(json != NULL);
    if (json) {
      EXPECT_TRUE(spit(bad, json, len / 2));
      EXPECT_ERR(encore_unit_load(dev2, bad, NULL, &lu, NULL), ENCORE_ERROR_WORKLOAD, NULL);
      EXPECT_TRUE(lu == NULL);
    }
    free(json);
  }
  EXPECT_ERR(encore_unit_load(NULL, file, NULL, &lu, NULL), ENCORE_ERROR_INVALID_HANDLE, "dev");
  EXPECT_ERR(encore_unit_load((encore_device)x, file, NULL, &lu, NULL), ENCORE_ERROR_INVALID_HANDLE, NULL); /* destroyed */
  EXPECT_ERR(encore_unit_load(dev2, NULL, NULL, &lu, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "path is NULL");
  EXPECT_ERR(encore_unit_load(dev2, "", NULL, &lu, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "path is empty");
  EXPECT_ERR(encore_unit_load(dev2, file, NULL, NULL, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "out is NULL");
  {
    encore_unit_options o = encore_unit_options_default();
    o.size = 3;
    EXPECT_ERR(encore_unit_load(dev2, file, &o, &lu, NULL), ENCORE_ERROR_INVALID_ARGUMENT, "encore_unit_options.size is 3");
    EXPECT_TRUE(lu == NULL);
  }

  /* the device handle is still usable after every failure */
  EXPECT_OK(encore_unit_load(dev2, file, NULL, &lu, NULL));
  if (lu) expect_runs(lu, &e, cl);
  EXPECT_OK(encore_unit_destroy(lu));
  EXPECT_OK(encore_device_destroy(dev2));
  (void)name, (void)unused;
  return 0;
}

int main(void) {
  const char* d = getenv("ENCORE_TEST_DIR");
  snprintf(dir, sizeof dir, "%s", d && *d ? d : ".");
  return run_on_null_and_default(NULL, run_on);
}

/* encore.h's promises for the entry points of issue 28 item 7, as a table: each row is one call
 * with the status encore.h promises and a piece of the message, checked the same way for every row
 * (the status, and a message that starts with the function's name once: "encore_buffer_write: ...",
 * never "encore_buffer_write: encore_buffer_write: ..."). Rows marked `native` run from inside a
 * native callback (OpenCL only), where every call that enqueues work is refused.
 *   partial transfers   offset/count out of range, overflowing, zero, NULL pointers; inside a native
 *                       callback (were not refused: the write was recorded next to the callback)
 *   encore_arg_bytes    a stale size (ASan: a 4096-byte read of a 16-byte value), a garbage size
 *                       (was ENCORE_ERROR_UNKNOWN "cannot create std::vector larger than
 *                       max_size()"), bytes for a pointer parameter: refused before any byte is read */
#include <stdint.h>
#include <string.h>

#include "check.h"

static const char* kSource =
    "typedef struct __attribute__((packed)) { float a; char b; } packed_t;\n"
    "__kernel void scale4(__global float* x, float4 s) { size_t i = get_global_id(0); x[i] *= s.x + s.y + s.z + s.w; }\n"
    "__kernel void from_packed(__global float* x, packed_t p) { x[get_global_id(0)] = p.a + (float)p.b; }\n";

struct env {
  encore_device dev;
  encore_kernel scale4, from_packed;
  encore_buffer x; /* f32[8] */
  int is_null;
};

/* ---- the calls */

static float host8[8];
static float four[4] = {1, 0, 0, 0};
static unsigned char big[8192]; /* a stale size still reads inside this: only the check can fail */

static encore_status write_ok(struct env* e) { return encore_buffer_write(e->x, 2, host8, 4); }
static encore_status write_past_end(struct env* e) { return encore_buffer_write(e->x, 6, host8, 4); }
static encore_status write_zero(struct env* e) { return encore_buffer_write(e->x, 0, host8, 0); }
static encore_status write_overflow(struct env* e) { return encore_buffer_write(e->x, SIZE_MAX / 2, host8, 4); }
static encore_status write_null(struct env* e) { return encore_buffer_write(e->x, 0, NULL, 4); }
static encore_status write_bad_handle(struct env* e) { (void)e; return encore_buffer_write(NULL, 0, host8, 4); }
static encore_status read_ok(struct env* e) { return encore_buffer_read(e->x, 2, host8, 4); }
static encore_status read_past_end(struct env* e) { return encore_buffer_read(e->x, 5, host8, 4); }
static encore_status read_huge_count(struct env* e) { return encore_buffer_read(e->x, 0, host8, SIZE_MAX); }
static encore_status read_null(struct env* e) { return encore_buffer_read(e->x, 0, NULL, 4); }
static encore_status copyin_in_native(struct env* e) { return encore_buffer_copyin(e->x, host8, sizeof host8); }
static encore_status copyout_in_native(struct env* e) { return encore_buffer_copyout(e->x, host8, sizeof host8); }
static encore_status fill_in_native(struct env* e) { return encore_buffer_fill(e->x, &four[0], sizeof(float)); }

static encore_status launch_bytes(struct env* e, encore_kernel k, const void* data, size_t size) {
  size_t g = 8;
  encore_arg args[2];
  args[0] = encore_arg_buffer(e->x);
  args[1] = encore_arg_bytes(data, size);
  return encore_launch(e->dev, k, &g, NULL, 1, args, 2);
}
static encore_status bytes_ok(struct env* e) { return launch_bytes(e, e->scale4, four, sizeof four); }
static encore_status bytes_stale_size(struct env* e) { return launch_bytes(e, e->scale4, four, 4096); }
static encore_status bytes_short(struct env* e) { return launch_bytes(e, e->scale4, four, 12); }
static encore_status bytes_garbage_size(struct env* e) { return launch_bytes(e, e->scale4, four, SIZE_MAX - 7); }
static encore_status bytes_zero(struct env* e) { return launch_bytes(e, e->scale4, four, 0); }
/* packed_t's layout is one encore does not read (an attribute): only the bound on sizes applies */
static encore_status bytes_unknown_layout_garbage(struct env* e) { return launch_bytes(e, e->from_packed, big, SIZE_MAX); }
static encore_status bytes_unknown_layout_too_big(struct env* e) { return launch_bytes(e, e->from_packed, big, 65537); }
static encore_status bytes_for_pointer(struct env* e) {
  size_t g = 8;
  encore_arg args[2];
  args[0] = encore_arg_bytes(big, 4096);
  args[1] = encore_arg_bytes(four, sizeof four);
  return encore_launch(e->dev, e->scale4, &g, NULL, 1, args, 2);
}
static encore_status bytes_sized_stale(struct env* e) {
  encore_size g = encore_size_of(8);
  encore_arg args[2];
  args[0] = encore_arg_buffer(e->x);
  args[1] = encore_arg_bytes(four, 4096);
  return encore_launch_sized(e->dev, e->scale4, &g, NULL, 1, args, 2, "stale");
}
static encore_status open_gpu(struct env* e) {
  encore_device d = NULL;
  (void)e;
  return encore_device_open("GPU", &d);
}

struct row {
  const char* what; /* the function, as the message must start */
  encore_status (*call)(struct env*);
  encore_status want;
  const char* substr; /* NULL: any message */
  int native;         /* 1: called from inside a native callback */
};

static const struct row kRows[] = {
    {"encore_buffer_write", write_ok, ENCORE_OK, NULL, 0},
    {"encore_buffer_write", write_past_end, ENCORE_ERROR_INVALID_ARGUMENT, "elements [6, 6 + 4) do not fit", 0},
    {"encore_buffer_write", write_zero, ENCORE_ERROR_INVALID_ARGUMENT, "do not fit", 0},
    {"encore_buffer_write", write_overflow, ENCORE_ERROR_INVALID_ARGUMENT, "do not fit", 0},
    {"encore_buffer_write", write_null, ENCORE_ERROR_INVALID_ARGUMENT, "src is NULL", 0},
    {"encore_buffer_write", write_bad_handle, ENCORE_ERROR_INVALID_HANDLE, "buf", 0},
    {"encore_buffer_read", read_ok, ENCORE_OK, NULL, 0},
    {"encore_buffer_read", read_past_end, ENCORE_ERROR_INVALID_ARGUMENT, "do not fit", 0},
    {"encore_buffer_read", read_huge_count, ENCORE_ERROR_INVALID_ARGUMENT, "do not fit", 0},
    {"encore_buffer_read", read_null, ENCORE_ERROR_INVALID_ARGUMENT, "dst is NULL", 0},
    {"encore_launch", bytes_ok, ENCORE_OK, NULL, 0},
    {"encore_launch", bytes_stale_size, ENCORE_ERROR_INVALID_ARGUMENT, "expected 16 bytes (sizeof(float4) in OpenCL C), found value.bytes.size 4096", 0},
    {"encore_launch", bytes_short, ENCORE_ERROR_INVALID_ARGUMENT, "expected 16 bytes", 0},
    {"encore_launch", bytes_garbage_size, ENCORE_ERROR_INVALID_ARGUMENT, "expected 16 bytes", 0},
    {"encore_launch", bytes_zero, ENCORE_ERROR_INVALID_ARGUMENT, "value.bytes.size", 0},
    {"encore_launch", bytes_unknown_layout_garbage, ENCORE_ERROR_INVALID_ARGUMENT, "value.bytes.size: expected 1 to 65536 bytes", 0},
    {"encore_launch", bytes_unknown_layout_too_big, ENCORE_ERROR_INVALID_ARGUMENT, "found 65537", 0},
    {"encore_launch", bytes_for_pointer, ENCORE_ERROR_INVALID_ARGUMENT, "expected a buffer", 0},
    {"encore_launch_sized", bytes_sized_stale, ENCORE_ERROR_INVALID_ARGUMENT, "found value.bytes.size 4096", 0},
    {"encore_device_open", open_gpu, ENCORE_ERROR_DEVICE, "unknown device name", 0},
    /* inside a native callback: refused, naming the callback */
    {"encore_buffer_write", write_ok, ENCORE_ERROR_JIT, "native callback", 1},
    {"encore_buffer_read", read_ok, ENCORE_ERROR_JIT, "native callback", 1},
    {"encore_buffer_copyin", copyin_in_native, ENCORE_ERROR_JIT, "native callback", 1},
    {"encore_buffer_copyout", copyout_in_native, ENCORE_ERROR_JIT, "native callback", 1},
    {"encore_buffer_fill", fill_in_native, ENCORE_ERROR_JIT, "native callback", 1},
    {"encore_launch", bytes_ok, ENCORE_ERROR_JIT, "native callback", 1},
};
static const size_t kNumRows = sizeof kRows / sizeof kRows[0];

/* The row's answer against its promise. */
static void check_row(const char* dev_name, size_t i, encore_status got) {
  const struct row* r = &kRows[i];
  const char* msg = encore_last_error();
  const size_t n = strlen(r->what);
  int ok = got == r->want;
  if (ok && r->want != ENCORE_OK) {
    ok = msg && strncmp(msg, r->what, n) == 0 && msg[n] == ':' && (!r->substr || strstr(msg, r->substr));
    /* the function's name once: a repeated prefix reads as two failures */
    ok = ok && msg[n + 1] == ' ' && strncmp(msg + n + 2, r->what, n) != 0;
  }
  if (ok) {
    ++checks_passed;
    return;
  }
  ++checks_failed;
  fprintf(stderr, "%s: row %zu (%s%s): expected %s%s%s%s, got %s\n  last error: %s\n", dev_name, i, r->what, r->native ? ", in a native callback" : "",
          encore_status_name(r->want), r->substr ? " with \"" : "", r->substr ? r->substr : "", r->substr ? "\"" : "",
          encore_status_name(got), msg ? msg : "(null)");
}

static struct env* native_env;
static const char* native_dev_name;
static int native_rows_run;

static int run_native_rows(void* ud, struct _cl_command_queue* q, struct _cl_mem* const* m, size_t n) {
  size_t i;
  (void)ud, (void)q, (void)m, (void)n;
  for (i = 0; i < kNumRows; ++i)
    if (kRows[i].native) {
      check_row(native_dev_name, i, kRows[i].call(native_env));
      ++native_rows_run;
    }
  return 0;
}

static int run_on(const char* name, encore_device dev, encore_program prog) {
  struct env e;
  size_t i;
  const char* dev_name = name ? name : "default device";
  memset(&e, 0, sizeof e);
  e.dev = dev;
  e.is_null = name && strcmp(name, "NULL") == 0;
  REQUIRE_OK(encore_kernel_create(prog, "scale4", &e.scale4));
  REQUIRE_OK(encore_kernel_create(prog, "from_packed", &e.from_packed));
  REQUIRE_OK(encore_buffer_alloc(dev, ENCORE_F32, 8, &e.x));
  REQUIRE_OK(encore_buffer_copyin(e.x, host8, sizeof host8));
  for (i = 0; i < kNumRows; ++i)
    if (!kRows[i].native) check_row(dev_name, i, kRows[i].call(&e));

  if (!e.is_null) {
    /* eagerly, then captured: the refused calls must leave the unit with the callback alone */
    encore_arg in_x = encore_arg_inout(e.x);
    encore_capture cap = NULL;
    encore_unit unit = NULL;
    encore_unit_stats st;
    native_env = &e;
    native_dev_name = dev_name;
    native_rows_run = 0;
    EXPECT_OK(encore_enqueue_native(dev, run_native_rows, NULL, &in_x, 1, "rows"));
    REQUIRE_OK(encore_capture_begin(NULL, &cap));
    EXPECT_OK(encore_enqueue_native(dev, run_native_rows, NULL, &in_x, 1, "rows"));
    REQUIRE_OK(encore_capture_end(cap, &unit));
    EXPECT_OK(encore_unit_get_stats(unit, &st));
    EXPECT_TRUE(st.items == 1);
    EXPECT_OK(encore_unit_run_and_wait(unit, NULL));
    EXPECT_TRUE(native_rows_run == 3 * 6);
    EXPECT_OK(encore_unit_destroy(unit));
  }
  EXPECT_OK(encore_buffer_destroy(e.x));
  EXPECT_OK(encore_kernel_destroy(e.scale4));
  EXPECT_OK(encore_kernel_destroy(e.from_packed));
  return 0;
}

int main(void) { return run_on_null_and_default(kSource, run_on); }
